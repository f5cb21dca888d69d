import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { LARGE_THRESHOLD } from '../../src/discord/intents.js';
import { STATE_MAX_AGE_MS } from '../../src/discord/restart-state.js';
import { openState, sealState, stateKey } from '../../src/discord/state-seal.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import {
  DiscordSimulator,
  type DiscordSimulatorOptions,
  type MemberInput,
} from '../../src/simulator/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * A restart of the service (a deploy) within Discord's resume window resumes every session the previous
 * process left, rather than identifying and listing every guild again: every presence is served from the
 * moment the new process listens, and what Discord sent in between arrives as the session's replay. Past
 * the window, or refused by Discord, the new process identifies and lists, as on a first start.
 */

const LARGE = '500000000000000007';
const SMALL = '500000000000000008';
/** Above the threshold: its offline members are known only from a whole-guild listing (op 8). */
const MEMBERS = LARGE_THRESHOLD + 20;
const memberId = (n: number) => String(80351110224678912n + BigInt(n));
const LISTENER = memberId(0);
const OFFLINE = memberId(7);
/** In both guilds. */
const BOTH_N = 3;
const BOTH = memberId(BOTH_N);
/** Leaves while no process is connected. */
const LEAVER = memberId(9);

function seed(sim: DiscordSimulator): void {
  sim.createGuild({
    id: LARGE,
    name: 'Large',
    members: Array.from(
      { length: MEMBERS },
      (_, n): MemberInput => ({
        user: { id: memberId(n), username: `member${n}` },
        ...(n % 10 === 0 || n === BOTH_N ? { presence: { status: 'online' } } : {}),
      }),
    ),
  });
  sim.createGuild({
    id: SMALL,
    name: 'Small',
    members: [{ user: { id: BOTH, username: 'member3' }, presence: { status: 'online' } }],
  });
}

const song = (name: string) =>
  spotifyActivity({
    song: name,
    artists: ['Artist'],
    album: 'Album',
    imageId: 'ab67616d0000b273',
    trackId: `track-${name}`,
    start: Date.now(),
    end: Date.now() + 200_000,
  });

/** The whole-guild listings Discord received. */
const listings = (sim: DiscordSimulator) => sim.memberRequests.filter((request) => 'query' in request);

interface Served {
  status: number;
  body: {
    data?: { discord_status: string; observed_at: number; stale: boolean; spotify: { song: string } | null };
  };
}

async function read(h: Harness, id: string): Promise<Served> {
  const response = await fetch(`${h.base}/v1/users/${id}`);
  return { status: response.status, body: (await response.json()) as Served['body'] };
}

async function readiness(h: Harness): Promise<number> {
  const response = await fetch(`${h.base}/v1/ready`);
  await response.body?.cancel();
  return response.status;
}

