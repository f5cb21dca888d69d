import { Ajv } from 'ajv';
import { type GatewayActivity, GatewayIntentBits } from 'discord-api-types/v10';
import pino from 'pino';
import { describe, expect, it, type TestContext, vi } from 'vitest';
import { DiscordGateway } from '../../src/discord/gateway.js';
import { presenceSchema } from '../../src/http/schemas/presence.js';
import type { PresenceChange } from '../../src/presence/registry/registry.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import type { MemberInput, PresenceInput } from '../../src/simulator/index.js';
import { eventually, within } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * The gateway session's life through the real client (@discordjs/ws) against the simulated Discord: dropped
 * connections, sessions Discord will not resume, closes that must not be retried. What the service then
 * serves is read back over HTTP.
 */

const GUILD_A = '600000000000000001';
const GUILD_B = '600000000000000002';
const GUILD_C = '600000000000000003';
/** In A and B. */
const USER = '80351110224678912';
/** In A. */
const OTHER = '80351110224678913';
/** In A; leaves while the service is not looking. */
const LEAVER = '80351110224678914';
/** Only in C, a guild the bot leaves while the service is not looking. */
const GONE = '80351110224678915';
/** Only in B, the guild created last: its updates arrive after every copy sent before them. */
const SENTINEL = '80351110224678916';
/** Joins A later. */
const NEWCOMER = '80351110224678917';
const JITTER = { jitterMs: 400 };
/** A fresh session waits for the identify rate limit (one per 5 s, with up to 1.5 s jitter). */
const REIDENTIFY_MS = 10_000;
/** The simulator's HELLO interval in the harness. */
const HEARTBEAT_MS = 1_000;
/**
 * Discord's window for listing a guild again, shortened: a fresh session here lists its guilds again after
 * the identify wait, past it (Discord's own limit has tests of its own).
 */
const MEMBER_LISTING_WINDOW_MS = 1_000;

const member = (id: string, username: string, presence?: PresenceInput): MemberInput => ({
  user: { id, username },
  ...(presence ? { presence } : {}),
});

function song(n: number): GatewayActivity {
  const start = 1_700_000_000_000 + n * 300_000;
  return spotifyActivity({
    song: `Song ${n}`,
    artists: ['Artist'],
    album: 'Album',
    imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
    trackId: `track${n}`.padEnd(22, 'x'),
    start,
    end: start + 200_000,
    userId: USER,
  });
}

/**
 * A harness closed when the test ends. Concurrent tests must register that through their own context:
 * the global onTestFinished cannot tell which of them is running.
 */
async function start({ onTestFinished }: TestContext): Promise<Harness> {
  const h = await startHarness({
    simulator: { memberRequestCooldownMs: MEMBER_LISTING_WINDOW_MS },
    setup: (sim) => {
      sim.createGuild({
        id: GUILD_A,
        name: 'A',
        members: [
          member(USER, 'user', { status: 'online' }),
          member(OTHER, 'other', { status: 'online' }),
          member(LEAVER, 'leaver', { status: 'online' }),
        ],
      });
      sim.createGuild({ id: GUILD_C, name: 'C', members: [member(GONE, 'gone', { status: 'idle' })] });
      sim.createGuild({
        id: GUILD_B,
        name: 'B',
        members: [
          member(USER, 'user', { status: 'online' }),
          member(SENTINEL, 'sentinel', { status: 'online' }),
        ],
      });
    },
  });
  onTestFinished(() => h.close());
  await eventually(() => expect(h.app.registry.size).toBe(5));
  await h.simulator.waitForReady();
  // The three guilds' member listings asked for and answered: no request of the client's is in flight
  // when a test breaks the session (one sent on an invalidated session would be refused with 4003).
  await eventually(() => expect(h.simulator.memberRequests.length).toBeGreaterThanOrEqual(3));
  await settle(h);
  return h;
}

let beats = 0;
/** Once this returns, everything the simulator sent before it has been handled. */
async function settle(h: Harness): Promise<void> {
  const beat = ++beats;
  h.simulator.setPresence(SENTINEL, { status: 'online', activities: [song(beat)] });
  await eventually(() => expect(h.app.registry.get(SENTINEL)?.presence.spotify?.song).toBe(`Song ${beat}`));
}

