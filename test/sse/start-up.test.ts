import { describe, expect, it, type TestContext } from 'vitest';
import type { DiscordSimulator } from '../../src/simulator/index.js';
import { SocketClient } from '../socket/client.js';
import { chromiumAvailable, launchChromium } from '../support/chromium.js';
import { openClientPage } from '../support/client-page.js';
import { eventually, within } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { SseReader } from './reader.js';
import { one } from './service.js';

/**
 * A single user's event stream while the service starts: before a guild has been delivered and listed its
 * members are not monitored yet, and a browser's EventSource gives up for good on a 404, so such a
 * stream opens and waits. Once every member is known, a stream of a user still not monitored ends, and
 * the reconnect is answered 404 as ever.
 */

const EARLY_GUILD = '700000000000000001';
/** Unavailable when the service starts: delivered when the test says. */
const LATE_GUILD = '700000000000000002';
const EARLY = '80351110224678912';
/** Only in the late guild. */
const LATE = '80351110224678913';
/** Shares no guild with the bot. */
const NOBODY = '123456789012345678';

function seed(sim: DiscordSimulator): void {
  sim.createGuild({
    id: EARLY_GUILD,
    name: 'Early',
    members: [{ user: { id: EARLY, username: 'early' }, presence: { status: 'online' } }],
  });
  sim.createGuild({
    id: LATE_GUILD,
    name: 'Late',
    members: [{ user: { id: LATE, username: 'late' }, presence: { status: 'online' } }],
  });
}

/** The service started with the late guild unavailable: its start is under way until the guild is delivered. */
async function startedBeforeLateGuild(
  onTestFinished: TestContext['onTestFinished'],
  retryMs?: number,
): Promise<Harness> {
  const h = await startHarness({
    setup: (sim) => {
      seed(sim);
      sim.deleteGuild(LATE_GUILD, { unavailable: true });
    },
    ...(retryMs === undefined ? {} : { sse: { retryMs } }),
  });
  onTestFinished(() => h.close());
  await eventually(() => expect(h.app.registry.isMonitored(EARLY)).toBe(true));
  expect(await readyStatus(h)).toBe(503);
  return h;
}

async function readyStatus(h: Harness): Promise<number> {
  const response = await fetch(`${h.base}/v1/ready`);
  await response.body?.cancel();
  return response.status;
}

/** Opens a stream, closed after the test, and waits for its opening (ended by the `id:` alone). */
async function opened(h: Harness, path: string, onTestFinished: TestContext['onTestFinished']) {
  const reader = await SseReader.connect(h.base, path);
  onTestFinished(() => reader.close());
  if (reader.status === 200) await reader.waitFor(() => reader.lastEventId !== '', 'the opening');
  return reader;
}

function errorCodeOf(reader: SseReader): string | undefined {
  return (JSON.parse(reader.body) as { error?: { code: string } }).error?.code;
}

