import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadBudget } from '../../src/limits/read-budget.js';
import { readBudgetOf, writeBudgetOf } from '../../src/limits/request-budgets.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

const hasRedis = await redisAvailable('write budgets in Redis');
const OWNER = '80351110224678912';

describe('the budgets RATE_LIMIT_READ and RATE_LIMIT_WRITE make', () => {
  it('none for 0', () => {
    expect(readBudgetOf({ read: 0, write: 0 })).toBeNull();
    expect(writeBudgetOf({ read: 0, write: 0 })).toBeNull();
  });

  it('a read budget of that many reads a minute, counted in the process', () => {
    const budget = readBudgetOf({ read: 7, write: 0 });
    expect(budget).toBeInstanceOf(ReadBudget);
    expect(budget?.max).toBe(7);
    budget?.close();
  });

  it('a write budget in memory: each owner and each client a count of its own', async () => {
    const budget = writeBudgetOf({ read: 0, write: 2 });
    expect(budget?.max).toBe(2);
    expect((await budget?.chargeOwner(OWNER))?.count).toBe(1);
    expect((await budget?.chargeOwner(OWNER))?.count).toBe(2);
    expect((await budget?.chargeClient('192.0.2.1'))?.count).toBe(1);
    expect((await budget?.chargeOwner(OWNER))?.count).toBe(3);
  });

  describe.skipIf(!hasRedis)('with Redis', () => {
    const connections: Redis[] = [];
    const prefix = uniquePrefix();
    afterEach(async () => {
      for (const redis of connections.splice(0)) redis.disconnect();
      const redis = new Redis(REDIS_TEST_URL);
      await dropPrefix(redis, prefix);
      redis.disconnect();
    });

    it('a write budget every API node shares, under `rate-limit:write:` keys', async () => {
      const nodes = await Promise.all(
        [0, 1].map(async () => {
          const redis = new Redis(REDIS_TEST_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
          connections.push(redis);
          await once(redis, 'ready');
          return writeBudgetOf({ read: 0, write: 2, redis: { client: redis, prefix } });
        }),
      );
      expect((await nodes[0]?.chargeOwner(OWNER))?.count).toBe(1);
      expect((await nodes[1]?.chargeOwner(OWNER))?.count).toBe(2);
      expect((await nodes[1]?.chargeClient('2001:db8:0:1::'))?.count).toBe(1);
      const redis = connections[0] as Redis;
      expect((await redis.keys(`${prefix}rate-limit:write:*`)).sort()).toEqual([
        `${prefix}rate-limit:write:ip:2001:db8:0:1::`,
        `${prefix}rate-limit:write:user:${OWNER}`,
      ]);
    });
  });
});
