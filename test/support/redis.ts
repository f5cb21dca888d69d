import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

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