/** The changes since `from`, sentinel aside, in a form a failure message shows well. */
function summary(h: Harness, from: number): string[] {
  return h.changes
    .slice(from)
    .filter((change) => change.userId !== SENTINEL)
    .map((change: PresenceChange) => {
      const presence = change.kind === 'unmonitored' ? null : change.current.presence;
      const what = presence
        ? ` ${presence.discord_status} ${presence.spotify?.song ?? '-'}${presence.stale ? ' stale' : ''}`
        : '';
      return `${change.kind} ${change.userId}${what}`;
    });
}

async function statusOf(h: Harness, id: string): Promise<{ status: number; data?: Record<string, unknown> }> {
  const response = await fetch(`${h.base}/v1/users/${id}`);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const body = (await response.json()) as { data?: Record<string, unknown>; error?: { code: string } };
  if (response.status === 404) expect(body.error?.code).toBe('user_not_monitored');
  return { status: response.status, ...(body.data ? { data: body.data } : {}) };
}

const validPresence = new Ajv({ allowUnionTypes: true }).compile(presenceSchema);

interface Read {
  id: string;
  status: number;
  /** The answer was the contract's presence object. */
  valid: boolean;
  /** What the test said was going on when the read was sent. */
  phase: string;
  /** Whether the service's gateway client had a live session then. */
  ready: boolean;
}

/**
 * Reads presences over HTTP back to back until stopped, as the sites polling the API do, while the test
 * breaks the gateway connection. Each read notes the phase the test set and whether the gateway was ready.
 */
function pollReads(h: Harness, ids: string[]) {
  const reads: Read[] = [];
  const watch = { phase: 'before', reads, stop: async (): Promise<Read[]> => reads };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const id of ids) {
        const phase = watch.phase;
        const ready = h.app.gateway.ready;
        const response = await fetch(`${h.base}/v1/users/${id}`);
        const body = (await response.json().catch(() => ({}))) as { data?: unknown };
        reads.push({ id, status: response.status, valid: validPresence(body.data), phase, ready });
      }
    }
  })();
  watch.stop = async () => {
    stopped = true;
    await loop;
    return reads;
  };
  return watch;
}

/** Every read answered with a presence; and some were sent while the fault lasted (phase "fault"). */
function expectAnsweredThroughout(reads: Read[]): void {
  expect(reads.filter((read) => read.phase === 'fault').length).toBeGreaterThan(0);
  expect(reads.filter((read) => read.status !== 200 || !read.valid)).toEqual([]);
}

