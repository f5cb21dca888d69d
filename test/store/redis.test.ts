import { Redis } from 'ioredis';
import { afterAll, afterEach } from 'vitest';
import { openRedisStore } from '../../src/store/redis/index.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';
import { storeContract } from './contract.js';

const hasRedis = await redisAvailable('Redis store contract');
const redis = hasRedis ? new Redis(REDIS_TEST_URL) : null;
const prefixes: string[] = [];

// Each test gets a prefix of its own: the same user ids never meet another test's data.
storeContract(
  'Redis',
  async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    return openRedisStore(redis as Redis, prefix);
  },
  !hasRedis,
);

afterEach(async () => {
  for (const prefix of prefixes.splice(0)) if (redis) await dropPrefix(redis, prefix);
});
afterAll(() => redis?.disconnect());