/** A simulated Discord that outlives the processes, and a SQLite file they share as a deploy would. */
async function world({ onTestFinished }: TestContext, options: Partial<DiscordSimulatorOptions> = {}) {
  const discord = new DiscordSimulator({
    heartbeatIntervalMs: 1_000,
    memberRequestCooldownMs: 1_000,
    ...options,
  });
  await discord.start();
  onTestFinished(() => discord.stop());
  seed(discord);
  const dir = mkdtempSync(join(tmpdir(), 'presently-resume-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const database = join(dir, 'presently.db');
  const start = async (env: Record<string, string> = {}) => {
    const h = await startHarness({ discord, env: { DATABASE_URL: `sqlite:${database}`, ...env } });
    onTestFinished(() => h.close());
    return h;
  };
  return { discord, database, start };
}

/** A first process that has listed everything, with one presence changed since. */
async function firstRun(
  start: (env?: Record<string, string>) => Promise<Harness>,
  discord: DiscordSimulator,
): Promise<Harness> {
  const first = await start();
  await eventually(async () => expect(await readiness(first)).toBe(200));
  expect(first.app.registry.size).toBe(MEMBERS);
  discord.setPresence(LISTENER, { status: 'online', activities: [song('before')] });
  await eventually(async () => expect((await read(first, LISTENER)).body.data?.spotify?.song).toBe('before'));
  return first;
}

describe('a restart within the resume window', () => {
  it('resumes: no IDENTIFY, no listing, every presence served at once, what was missed replayed', async (context) => {
    const { discord, database, start } = await world(context);
    const first = await firstRun(start, discord);
    const listener = await read(first, LISTENER);
    const offline = await read(first, OFFLINE);
    const both = await read(first, BOTH);
    const closing = Date.now();
    await first.close();
    // Saved on the way out, changed or not: a quiet bot's state is as recent as its shutdown.
    const store = openSqliteStore({ kind: 'sqlite', path: database });
    expect((await store.gatewayState.load('all'))?.savedAt).toBeGreaterThanOrEqual(closing);
    await store.close();
    const identifies = discord.identifyCount;
    const listed = listings(discord).length;

    // Sent while no process is connected: kept in the session for its resume.
    discord.setPresence(LISTENER, { status: 'online', activities: [song('between')] });
    discord.removeMember(LARGE, LEAVER);

    const second = await start();
    // Served as they were from the first request on, their freshness unchanged.
    expect(await read(second, OFFLINE)).toEqual(offline);
    expect(await read(second, BOTH)).toEqual(both);
    expect((await read(second, LISTENER)).body.data?.observed_at).toBeGreaterThanOrEqual(
      listener.body.data?.observed_at ?? Number.POSITIVE_INFINITY,
    );

    await eventually(async () =>
      expect((await read(second, LISTENER)).body.data?.spotify?.song).toBe('between'),
    );
    await eventually(async () => expect((await read(second, LEAVER)).status).toBe(404));
    await eventually(async () => expect(await readiness(second)).toBe(200));
    expect(discord.identifyCount).toBe(identifies);
    expect(listings(discord)).toHaveLength(listed);
    expect(discord.resumeCount).toBeGreaterThanOrEqual(1);
    expect(second.app.registry.size).toBe(MEMBERS - 1);
    expect(second.app.registry.memberCount(SMALL)).toBe(1);

    // The resumed session goes on as any other.
    discord.setPresence(OFFLINE, { status: 'idle' });
    await eventually(async () =>
      expect((await read(second, OFFLINE)).body.data?.discord_status).toBe('idle'),
    );
  }, 30_000);

  it('resumes though the IDENTIFY budget is under its reserve: a RESUME spends none of it', async (context) => {
    // 2 of 20 left: the first start spends one, leaving less than the 10% kept in reserve.
    const { discord, start } = await world(context, { sessionStartLimit: { total: 20, remaining: 2 } });
    const first = await firstRun(start, discord);
    await first.close();
    expect(discord.sessionStarts.remaining).toBe(1);

    const second = await start();
    await eventually(async () => expect(await readiness(second)).toBe(200));
    expect(discord.identifyCount).toBe(1);
    expect(discord.sessionStarts.remaining).toBe(1);
    expect(second.app.gateway.identifyWaitMs).toBe(0);
  }, 30_000);

  it('refused by Discord (op 9): identifies, lists again, and serves meanwhile what it held as stale', async (context) => {
    const { discord, start } = await world(context);
    const first = await firstRun(start, discord);
    await first.close();
    const identifies = discord.identifyCount;
    const listed = listings(discord).length;
    expect(discord.faults.expireDetachedSessions()).toBeGreaterThanOrEqual(1);
    discord.removeMember(LARGE, LEAVER);

    const second = await start();
    await eventually(async () => expect(await readiness(second)).toBe(200), 15_000);
    expect(discord.identifyCount).toBe(identifies + 1);
    expect(listings(discord).length).toBeGreaterThan(listed);
    // The listing was the truth: who left is gone, everyone else is current again.
    expect((await read(second, LEAVER)).status).toBe(404);
    const offline = await read(second, OFFLINE);
    expect(offline.body.data).toMatchObject({ discord_status: 'offline', stale: false });
    expect(second.app.registry.size).toBe(MEMBERS - 1);
    expect(second.app.registry.staleCount).toBe(0);
  }, 30_000);
});

describe('a restart of an instance that monitors only who opted in', () => {
  it('resumes, and asks Discord for whoever opted in while no process was there to hear it', async (context) => {
    const { discord, database, start } = await world(context);
    const optIn = async (userId: string) => {
      const store = openSqliteStore({ kind: 'sqlite', path: database });
      await store.privacy.patchPrivacy(userId, { opted_in: true });
      await store.close();
    };
    await optIn(OFFLINE);
    const first = await start({ MONITOR: 'opt-in' });
    await eventually(async () => expect(await readiness(first)).toBe(200));
    expect((await read(first, OFFLINE)).status).toBe(200);
    expect((await read(first, BOTH)).status).toBe(404);
    await first.close();
    // As an API node would write it, with no ingest process to hear of it.
    await optIn(BOTH);
    const identifies = discord.identifyCount;

    const second = await start({ MONITOR: 'opt-in' });
    expect((await read(second, OFFLINE)).status).toBe(200);
    await eventually(async () => expect((await read(second, BOTH)).body.data?.discord_status).toBe('online'));
    expect(discord.identifyCount).toBe(identifies);
  }, 30_000);
});

describe('a restart past the window', () => {
  it('takes nothing back and identifies, listing every guild as on a first start', async (context) => {
    const { discord, database, start } = await world(context);
    const first = await firstRun(start, discord);
    await first.close();
    // As if the process had been down longer than state is kept for: sealed again with its earlier moment,
    // as the bot itself would have.
    const store = await openSqliteStore({ kind: 'sqlite', path: database });
    const saved = await store.gatewayState.load('all');
    expect(saved?.sessions).toHaveLength(1);
    if (saved) {
      const key = stateKey(discord.token);
      const snapshot = openState(key, 'all', saved.savedAt, saved.sessions, saved.presences) as Buffer;
      const savedAt = saved.savedAt - STATE_MAX_AGE_MS - 1;
      const presences = sealState(key, 'all', savedAt, saved.sessions, snapshot);
      await store.gatewayState.save('all', { ...saved, savedAt, presences }, 2 * STATE_MAX_AGE_MS);
    }
    await store.close();
    const identifies = discord.identifyCount;
    const listed = listings(discord).length;

    const second = await start();
    // Nothing was taken back: the large guild's offline members are unknown until listed.
    expect((await read(second, OFFLINE)).status).toBe(404);
    await eventually(async () => expect(await readiness(second)).toBe(200), 15_000);
    expect(discord.identifyCount).toBe(identifies + 1);
    expect(listings(discord).length).toBeGreaterThan(listed);
    expect((await read(second, OFFLINE)).status).toBe(200);
    await second.close();
    // What was too old to use is not kept either: the state saved now is the second process's.
    const reopened = await openSqliteStore({ kind: 'sqlite', path: database });
    expect((await reopened.gatewayState.load('all'))?.savedAt).toBeGreaterThan(saved?.savedAt ?? 0);
    await reopened.close();
  }, 30_000);
});

describe('a restart that is not resumed', () => {
  /** Identified again, and every guild listed, nothing of the saved state served meanwhile. */
  async function expectStartedAfresh(second: Harness, discord: DiscordSimulator, identifies: number) {
    expect((await read(second, OFFLINE)).status).toBe(404);
    await eventually(async () => expect(await readiness(second)).toBe(200), 15_000);
    expect(discord.identifyCount).toBe(identifies + 1);
    expect((await read(second, OFFLINE)).status).toBe(200);
  }

  it('after the settings changed: a state saved under others is not taken back', async (context) => {
    const { discord, start } = await world(context);
    const first = await firstRun(start, discord);
    await first.close();
    const identifies = discord.identifyCount;
    const second = await start({ GUILD_IDS: `${LARGE},${SMALL}` });
    await expectStartedAfresh(second, discord, identifies);
  }, 30_000);

  it('a state not sealed with this bot’s token (another writer of the store) is refused and dropped', async (context) => {
    const { discord, database, start } = await world(context);
    const first = await firstRun(start, discord);
    await first.close();
    const store = openSqliteStore({ kind: 'sqlite', path: database });
    const saved = await store.gatewayState.load('all');
    if (saved) {
      const key = stateKey(discord.token);
      const snapshot = openState(key, 'all', saved.savedAt, saved.sessions, saved.presences) as Buffer;
      const sessions = saved.sessions.map((session) => ({ ...session, resumeUrl: 'ws://127.0.0.1:9' }));
      const forged = sealState(stateKey('a token of someone else'), 'all', saved.savedAt, sessions, snapshot);
      await store.gatewayState.save('all', { ...saved, sessions, presences: forged }, STATE_MAX_AGE_MS);
    }
    await store.close();
    const identifies = discord.identifyCount;

    const second = await start();
    await expectStartedAfresh(second, discord, identifies);
    // Dropped when refused: what is saved now is the second process's own.
    await second.close();
    const reopened = openSqliteStore({ kind: 'sqlite', path: database });
    expect((await reopened.gatewayState.load('all'))?.sessions[0]?.resumeUrl).toBe(discord.gatewayUrl);
    await reopened.close();
  }, 30_000);

  it('while a listing waited: the shard is not saved to be resumed, so the next process lists it', async (context) => {
    const { discord, start } = await world(context, { memberRequestCooldownMs: 12_000 });
    const first = await firstRun(start, discord);
    // A new session, whose listing of the large guild Discord defers: its members are not known in full.
    discord.faults.invalidateSession(false);
    discord.removeMember(LARGE, LEAVER);
    await eventually(
      async () => expect(await (await fetch(`${first.base}/v1/ready`)).text()).toContain('rate limit'),
      15_000,
    );
    await first.close();
    const identifies = discord.identifyCount;

    const second = await start();
    // Whatever the first process saved before is of a session Discord has invalidated: nothing is served as
    // current until the new session's listing, which lets the one who left go.
    const leaver = await read(second, LEAVER);
    expect(leaver.status === 404 || leaver.body.data?.stale === true).toBe(true);
    await eventually(async () => expect(await readiness(second)).toBe(200), 20_000);
    expect((await read(second, LEAVER)).status).toBe(404);
    expect((await read(second, OFFLINE)).body.data?.stale).toBe(false);
    expect(discord.identifyCount).toBeGreaterThan(identifies);
  }, 40_000);
});
