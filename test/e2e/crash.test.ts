import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DEMO_USERS } from '../../src/discord/simulator/demo.js';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';

/**
 * Durability: the real service as its own process (demo mode, a database file), a burst of KV writes,
 * then `kill -9` right after the last acknowledgement. Every write answered 204 must be in the file,
 * the file must be sound, and a new process on the same file must serve the values.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NOVA = DEMO_USERS.nova.id;
/** Writes that must be acknowledged before the kill; a few more are in flight when it lands. */
const ACKED_BEFORE_KILL = 200;
const EXTRA_IN_FLIGHT = 24;
const CONCURRENCY = 8;
/** Every PATCH_EVERY-th write is a PATCH of three keys (all or nothing), the rest PUTs. */
const PATCH_EVERY = 10;

interface Service {
  child: ChildProcess;
  base: string;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    }
  }
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

/** `node --import tsx src/main.ts` with no DISCORD_TOKEN (demo mode) on a database file. */
async function spawnService(databasePath: string): Promise<Service> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${databasePath}`,
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

/** Resolves with Nova's presence once the service serves it. */
async function novaPresence(service: Service): Promise<{ kv: Record<string, string> }> {
  if (service.child.exitCode !== null) {
    throw new Error(`the service exited with ${service.child.exitCode}:\n${service.output.join('')}`);
  }
  const response = await fetch(`${service.base}/v1/users/${NOVA}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { kv: Record<string, string> } }).data;
}

interface Write {
  index: number;
  /** What the write sets: one key for a PUT, three for a PATCH. */
  values: Record<string, string>;
  request: () => Promise<Response>;
}

function writes(base: string, key: string, count: number): Write[] {
  const salt = Math.random().toString(36).slice(2, 8);
  return Array.from({ length: count }, (_, index): Write => {
    if (index % PATCH_EVERY === PATCH_EVERY - 1) {
      const values = Object.fromEntries(
        ['a', 'b', 'c'].map((part) => [`p${index}_${part}`, `patch ${index}${part} ${salt} ✓`]),
      );
      return {
        index,
        values,
        request: () =>
          fetch(`${base}/v1/users/@me/kv`, {
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
          method: 'PUT',
          headers: { authorization: key },
          body: value,
        }),
    };
  });
}

describe('a crash right after acknowledged writes', () => {
  it('keeps every acknowledged write, keeps the file sound, and serves them after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'presently-crash-'));
    dirs.push(dir);
    const path = join(dir, 'p.db');

    // A key for Nova, written to the file before the service starts.
    const key = generateApiKey();
    const seed = openSqliteStore({ kind: 'sqlite', path });
    await seed.apiKeys.replaceKey(NOVA, hashApiKey(key), Date.now());
    await seed.close();

    const first = await spawnService(path);
    await eventually(() => novaPresence(first), 30_000, 100);

    // The burst: CONCURRENCY workers take writes in order; the 200th 204 pulls the trigger.
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
            if (acked.length === ACKED_BEFORE_KILL && !killed) {
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
    const exit = await first.exited;
    expect(killed).toBe(true);
    expect(exit.signal).toBe('SIGKILL');
    // A 204 already on its way when the kill lands may still arrive: it counts as acknowledged too.
    expect(acked.length).toBeGreaterThanOrEqual(ACKED_BEFORE_KILL);
    // Before the kill, nothing failed: only writes in flight at the kill may have.
    const failedBeforeKill = failed.filter((entry) => !entry.afterKill);
    expect(failedBeforeKill).toEqual([]);

    // The file after the crash.
    const store = openSqliteStore({ kind: 'sqlite', path });
    try {
      expect(store.db.pragma('integrity_check', { simple: true })).toBe('ok');
      const { kv, revision } = await store.kv.getKv(NOVA);
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
      expect(revision).toBeGreaterThanOrEqual(acked.length);
      expect(await store.apiKeys.findKey(hashApiKey(key))).toMatchObject({ userId: NOVA });
    } finally {
      await store.close();
    }

    // A new process on the same file serves the values.
    const second = await spawnService(path);
    const expected = Object.assign({}, ...acked.map((write) => write.values)) as Record<string, string>;
    await eventually(
      async () => {
        const presence = await novaPresence(second);
        expect(presence.kv).toMatchObject(expected);
      },
      30_000,
      100,
    );
    // And the key still works there.
    const again = await fetch(`${second.base}/v1/users/@me/kv/after_restart`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}` },
      body: 'still here',
    });
    expect(again.status).toBe(204);
    expect((await novaPresence(second)).kv.after_restart).toBe('still here');
    second.child.kill('SIGTERM');
    await second.exited;
  }, 90_000);
});
