import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectCluster } from '../../src/cluster/connect.js';
import { createLogger } from '../../src/log.js';
import { eventually } from '../support/eventually.js';
import { type PrivateRedis, redisAvailable, startPrivateRedis, uniquePrefix } from '../support/redis.js';

/**
 * The password in REDIS_URL, as the node's real logger (at `trace`) would write it: a Redis of the
 * test's own asks for a password, and the node is given a wrong one, which Redis refuses again and again.
 */

const hasRedis = await redisAvailable('a password in REDIS_URL');
const PASSWORD = 'the-right-password';
const WRONG = 'not-the-password-hunter2';

describe.skipIf(!hasRedis)('a password in REDIS_URL', () => {
  let redis: PrivateRedis;

  beforeAll(async () => {
    redis = await startPrivateRedis({ password: PASSWORD });
  }, 30_000);

  afterAll(() => redis?.remove());

  it('never reaches a log line, not even when Redis refuses it', async () => {
    const lines: string[] = [];
    const logger = createLogger('trace', false, { write: (line: string) => void lines.push(line) });
    const url = redis.url.replace('redis://', `redis://presently:${WRONG}@`);
    const link = connectCluster(url, uniquePrefix(), logger, 'presently-test');
    await eventually(() => expect(lines.join('')).toContain('Redis connection error'));
    await link.close();
    expect(lines.join('')).toContain('WRONGPASS');
    expect(lines.join('')).not.toContain(WRONG);
  });
});
