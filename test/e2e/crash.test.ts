import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GatewayActivity } from 'discord-api-types/v10';
import { afterEach, describe, expect, it } from 'vitest';
import { spotifyActivity } from '../../src/discord/simulator/activities.js';
import { DiscordSimulator } from '../../src/discord/simulator/index.js';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { HISTORY_LIMIT } from '../../src/presence/history.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';

/**
 * Durability: the real service as its own process, on a database file, connected to a simulated Discord
 * whose users change presence all the time (so the history recorder writes batch after batch), and a
 * burst of KV writes; then `kill -9` right after the last acknowledgement, in the middle of both.
 *
 * What "acknowledged" means differs:
 * - a KV write is acknowledged by its 204, sent once its transaction has committed;
 * - history has no client to tell: the recorder gathers changes in memory and writes them as one batch,
 *   one SQLite transaction, at most a second later (HISTORY_FLUSH_MS). A batch is acknowledged when that
 *   transaction commits (synchronous=FULL: durable at commit), and the first moment an outsider can know
 *   it is when `GET /history` serves its track, since tracks are read from the database only (the status
 *   history also shows the changes just seen, which are as live as the presence). So every track
 *   `/history` served before the kill must survive it; the changes
 *   still waiting in the batch at the kill (up to a second's worth) may be lost, but never a part of a
 *   batch, nor a batch while a later one survives: what survives is a gap-free run of what Discord sent.
 *
 * After the kill every acknowledged write must be in the file, the file must pass its integrity check,
 * and a new process on the same file must serve them.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUILD = '400000000000000001';
/** Owns the API key; writes the KV. */
const WRITER = '80351110224678912';
/** Users whose presence changes through the whole burst: history to record. */
const LISTENERS = Array.from({ length: 12 }, (_, index) => `80351110224679${String(index).padStart(3, '0')}`);
/** Every DRIVE_EVERY_MS, the next DRIVEN_PER_TICK listeners change status and track. */
const DRIVE_EVERY_MS = 20;
const DRIVEN_PER_TICK = 3;
/** Each change moves to the next status, so every change is a status entry as well as a play. */
const STATUSES = ['idle', 'dnd', 'online'] as const;
/**
 * Writes that must be acknowledged before the kill (and, meanwhile, a history batch committed); the rest
 * keep the burst going until both hold, a few of them in flight when the kill lands.
 */
const ACKED_BEFORE_KILL = 200;
/** Enough to outlast a slow history batch on a busy machine; the kill comes long before the last. */
const EXTRA_IN_FLIGHT = 4_800;
/** Writes of keys of their own: with a PATCH of three keys every tenth, well within the 512 a user keeps. */
const NEW_KEY_WRITES = 400;
const CONCURRENCY = 8;
/** Every PATCH_EVERY-th write is a PATCH of three keys (all or nothing), the rest PUTs. */
const PATCH_EVERY = 10;

interface Service {
  child: ChildProcess;
  base: string;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Every request gives up after this: once the service is killed, its port may be taken by another test's
 * server that never answers, and a request without a limit would wait on it for good.
 */
const ANSWER_WITHIN_MS = 10_000;
const answerWithin = (): AbortSignal => AbortSignal.timeout(ANSWER_WITHIN_MS);

const children: ChildProcess[] = [];
const dirs: string[] = [];
const simulators: DiscordSimulator[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    }
  }
  for (const simulator of simulators.splice(0)) await simulator.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** `node --import tsx src/main.ts` on a database file, connected to the simulated Discord. */
async function spawnService(databasePath: string, discord: DiscordSimulator): Promise<Service> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${databasePath}`,
    DISCORD_TOKEN: discord.token,
    DISCORD_API_URL: discord.apiUrl,
    DISCORD_CDN_URL: discord.cdnUrl,
    LOG_LEVEL: 'warn',
    // The burst is a test of durability, not of rate limits.
    RATE_LIMIT_WRITE: '0',
    RATE_LIMIT_READ: '0',
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, base: `http://127.0.0.1:${port}`, output, exited };
}