describe('a dropped connection', () => {
  it('resumes the session: what Discord sent meanwhile is replayed, nothing lost or doubled', async (context) => {
    const h = await start(context);
    expect(h.simulator.identifyCount).toBe(1);
    const from = h.changes.length;

    h.simulator.faults.dropConnection();
    // Sent before the client can notice the drop: Discord keeps them for the session, to replay on RESUME.
    h.simulator.setPresence(USER, { status: 'idle', activities: [song(1)] }, JITTER);
    h.simulator.setPresence(USER, { status: 'idle', activities: [song(2)] }, JITTER);
    h.simulator.setPresence(OTHER, { status: 'dnd' });
    h.simulator.addMember(GUILD_A, member(NEWCOMER, 'newcomer', { status: 'online' }));
    h.simulator.removeMember(GUILD_A, LEAVER);

    await eventually(() => expect(h.simulator.resumeCount).toBe(1));
    await settle(h);
    expect(summary(h, from)).toEqual([
      `updated ${USER} idle Song 1`,
      `updated ${USER} idle Song 2`,
      `updated ${OTHER} dnd -`,
      `monitored ${NEWCOMER} offline -`,
      `updated ${NEWCOMER} online -`,
      `unmonitored ${LEAVER}`,
    ]);
    expect(h.simulator.identifyCount).toBe(1);

    expect(await statusOf(h, USER)).toMatchObject({
      status: 200,
      data: { discord_status: 'idle', spotify: { song: 'Song 2' } },
    });
    expect(await statusOf(h, OTHER)).toMatchObject({ status: 200, data: { discord_status: 'dnd' } });
    expect(await statusOf(h, NEWCOMER)).toMatchObject({ status: 200, data: { discord_status: 'online' } });
    expect(await statusOf(h, LEAVER)).toEqual({ status: 404 });
  });

  it('cut in the middle of a dispatch (no close frame): resumes from the last whole one, no gap, reads answered', async (context) => {
    const h = await start(context);
    const watch = pollReads(h, [USER, OTHER]);
    const from = h.changes.length;

    for (let n = 1; n <= 10; n++)
      h.simulator.setPresence(USER, { status: 'online', activities: [song(n)] }, JITTER);
    // The next dispatch (Song 11's first guild copy) arrives half-written, then the TCP socket is gone.
    h.simulator.faults.dropConnectionMidFrame();
    watch.phase = 'fault';
    for (let n = 11; n <= 20; n++)
      h.simulator.setPresence(USER, { status: 'online', activities: [song(n)] }, JITTER);
    await eventually(() => expect(h.simulator.resumeCount).toBe(1));
    watch.phase = 'after';
    await settle(h);
    const reads = await watch.stop();

    // Every song once, in order: the half frame was thrown away and replayed whole, nothing twice.
    const songs = Array.from({ length: 20 }, (_, i) => `updated ${USER} online Song ${i + 1}`);
    expect(summary(h, from)).toEqual(songs);
    expect(h.simulator.identifyCount).toBe(1);
    expect(await statusOf(h, USER)).toMatchObject({ status: 200, data: { spotify: { song: 'Song 20' } } });
    expectAnsweredThroughout(reads);
    // Some of those reads were answered while the gateway had no session at all.
    expect(reads.some((read) => !read.ready)).toBe(true);
  });

  it('resumes when Discord asks to reconnect (op 7), with updates racing the reconnect', async (context) => {
    const h = await start(context);
    const from = h.changes.length;

    h.simulator.faults.requestReconnect();
    // Some of these may reach the old socket, the rest the replay: each must count exactly once.
    for (let n = 1; n <= 5; n++)
      h.simulator.setPresence(USER, { status: 'online', activities: [song(n)] }, JITTER);
    await eventually(() => expect(h.simulator.resumeCount).toBe(1));
    for (let n = 6; n <= 8; n++)
      h.simulator.setPresence(USER, { status: 'online', activities: [song(n)] }, JITTER);
    await settle(h);

    expect(summary(h, from)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((n) => `updated ${USER} online Song ${n}`));
    expect(h.simulator.identifyCount).toBe(1);
    expect(await statusOf(h, USER)).toMatchObject({ status: 200, data: { spotify: { song: 'Song 8' } } });
  });
});

describe('a session Discord invalidates but lets resume', () => {
  it('INVALID_SESSION (resumable): resumes the session, replaying what was sent meanwhile, no re-identify', async (context) => {
    const h = await start(context);
    const from = h.changes.length;

    h.simulator.faults.invalidateSession(true);
    // The session has no connection until the client resumes: these wait in its replay buffer.
    h.simulator.setPresence(USER, { status: 'dnd', activities: [song(1)] }, JITTER);
    h.simulator.setPresence(OTHER, { status: 'idle' });
    h.simulator.removeMember(GUILD_A, LEAVER);
    // Asked while the session is invalid: answered from what the service knows.
    expect(await statusOf(h, USER)).toMatchObject({ status: 200, data: { discord_user: { id: USER } } });

    await eventually(() => expect(h.simulator.resumeCount).toBe(1));
    await settle(h);
    expect(summary(h, from)).toEqual([
      `updated ${USER} dnd Song 1`,
      `updated ${OTHER} idle -`,
      `unmonitored ${LEAVER}`,
    ]);
    expect(h.simulator.identifyCount).toBe(1);
    expect(await statusOf(h, USER)).toMatchObject({ status: 200, data: { discord_status: 'dnd' } });
    expect(await statusOf(h, LEAVER)).toEqual({ status: 404 });
  });
});

describe('a zombie connection', () => {
  it('heartbeats go unanswered and nothing arrives: detected, replaced, what it swallowed replayed', async (context) => {
    const h = await start(context);
    const watch = pollReads(h, [USER, OTHER]);
    const from = h.changes.length;

    // Each change the service takes, with how many sessions had been resumed by then.
    const resumedBefore: number[] = [];
    h.app.registry.onChange((change) => {
      if (change.userId === USER) resumedBefore.push(h.simulator.resumeCount);
    });

    h.simulator.faults.zombifyConnection();
    watch.phase = 'fault';
    for (let n = 1; n <= 5; n++)
      h.simulator.setPresence(USER, { status: 'online', activities: [song(n)] }, JITTER);
    // The dead connection swallows them; the service still answers with what it knew (read while the
    // zombie lasts: nothing has been resumed yet).
    expect(await statusOf(h, USER)).toMatchObject({ status: 200, data: { spotify: null } });
    expect(h.simulator.resumeCount).toBe(0);

    // @discordjs/ws closes a connection whose last heartbeat was not acknowledged when the next is due
    // (within two intervals, 1 s here), then resumes on a new one.
    await eventually(() => expect(h.simulator.resumeCount).toBe(1), 3 * HEARTBEAT_MS + 2_000);
    watch.phase = 'after';
    await settle(h);
    const reads = await watch.stop();

    expect(summary(h, from)).toEqual([1, 2, 3, 4, 5].map((n) => `updated ${USER} online Song ${n}`));
    // Not one of them came through the zombie: all arrived in the replay of the resumed session.
    expect(resumedBefore).toEqual([1, 1, 1, 1, 1]);
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.simulator.connectedShards).toEqual([0]);
    expectAnsweredThroughout(reads);
  });
});

