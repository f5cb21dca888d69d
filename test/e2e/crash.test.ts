import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import {
  crashGuild,
  drivePresences,
  expectHistoryKept,
  expectKvKept,
  expectServedAgain,
  LISTENERS,
  WRITER,
  type Write,
  watchHistory,
  writerPresence,
  writes,
} from '../support/crash-load.js';
import { eventually } from '../support/eventually.js';

/**
 * Durability: the real service as its own process, on a database file, connected to a simulated Discord
 * whose users change presence all the time, and a burst of KV writes; then `kill -9` right after the last
 * acknowledgement, in the middle of both (see crash-load.ts for what is acknowledged). A history batch is
 * one SQLite transaction (synchronous=FULL: durable at commit).
 *
 * After the kill every acknowledged write must be in the file, the file must pass its integrity check,
 * and a new process on the same file must serve them.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUILD = '400000000000000001';
/**
 * Writes that must be acknowledged before the kill (and, meanwhile, a history batch committed); the rest
 * keep the burst going until both hold, a few of them in flight when the kill lands.
 */
const ACKED_BEFORE_KILL = 200;
/** Enough to outlast a slow history batch on a busy machine; the kill comes long before the last. */
const EXTRA_IN_FLIGHT = 4_800;
const CONCURRENCY = 8;

interface Service {
  child: ChildProcess;
  base: string;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

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

/** The writer's presence once the service serves it; fails at once when the service has exited. */
function served(service: Service): Promise<{ kv: Record<string, string> }> {
  if (service.child.exitCode !== null) {
    throw new Error(`the service exited with ${service.child.exitCode}:\n${service.output.join('')}`);
  }
  return writerPresence(service.base);
}

describe('a crash during KV writes and history recording', () => {
  it('keeps every acknowledged write and history batch, keeps the file sound, and serves them after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'presently-crash-'));
    dirs.push(dir);
    const path = join(dir, 'p.db');

    const discord = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    await discord.start();
    simulators.push(discord);
    crashGuild(discord, GUILD, 'Crash Guild');

    // A key for the writer, written to the file before the service starts.
    const key = generateApiKey();
    const seed = openSqliteStore({ kind: 'sqlite', path });
    await seed.apiKeys.replaceKey(WRITER, hashApiKey(key), Date.now());
    await seed.close();

    const first = await spawnService(path, discord);
    await eventually(() => served(first), 30_000, 100);

    // History first: presences change from now until the kill, and the burst starts once every
    // listener's history has been written at least once, so batches keep committing under the burst.
    const driver = drivePresences(discord);
    const history = watchHistory(first.base);
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
    let survived: Map<string, string>;
    try {
      expect(store.db.pragma('integrity_check', { simple: true })).toBe('ok');
      await expectKvKept(store, key, all, acked);
      survived = await expectHistoryKept(store, driver.sent, history.acked);
    } finally {
      await store.close();
    }
    expect(survived.size).toBe(LISTENERS.length);

    // A new process on the same file serves the values, the history and the key.
    const second = await spawnService(path, discord);
    await eventually(() => served(second), 30_000, 100);
    await expectServedAgain(second.base, key, acked, survived);
    second.child.kill('SIGTERM');
    await second.exited;
  }, 90_000);
});
