import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './node-process.js';

/** The Redis tests use: this machine's, unless REDIS_TEST_URL says otherwise. */
export const REDIS_TEST_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether the Redis tests can run. Without Redis they are skipped with a notice, unless REQUIRE_REDIS=1
 * (CI sets it), where a missing Redis fails the run instead of silently testing less.
 */
export async function redisAvailable(suite: string): Promise<boolean> {
  const probe = new Redis(REDIS_TEST_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch (error) {
    if (process.env.REQUIRE_REDIS === '1') {
      throw new Error(
        `${suite}: REQUIRE_REDIS=1 but Redis at ${REDIS_TEST_URL} does not answer (${String(error)})`,
      );
    }
    console.warn(
      `\n[skipped] ${suite}: no Redis at ${REDIS_TEST_URL}. Start one with ` +
        '`redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no`.\n',
    );
    return false;
  } finally {
    probe.disconnect();
  }
}

/** A key prefix no other test run uses, so tests share one Redis without seeing each other's data. */
export function uniquePrefix(): string {
  return `presently-test:${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under `prefix`. */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  const stream = redis.scanStream({ match: `${prefix}*`, count: 1000 });
  for await (const keys of stream) {
    if ((keys as string[]).length > 0) await redis.unlink(...(keys as string[]));
  }
}

export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: what a crash of Redis looks like to its clients. */
  kill(): void;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Kills it and removes its data. */
  remove(): void;
}

/**
 * A redis-server of a test's own, on a free port, with the durable settings the README asks for (AOF,
 * fsync on every write), so a test can stop and restart it without touching the machine's Redis.
 * `password`: clients must give it (`requirepass`); `url` carries none.
 */
export async function startPrivateRedis(options: { password?: string } = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'presently-redis-'));
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        ...['--port', String(port), '--bind', '127.0.0.1', '--save', ''],
        ...['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir],
        ...(options.password === undefined ? [] : ['--requirepass', options.password]),
      ],
      { stdio: 'ignore' },
    );
    const probe = new Redis(port, '127.0.0.1', {
      ...(options.password === undefined ? {} : { password: options.password }),
      lazyConnect: true,
      retryStrategy: () => 50,
      maxRetriesPerRequest: null,
    });
    probe.on('error', () => {});
    await probe.connect().catch(() => undefined);
    await probe.ping();
    probe.disconnect();
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: () => child?.kill('SIGKILL'),
    start,
    remove: () => {
      child?.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A connection as a node's limiter has one (a command fails at once while Redis is away), once it is up;
 * added to `opened`, for the test to disconnect.
 */
export async function limiterConnection(opened: Redis[], url = REDIS_TEST_URL): Promise<Redis> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    retryStrategy: () => 50,
  });
  redis.on('error', () => {});
  opened.push(redis);
  await once(redis, 'ready');
  return redis;
}