/** Resolves with the writer's presence once the service serves it. */
async function writerPresence(service: Service): Promise<{ kv: Record<string, string> }> {
  if (service.child.exitCode !== null) {
    throw new Error(`the service exited with ${service.child.exitCode}:\n${service.output.join('')}`);
  }
  const response = await fetch(`${service.base}/v1/users/${WRITER}`, { signal: answerWithin() });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { kv: Record<string, string> } }).data;
}

/** The songs of a user's track history as the API serves it, newest first. */
async function servedSongs(service: Service, userId: string): Promise<string[]> {
  const response = await fetch(`${service.base}/v1/users/${userId}/history`, { signal: answerWithin() });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: { track_history: { song: string }[] } };
  return body.data.track_history.map((entry) => entry.song);
}

/** What the simulated Discord has sent for each listener, in order: step i is song `<user>#i`. */
interface Sent {
  statuses: Map<string, string[]>;
  songs: Map<string, string[]>;
}

function song(userId: string, step: number): string {
  return `${userId}#${step}`;
}

/** The step a served or stored song stands for. */
function stepOf(name: string): number {
  return Number(name.slice(name.indexOf('#') + 1));
}

function track(userId: string, step: number): GatewayActivity {
  const start = Date.now();
  return spotifyActivity({
    song: song(userId, step),
    artists: ['Crash Test'],
    album: 'Durability',
    imageId: 'ab67616d0000b273000000000000000000000000',
    trackId: `t${userId.slice(-3)}s${step}`.padEnd(22, 'x'),
    start,
    end: start + 180_000,
    userId,
  });
}

/** Changes the listeners' presences, a few at a time, until stopped. */
function drivePresences(discord: DiscordSimulator): { sent: Sent; stop(): void } {
  const sent: Sent = {
    statuses: new Map(LISTENERS.map((id) => [id, []])),
    songs: new Map(LISTENERS.map((id) => [id, []])),
  };
  let next = 0;
  const timer = setInterval(() => {
    for (let i = 0; i < DRIVEN_PER_TICK; i++) {
      const userId = LISTENERS[next++ % LISTENERS.length] as string;
      const songs = sent.songs.get(userId) as string[];
      const step = songs.length;
      const status = STATUSES[step % STATUSES.length] as (typeof STATUSES)[number];
      discord.setPresence(userId, { status, activities: [track(userId, step)] });
      songs.push(song(userId, step));
      sent.statuses.get(userId)?.push(status);
    }
  }, DRIVE_EVERY_MS);
  return { sent, stop: () => clearInterval(timer) };
}

/**
 * Reads every listener's history over and over; for each, the number of steps `/history` has shown to be
 * written (the newest song served, plus one): the acknowledged history.
 */