// Both wait out the identify rate limit, so they run side by side.
describe.concurrent('a session Discord will not resume', () => {
  it('INVALID_SESSION (not resumable): identifies afresh and rebuilds, leaving no stale user', async (context) => {
    const h = await start(context);
    const from = h.changes.length;

    h.simulator.faults.invalidateSession(false);
    // The session is gone: none of this reaches the service but through the fresh session's state.
    h.simulator.removeMember(GUILD_A, LEAVER);
    h.simulator.removeMember(GUILD_A, USER); // still in B
    h.simulator.deleteGuild(GUILD_C);
    h.simulator.setPresence(OTHER, { status: 'dnd', activities: [song(1)] });
    h.simulator.addMember(GUILD_A, member(NEWCOMER, 'newcomer', { status: 'online' }));

    await eventually(() => expect(h.simulator.identifyCount).toBe(2), REIDENTIFY_MS);
    await eventually(() => expect(h.app.registry.isMonitored(LEAVER)).toBe(false));
    await settle(h);

    expect(await statusOf(h, LEAVER)).toEqual({ status: 404 });
    expect(await statusOf(h, GONE)).toEqual({ status: 404 });
    expect(await statusOf(h, USER)).toMatchObject({ status: 200, data: { discord_status: 'online' } });
    expect(await statusOf(h, OTHER)).toMatchObject({
      status: 200,
      data: { discord_status: 'dnd', spotify: { song: 'Song 1' } },
    });
    expect(await statusOf(h, NEWCOMER)).toMatchObject({ status: 200, data: { discord_status: 'online' } });
    expect([...h.app.registry.snapshots()].map(([id]) => id).sort()).toEqual(
      [USER, OTHER, SENTINEL, NEWCOMER].sort(),
    );
    // Users present all along do not flap (unmonitored, then monitored again) while the state is rebuilt:
    // they are stale from the lost session until the new one lists them.
    expect(summary(h, from).sort()).toEqual(
      [
        `updated ${USER} online - stale`,
        `updated ${OTHER} online - stale`,
        `updated ${LEAVER} online - stale`,
        `updated ${GONE} idle - stale`,
        `monitored ${NEWCOMER} online -`,
        `unmonitored ${GONE}`,
        `unmonitored ${LEAVER}`,
        `updated ${OTHER} dnd Song 1`,
        `updated ${USER} online -`,
      ].sort(),
    );
    expect(h.simulator.resumeCount).toBe(0);
  });

  it('a session that timed out (4009): RESUME is refused, so the client identifies afresh', async (context) => {
    const h = await start(context);
    h.simulator.faults.closeConnection(4009);
    h.simulator.removeMember(GUILD_A, LEAVER);

    await eventually(() => expect(h.simulator.identifyCount).toBe(2), REIDENTIFY_MS);
    await eventually(() => expect(h.app.registry.isMonitored(LEAVER)).toBe(false));
    expect(await statusOf(h, LEAVER)).toEqual({ status: 404 });
    expect(await statusOf(h, USER)).toMatchObject({ status: 200 });
    expect(h.simulator.resumeCount).toBe(0);
  });
});

/**
 * The service's loop that connects to Discord, retrying with backoff until a session starts: its promise
 * settles once the loop will try no more. Watched on every gateway made in this file.
 */
const connectLoops = vi.spyOn(
  DiscordGateway.prototype as unknown as { connectWithRetry(): Promise<void> },
  'connectWithRetry',
);