describe('a single user’s event stream while the service starts', () => {
  it('of a member whose guild is not listed yet waits for them; of a user who is no member, ends once every member is known, and is then refused 404', async ({
    onTestFinished,
  }: TestContext) => {
    const h = await startedBeforeLateGuild(onTestFinished);
    const late = await opened(h, one(LATE), onTestFinished);
    expect(late.status).toBe(200);
    expect(late.headers['content-type']).toBe('text/event-stream');
    expect(late.retry).toBe(2_000);
    expect(late.events).toEqual([]);
    const nobody = await opened(h, one(NOBODY), onTestFinished);
    expect(nobody.status).toBe(200);
    expect(nobody.events).toEqual([]);
    // The socket's subscribe_to_id has no such trouble: an empty INIT_STATE, then the user as they come.
    const socket = await SocketClient.connect(h.base);
    onTestFinished(() => void socket.close());
    expect((await socket.subscribe({ subscribe_to_id: LATE })).d).toEqual({});

    h.simulator.restoreGuild(LATE_GUILD);
    const [first] = await late.eventCount(1);
    expect(first?.event).toBe('presence');
    expect(JSON.parse(first?.data ?? '{}')).toMatchObject({ user_id: LATE, discord_status: 'online' });
    const update = await socket.until((frame) => frame.t === 'PRESENCE_UPDATE');
    expect(update.at(-1)?.d).toMatchObject({ user_id: LATE, discord_status: 'online' });

    await within(nobody.closed, 10_000, 'the end of the stream of a user who is no member');
    expect(nobody.events).toEqual([]);
    await eventually(async () => expect(await readyStatus(h)).toBe(200));
    const again = await SseReader.connect(h.base, one(NOBODY), { 'last-event-id': nobody.lastEventId });
    onTestFinished(() => again.close());
    expect(again.status).toBe(404);
    await eventually(() => expect(errorCodeOf(again)).toBe('user_not_monitored'));

    // The member's stream goes on.
    h.simulator.setPresence(LATE, { status: 'idle' });
    await late.until((event) => JSON.parse(event.data).discord_status === 'idle', 1);
    expect(late.ended).toBe(false);
    await eventually(() => expect(h.app.sse.streamCount).toBe(1));
  }, 30_000);

  it('once every member is known, a user who is no member is refused 404 at once, even while a fresh session lists every guild again', async ({
    onTestFinished,
  }: TestContext) => {
    const h = await startHarness({ simulator: { memberRequestCooldownMs: 0 }, setup: seed });
    onTestFinished(() => h.close());
    await eventually(async () => expect(await readyStatus(h)).toBe(200));
    const refused = await opened(h, one(NOBODY), onTestFinished);
    expect(refused.status).toBe(404);
    await eventually(() => expect(errorCodeOf(refused)).toBe('user_not_monitored'));

    h.simulator.faults.invalidateSession(false);
    await eventually(async () => expect(await readyStatus(h)).toBe(503));
    const meanwhile = await opened(h, one(NOBODY), onTestFinished);
    expect(meanwhile.status).toBe(404);
    expect(h.app.sse.streamCount).toBe(0);
  }, 30_000);
});

/** How soon the browser reconnects once a stream ends (`retry:`). */
const RETRY_MS = 200;

/** What the page's script uses and leaves on `window`. */
interface PageWindow {
  EventSource: new (
    url: string,
  ) => {
    readonly readyState: number;
    addEventListener(type: string, listener: (event: { data: string }) => void): void;
    close(): void;
  };
  streams: Record<string, InstanceType<PageWindow['EventSource']>>;
  received: Record<string, string[]>;
}
declare const window: PageWindow;
/** EventSource.CLOSED: it gave up and will not reconnect. */
const CLOSED = 2;
const OPEN = 1;

describe.skipIf(!chromiumAvailable('SSE start-up browser test'))('in headless Chromium', () => {
  it('an EventSource of a member opened while the service starts gets their presence; one of a user who is no member gives up once every member is known', async ({
    onTestFinished,
  }: TestContext) => {
    const h = await startedBeforeLateGuild(onTestFinished, RETRY_MS);
    const browser = await launchChromium();
    onTestFinished(() => browser.close());
    // The reconnect's 404 is what the browser reports, as expected.
    const client = await openClientPage(browser.context, '404');
    onTestFinished(() => client.close());
    await client.page.evaluate(
      ({ base, ids }) => {
        window.streams = {};
        window.received = {};
        for (const id of ids) {
          window.received[id] = [];
          const source = new window.EventSource(`${base}/v1/users/${id}/events`);
          source.addEventListener('presence', (event) => window.received[id]?.push(event.data));
          window.streams[id] = source;
        }
      },
      { base: h.base, ids: [LATE, NOBODY] },
    );
    const stateOf = (id: string) => client.page.evaluate((of) => window.streams[of]?.readyState, id);
    await eventually(async () => expect(await stateOf(NOBODY)).toBe(OPEN));
    expect(await stateOf(LATE)).toBe(OPEN);

    h.simulator.restoreGuild(LATE_GUILD);
    const received = () => client.page.evaluate(() => window.received);
    await eventually(async () => expect((await received())[LATE]).toHaveLength(1));
    expect(JSON.parse((await received())[LATE]?.[0] ?? '{}')).toMatchObject({ user_id: LATE });
    await eventually(async () => expect(await stateOf(NOBODY)).toBe(CLOSED), 10_000);
    expect(await stateOf(LATE)).toBe(OPEN);
    expect((await received())[NOBODY]).toEqual([]);
    expect(client.problems).toEqual([]);
  }, 60_000);
});
