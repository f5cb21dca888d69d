import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SseStream } from '../../src/sse/stream.js';
import { ALICE, BOB, bump, fixtureReady, restPresence, seed } from '../socket/fixture.js';
import { type Chromium, chromiumAvailable, launchChromium } from '../support/chromium.js';
import { type ClientPage, openClientPage } from '../support/client-page.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { SseReader } from './reader.js';

/**
 * Server-Sent Events as a browser takes them: headless Chromium's own EventSource, on a page of another
 * origin (so CORS is what lets it read), and `presently/client`'s helper on it. Skipped, with a notice,
 * where Debian's chromium is missing (except under REQUIRE_CHROMIUM, as in CI).
 */

const available = chromiumAvailable('SSE browser tests');

/** How soon the browser reconnects once a stream ends (`retry:`). */
const RETRY_MS = 200;

interface Received {
  userId: string;
  text: string | null;
  lastEventId: string;
}

/** What the page's script puts on `window`, and what the tests read from it. */
interface PageWindow {
  presently: typeof import('../../src/client/index.js');
  EventSource: new (
    url: string,
  ) => {
    onopen: (() => void) | null;
    addEventListener(type: string, listener: (event: { data: string; lastEventId: string }) => void): void;
    close(): void;
  };
  received: Received[];
  opens: number;
  constructed: number;
  source: { close(): void };
  events: { close(): void };
}
declare const window: PageWindow;

describe.skipIf(!available)('Server-Sent Events in headless Chromium', () => {
  let h: Harness;
  let browser: Chromium;
  let client: ClientPage;
  let page: Page;

  beforeAll(async () => {
    h = await startHarness({ setup: seed, sse: { retryMs: RETRY_MS } });
    await fixtureReady(h);
    browser = await launchChromium();
    client = await openClientPage(browser.context);
    page = client.page;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    client?.close();
    await h?.close();
  });

  const received = () => page.evaluate(() => window.received);

  it('EventSource from another origin: the presence, a change, and after the stream ends what it missed', async () => {
    await page.evaluate(
      ({ base, id }) => {
        window.received = [];
        window.opens = 0;
        const source = new window.EventSource(`${base}/v1/events?ids=${id}`);
        source.onopen = () => window.opens++;
        source.addEventListener('presence', (event) => {
          const presence = JSON.parse(event.data);
          window.received.push({
            userId: presence.user_id,
            text: presence.custom_status?.text ?? null,
            lastEventId: event.lastEventId,
          });
        });
        window.source = source;
      },
      { base: h.base, id: ALICE },
    );
    const first = (await restPresence(h, ALICE)).custom_status?.text ?? null;
    await eventually(async () =>
      expect(await received()).toEqual([{ userId: ALICE, text: first, lastEventId: '' }]),
    );

    const changed = bump(h, ALICE);
    await eventually(async () => expect((await received())[1]?.text).toBe(changed));
    expect((await received())[1]?.lastEventId).toMatch(/^[0-9a-f]{12}-\d+$/);

    // The browser's stream ends (a restart, a proxy); another stream of Alice's keeps her changes' events.
    const witness = await SseReader.connect(h.base, `/v1/events?ids=${ALICE}`);
    await witness.eventCount(1);
    const [stream] = [...(h.app.sse as unknown as { streams: Set<SseStream> }).streams];
    stream?.end();
    const missed = bump(h, ALICE);
    const replayed = await witness.until((event) => event.id !== undefined);
    await eventually(async () => expect(await page.evaluate(() => window.opens)).toBe(2));
    await eventually(async () => expect(await received()).toHaveLength(3));
    // Exactly what it missed, with its id: Last-Event-ID was sent, and honoured.
    expect((await received())[2]).toEqual({ userId: ALICE, text: missed, lastEventId: replayed.id });
    witness.close();
    await page.evaluate(() => window.source.close());
    expect(client.problems).toEqual([]);
  });

  it("PresentlyClient.events() uses the browser's EventSource", async () => {
    await page.evaluate(
      ({ base, ids }) => {
        const Native = window.EventSource;
        window.constructed = 0;
        window.EventSource = class extends Native {
          constructor(url: string) {
            super(url);
            window.constructed++;
          }
        };
        window.received = [];
        const api = new window.presently.PresentlyClient({ baseUrl: base });
        window.events = api.events(ids, (presence) =>
          window.received.push({
            userId: presence.user_id,
            text: presence.custom_status?.text ?? null,
            lastEventId: '',
          }),
        );
      },
      { base: h.base, ids: [ALICE, BOB] },
    );
    await eventually(async () => expect((await received()).map((item) => item.userId)).toEqual([ALICE, BOB]));
    const text = bump(h, BOB);
    await eventually(async () => expect((await received())[2]).toMatchObject({ userId: BOB, text }));
    expect(await page.evaluate(() => window.constructed)).toBe(1);
    await page.evaluate(() => window.events.close());
    await eventually(() => expect(h.app.sse.streamCount).toBe(0));
    expect(client.problems).toEqual([]);
  });
});
