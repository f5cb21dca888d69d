import { describe, expect, it, type TestContext } from 'vitest';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { SocketClient } from '../socket/client.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { sampleValue, scrape } from '../support/prometheus.js';

/**
 * `observed_at` and `stale` through the whole service: a session Discord will not resume makes its users
 * stale on every path until the new session lists them again; resuming never does; a guild's copy of an
 * update moves nothing.
 */

const GUILD_A = '600000000000000001';
const GUILD_B = '600000000000000002';
/** In A and B: each update comes as two copies. */
const USER = '80351110224678912';
/** In A. */
const OTHER = '80351110224678913';
/** A fresh session waits for the identify rate limit (one per 5 s, with up to 1.5 s jitter). */
const REIDENTIFY_MS = 10_000;

interface Freshness {
  discord_status: string;
  observed_at: number;
  stale: boolean;
}

/**
 * Stands for STALE_AFTER_DISCONNECT_MS (30 s), how long a disconnected shard's users stay current, where a
 * test keeps a shard down: less than @discordjs/ws takes to resume (it waits 500 ms before reconnecting).
 */
const STALE_AFTER_MS = 300;

async function start(
  { onTestFinished }: TestContext,
  gateway: { staleAfterMs?: number } = {},
): Promise<Harness> {
  const h = await startHarness({
    gateway,
    // A fresh session lists its guilds again at once, not past Discord's 30 s window.
    simulator: { memberRequestCooldownMs: 1_000 },
    setup: (sim) => {
      sim.createGuild({
        id: GUILD_A,
        name: 'A',
        members: [
          { user: { id: USER, username: 'user' }, presence: { status: 'online' } },
          { user: { id: OTHER, username: 'other' }, presence: { status: 'dnd' } },
        ],
      });
      sim.createGuild({
        id: GUILD_B,
        name: 'B',
        members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
      });
    },
  });
  onTestFinished(() => h.close());
  await h.simulator.waitForReady();
  await eventually(() => expect(h.app.registry.size).toBe(2));
  // The listings answered: no request of the client's is in flight when the test breaks the session.
  await eventually(() => expect(h.simulator.memberRequests.length).toBeGreaterThanOrEqual(2));
  await h.app.registry.allRendered();
  return h;
}

async function read(h: Harness, id: string): Promise<Freshness & { etag: string | null }> {
  const response = await fetch(`${h.base}/v1/users/${id}`);
  expect(response.status).toBe(200);
  const { data } = (await response.json()) as { data: Freshness };
  return { ...data, etag: response.headers.get('etag') };
}

function updatesOf(socket: SocketClient, id: string): Freshness[] {
  return socket.frames
    .filter((frame) => frame.t === 'PRESENCE_UPDATE' && (frame.d as { user_id: string }).user_id === id)
    .map((frame) => frame.d as Freshness);
}

async function card(h: Harness, id: string): Promise<string> {
  const response = await fetch(`${h.base}/v1/users/${id}/card.svg`);
  expect(response.status).toBe(200);
  return response.text();
}

describe('a session Discord will not resume', () => {
  it('makes its users stale on REST, the socket, the card and the metrics, until listed again', async (context) => {
    const h = await start(context);
    const before = await read(h, OTHER);
    expect(before).toMatchObject({ discord_status: 'dnd', stale: false });
    expect(await card(h, OTHER)).toContain('Do Not Disturb');
    const socket = await SocketClient.connect(h.base);
    await socket.subscribe({ subscribe_to_ids: [USER, OTHER] });

    h.simulator.faults.invalidateSession(false);
    await eventually(async () => expect((await read(h, OTHER)).stale).toBe(true));
    const stale = await read(h, OTHER);
    expect(stale).toMatchObject({ discord_status: 'dnd', observed_at: before.observed_at });
    expect(stale.etag).not.toBe(before.etag);
    await eventually(() => expect(updatesOf(socket, OTHER).at(-1)?.stale).toBe(true));
    const drawn = await card(h, OTHER);
    expect(drawn).toMatch(/Status unknown since (just now|\d+ min ago)/);
    expect(drawn).not.toContain('Do Not Disturb');
    const metrics = await scrape(h.base);
    expect(sampleValue(metrics, 'presently_stale_users')).toBe(2);
    expect(sampleValue(metrics, 'presently_gateway_shard_up', { shard: '0' })).toBe(0);

    await eventually(() => expect(h.simulator.identifyCount).toBe(2), REIDENTIFY_MS);
    await eventually(async () => expect((await read(h, OTHER)).stale).toBe(false));
    const fresh = await read(h, OTHER);
    expect(fresh.observed_at).toBeGreaterThan(before.observed_at);
    await eventually(() => expect(updatesOf(socket, OTHER).at(-1)).toMatchObject({ stale: false }));
    expect(updatesOf(socket, OTHER).map((update) => update.stale)).toEqual([true, false]);
    await eventually(async () => expect((await read(h, USER)).stale).toBe(false));
    expect(await card(h, OTHER)).toContain('Do Not Disturb');
    expect(h.app.registry.staleCount).toBe(0);
    await socket.close();
  }, 20_000);
});