function watchHistory(service: Service): { acked: Map<string, number>; stop(): Promise<void> } {
  const acked = new Map(LISTENERS.map((id) => [id, 0]));
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const userId of LISTENERS) {
        try {
          const [newest] = await servedSongs(service, userId);
          if (newest !== undefined) acked.set(userId, Math.max(acked.get(userId) ?? 0, stepOf(newest) + 1));
        } catch {
          // the kill: reads in flight fail; those answered before it are what counts
        }
        if (!running) return;
      }
    }
  })();
  return {
    acked,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

interface Write {
  index: number;
  /** What the write sets: one key for a PUT, three for a PATCH. */
  values: Record<string, string>;
  request: () => Promise<Response>;
}

function writes(base: string, key: string, count: number): Write[] {
  const salt = Math.random().toString(36).slice(2, 8);
  const made = Array.from({ length: Math.min(count, NEW_KEY_WRITES) }, (_, index) => write(index));
  // Past the keys a user may keep, the burst goes on by writing early PUTs again, value for value: each
  // is acknowledged like any write, and changes nothing.
  const puts = made.filter((candidate) => Object.keys(candidate.values).length === 1);
  for (let index = made.length; index < count; index++) {
    const again = puts[index % puts.length] as Write;
    made.push({ ...again, index });
  }
  return made;

  function write(index: number): Write {
    if (index % PATCH_EVERY === PATCH_EVERY - 1) {
      const values = Object.fromEntries(
        ['a', 'b', 'c'].map((part) => [`p${index}_${part}`, `patch ${index}${part} ${salt} ✓`]),
      );
      return {
        index,
        values,
        request: () =>
          fetch(`${base}/v1/users/@me/kv`, {
            signal: answerWithin(),
            method: 'PATCH',
            headers: { authorization: key, 'content-type': 'application/json' },
            body: JSON.stringify(values),
          }),
      };
    }
    const value = `value ${index} ${salt} ${'x'.repeat(index % 7 === 0 ? 5_000 : 10)}`;
    return {
      index,
      values: { [`k${index}`]: value },
      request: () =>
        fetch(`${base}/v1/users/@me/kv/k${index}`, {
          signal: answerWithin(),
          method: 'PUT',
          headers: { authorization: key },
          body: value,
        }),
    };
  }
}

describe('a crash during KV writes and history recording', () => {
  it('keeps every acknowledged write and history batch, keeps the file sound, and serves them after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'presently-crash-'));
    dirs.push(dir);
    const path = join(dir, 'p.db');

    const discord = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    await discord.start();
    simulators.push(discord);
    discord.createGuild({
      id: GUILD,
      name: 'Crash Guild',
      members: [WRITER, ...LISTENERS].map((id) => ({
        user: { id, username: `u${id.slice(-3)}` },
        presence: { status: 'online' as const },
      })),
    });

    // A key for the writer, written to the file before the service starts.
    const key = generateApiKey();
    const seed = openSqliteStore({ kind: 'sqlite', path });
    await seed.apiKeys.replaceKey(WRITER, hashApiKey(key), Date.now());
    await seed.close();

    const first = await spawnService(path, discord);
    await eventually(() => writerPresence(first), 30_000, 100);

    // History first: presences change from now until the kill, and the burst starts once every
    // listener's history has been written at least once, so batches keep committing under the burst.
    const driver = drivePresences(discord);
    const history = watchHistory(first);
    await eventually(
      () => {
        for (const userId of LISTENERS) expect(history.acked.get(userId)).toBeGreaterThan(0);
      },
      15_000,
      50,
    );
    const ackedAtBurstStart = new Map(history.acked);
    const batchCommittedDuringBurst = (): boolean =>
      LISTENERS.some((userId) => (history.acked.get(userId) ?? 0) > (ackedAtBurstStart.get(userId) ?? 0));

    // The burst: CONCURRENCY workers take writes in order; once ACKED_BEFORE_KILL have had their 204 and a
    // history batch has committed meanwhile, the next 204 pulls the trigger.
    const all = writes(first.base, key, ACKED_BEFORE_KILL + EXTRA_IN_FLIGHT);
    const acked: Write[] = [];
    const failed: { write: Write; why: string; afterKill: boolean }[] = [];
    let next = 0;
    let killed = false;
    const worker = async (): Promise<void> => {
      while (!killed && next < all.length) {
        const write = all[next++] as Write;
        try {
          const response = await write.request();
          if (response.status === 204) {
            acked.push(write);
            if (!killed && acked.length >= ACKED_BEFORE_KILL && batchCommittedDuringBurst()) {
              killed = true;
              first.child.kill('SIGKILL');
            }
          } else {
            failed.push({ write, why: `${response.status} ${await response.text()}`, afterKill: killed });
          }
        } catch (error) {
          failed.push({ write, why: String((error as Error).cause ?? error), afterKill: killed });
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    // Every write done and no batch seen under them: the assertion below says so, after the process is gone.
    if (!killed) first.child.kill('SIGKILL');
    const exit = await first.exited;
    driver.stop();
    await history.stop();
    expect(killed, 'the burst ended before a history batch committed under it').toBe(true);
    expect(exit.signal).toBe('SIGKILL');
    // A 204 already on its way when the kill lands may still arrive: it counts as acknowledged too.
    expect(acked.length).toBeGreaterThanOrEqual(ACKED_BEFORE_KILL);
    // Before the kill, nothing failed: only writes in flight at the kill may have.
    const failedBeforeKill = failed.filter((entry) => !entry.afterKill);
    expect(failedBeforeKill).toEqual([]);

    // The file after the crash.
    const store = openSqliteStore({ kind: 'sqlite', path });
    const survived = new Map<string, string>();
    try {
      expect(store.db.pragma('integrity_check', { simple: true })).toBe('ok');
      const { kv, revision } = await store.kv.getKv(WRITER);
      for (const write of acked) {
        for (const [name, value] of Object.entries(write.values)) {
          expect(kv[name], `acknowledged write #${write.index} (${name})`).toBe(value);
        }
      }
      // Writes cut off by the kill: each entirely there or entirely absent, never torn.
      const ackedIndexes = new Set(acked.map((write) => write.index));
      for (const write of all.filter((candidate) => !ackedIndexes.has(candidate.index))) {
        const present = Object.keys(write.values).filter((name) => Object.hasOwn(kv, name));
        expect([0, Object.keys(write.values).length], `write #${write.index}`).toContain(present.length);
        for (const name of present) expect(kv[name]).toBe(write.values[name]);
      }
      // One revision per acknowledged write that changed something (a write again, value for value, does not).
      expect(revision).toBeGreaterThanOrEqual(acked.filter((write) => write.index < NEW_KEY_WRITES).length);
      expect(await store.apiKeys.findKey(hashApiKey(key))).toMatchObject({ userId: WRITER });

      // History: for each listener, the stored entries are the first `kept` steps Discord sent (the newest
      // HISTORY_LIMIT of them), in order, without a gap, and `kept` covers every step /history served.
      for (const userId of LISTENERS) {
        const sentSongs = driver.sent.songs.get(userId) as string[];
        const sentStatuses = driver.sent.statuses.get(userId) as string[];
        const { status, tracks } = await store.history.history(userId, HISTORY_LIMIT);
        const songs = tracks.map((entry) => entry.song);
        const kept = songs.length === 0 ? 0 : stepOf(songs[0] as string) + 1;
        expect(kept, `${userId}: steps served by /history before the kill`).toBeGreaterThanOrEqual(
          history.acked.get(userId) ?? 0,
        );
        expect(kept).toBeLessThanOrEqual(sentSongs.length);
        const window = Math.min(kept, HISTORY_LIMIT);
        expect(songs, `${userId}: track history`).toEqual(sentSongs.slice(kept - window, kept).reverse());
        // Each change wrote its status entry in the same batch as its track (older: the first sighting's).
        expect(
          status.slice(0, window).map((entry) => entry.status),
          `${userId}: status history`,
        ).toEqual(sentStatuses.slice(kept - window, kept).reverse());
        if (kept > 0) survived.set(userId, songs[0] as string);
      }
    } finally {
      await store.close();
    }
    expect(survived.size).toBe(LISTENERS.length);

    // A new process on the same file serves the values and the history.
    const second = await spawnService(path, discord);
    const expected = Object.assign({}, ...acked.map((write) => write.values)) as Record<string, string>;
    await eventually(
      async () => {
        const presence = await writerPresence(second);
        expect(presence.kv).toMatchObject(expected);
      },
      30_000,
      100,
    );
    for (const [userId, newest] of survived) expect(await servedSongs(second, userId)).toContain(newest);
    // And the key still works there.
    const again = await fetch(`${second.base}/v1/users/@me/kv/after_restart`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}` },
      body: 'still here',
    });
    expect(again.status).toBe(204);
    expect((await writerPresence(second)).kv.after_restart).toBe('still here');
    second.child.kill('SIGTERM');
    await second.exited;
  }, 90_000);
});