describe.concurrent('closes that must not be retried', () => {
  /** What @discordjs/ws logs (through the service's logger) when it gives a connection up for good. */
  const GIVEN_UP = /^Destroying shard\n[\s\S]*\tRecover: none$/;

  /** A harness of the test's own, with the service's log at trace level: the gateway library's too. */
  async function own(
    { onTestFinished }: TestContext,
    options: Parameters<typeof startHarness>[0],
  ): Promise<Harness & { log: string[] }> {
    const log: string[] = [];
    const h = await startHarness({
      ...options,
      logger: pino({ level: 'trace' }, { write: (line: string) => void log.push(JSON.parse(line).msg) }),
      setup: (sim) =>
        sim.createGuild({ id: GUILD_A, name: 'A', members: [member(USER, 'user', { status: 'online' })] }),
    });
    onTestFinished(() => h.close());
    return { ...h, log };
  }

  /**
   * Resolves once nothing will connect again: @discordjs/ws has given the shard up (not "Recover: Resume"
   * or "Reconnect"), or never had one, and the service's connect loop has ended (it checks for a fatal
   * close after each wait, so this takes one retry delay when the close came while connecting).
   */
  async function triesNoMore(h: Harness & { log: string[] }, connected: boolean): Promise<void> {
    if (connected) await eventually(() => expect(h.log).toContainEqual(expect.stringMatching(GIVEN_UP)));
    const loop = connectLoops.mock.contexts.indexOf(h.app.gateway);
    expect(loop).toBeGreaterThanOrEqual(0);
    await within(connectLoops.mock.results[loop]?.value as Promise<void>, 10_000, 'the connect loop ending');
    expect(h.log.filter((line) => /\tRecover: /.test(line))).toHaveLength(connected ? 1 : 0);
  }

  it('4014 disallowed intents: reported once, no reconnect loop', async (context) => {
    const h = await own(context, {
      // The app has not enabled the Presence intent in the Developer Portal.
      simulator: { allowedIntents: GatewayIntentBits.GuildMembers | GatewayIntentBits.MessageContent },
    });
    await eventually(() =>
      expect(h.fatal).toEqual([{ code: 4014, reason: expect.stringMatching(/intent/i) }]),
    );
    await triesNoMore(h, true);
    expect(h.fatal).toHaveLength(1);
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.simulator.connectedShards).toEqual([]);
    expect(h.app.gateway.ready).toBe(false);
  });

  it('4004 on a live session (token revoked): reported once, neither resumed nor re-identified', async (context) => {
    const h = await own(context, {});
    await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(true));
    await h.simulator.waitForReady();
    h.simulator.faults.closeConnection(4004);
    await eventually(() =>
      expect(h.fatal).toEqual([{ code: 4004, reason: expect.stringMatching(/token/i) }]),
    );
    await triesNoMore(h, true);
    expect(h.fatal).toHaveLength(1);
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.simulator.resumeCount).toBe(0);
    expect(h.simulator.connectedShards).toEqual([]);
    expect(h.app.gateway.ready).toBe(false);
  });

  it.for<[number, RegExp]>([
    [4010, /shard/i],
    [4011, /sharding required/i],
    [4012, /API version/i],
    [4013, /invalid intents/i],
  ])(
    '%i on a live session: reported once with its reason, neither resumed nor re-identified',
    async ([code, reason], context) => {
      const h = await own(context, {});
      await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(true));
      await h.simulator.waitForReady();
      h.simulator.faults.closeConnection(code);
      await eventually(() => expect(h.fatal).toEqual([{ code, reason: expect.stringMatching(reason) }]));
      await triesNoMore(h, true);
      expect(h.fatal).toHaveLength(1);
      expect(h.simulator.identifyCount).toBe(1);
      expect(h.simulator.resumeCount).toBe(0);
      expect(h.simulator.connectedShards).toEqual([]);
      // What was known stays served: the process decides whether to go on (main ends it).
      expect(await statusOf(h, USER)).toMatchObject({ status: 200 });
    },
  );

  it('a token Discord refuses (401 before any gateway): reported as 4004 once, not retried', async (context) => {
    const h = await own(context, { env: { DISCORD_TOKEN: 'not-the-bot-token' } });
    await eventually(() => expect(h.fatal).toEqual([{ code: 4004, reason: expect.any(String) }]));
    await triesNoMore(h, false);
    expect(h.fatal).toHaveLength(1);
    expect(h.simulator.requestCount('GET /gateway/bot')).toBe(1);
    expect(h.simulator.identifyCount).toBe(0);
    expect(h.app.gateway.ready).toBe(false);
  });
});