describe('a session resumed', () => {
  it('makes nothing stale, however the connection broke', async (context) => {
    const h = await start(context);
    const before = await read(h, OTHER);
    const from = h.changes.length;
    const breaks = [
      () => h.simulator.faults.dropConnection(),
      () => h.simulator.faults.closeConnection(4000),
      () => h.simulator.faults.invalidateSession(true),
      () => h.simulator.faults.requestReconnect(),
    ];
    for (const [n, broken] of breaks.entries()) {
      broken();
      await eventually(() => expect(h.simulator.resumeCount).toBe(n + 1));
    }
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.changes.slice(from)).toEqual([]);
    expect(await read(h, OTHER)).toEqual(before);
    expect(h.app.registry.staleCount).toBe(0);
  });
});

describe('a shard disconnected beyond a resume', () => {
  it('makes its users stale, and current again at once when the session resumes', async (context) => {
    const h = await start(context, { staleAfterMs: STALE_AFTER_MS });
    const before = await read(h, OTHER);
    const socket = await SocketClient.connect(h.base);
    await socket.subscribe({ subscribe_to_ids: [OTHER] });

    // A resumable close: @discordjs/ws waits 500 ms before it reconnects, longer than the stand-in above.
    h.simulator.faults.closeConnection(4000);
    await eventually(() => expect(updatesOf(socket, OTHER).at(-1)?.stale).toBe(true));
    await eventually(() => expect(h.simulator.resumeCount).toBe(1));
    await eventually(() => expect(updatesOf(socket, OTHER).at(-1)?.stale).toBe(false));
    expect(updatesOf(socket, OTHER).map((update) => update.stale)).toEqual([true, false]);
    // Nothing was missed: what was held stands, observed when it was.
    expect(await read(h, OTHER)).toMatchObject({
      discord_status: 'dnd',
      observed_at: before.observed_at,
      stale: false,
    });
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.app.registry.staleCount).toBe(0);
    await socket.close();
  }, 20_000);

  it('while Discord cannot be reached: stale on every path, until the new session lists them', async (context) => {
    const h = await start(context, { staleAfterMs: STALE_AFTER_MS });
    const before = await read(h, OTHER);
    h.simulator.faults.gatewayDown();
    await eventually(async () => expect((await read(h, OTHER)).stale).toBe(true));
    expect(await read(h, OTHER)).toMatchObject({ discord_status: 'dnd', observed_at: before.observed_at });
    expect(await card(h, OTHER)).not.toContain('Do Not Disturb');
    // Down for as long as it takes the client to try again and be refused.
    await eventually(() => expect(h.simulator.refusedConnections).toBeGreaterThanOrEqual(1), 10_000);
    h.simulator.setPresence(OTHER, { status: 'idle' });
    h.simulator.faults.gatewayBack();

    await eventually(async () => expect((await read(h, OTHER)).stale).toBe(false), REIDENTIFY_MS);
    const fresh = await read(h, OTHER);
    expect(fresh).toMatchObject({ discord_status: 'idle' });
    expect(fresh.observed_at).toBeGreaterThan(before.observed_at);
    await eventually(() => expect(h.app.registry.staleCount).toBe(0));
  }, 30_000);
});

describe('observed_at', () => {
  it("moves with a change, not with another guild's copy of it", async (context) => {
    const h = await start(context);
    const from = h.changes.length;
    const songStart = 1_700_000_000_000;
    const playing = {
      status: 'online' as const,
      activities: [
        spotifyActivity({
          song: 'Song',
          artists: ['Artist'],
          album: 'Album',
          imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
          trackId: 'track'.padEnd(22, 'x'),
          start: songStart,
          end: songStart + 200_000,
          userId: USER,
        }),
      ],
    };
    // Two copies, one per guild, their timestamps apart by up to 400 ms as Discord's are.
    expect(h.simulator.setPresence(USER, playing, { jitterMs: 400 })).toBe(2);
    // Sent after both copies, on the same connection: once it is read, so are they.
    h.simulator.setPresence(OTHER, { status: 'idle' });
    await eventually(async () => expect((await read(h, OTHER)).discord_status).toBe('idle'));

    const changes = h.changes.slice(from).filter((change) => change.userId === USER);
    expect(changes).toHaveLength(1);
    expect((await read(h, USER)).observed_at).toBe(changes[0]?.at);
  });
});
