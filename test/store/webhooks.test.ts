import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryRecord, StoredWebhook } from '../../src/model/webhook.js';
import type { WebhookStore } from '../../src/store/ports.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

/**
 * What every store adapter must do with webhooks: the embedded SQLite store, PostgreSQL and Redis all run
 * this suite, so registrations and deliveries behave the same on one machine and on many.
 */

const hasRedis = await redisAvailable('Redis webhook store contract');
const redis = hasRedis ? new Redis(REDIS_TEST_URL) : null;
const hasPostgres = await postgresAvailable('PostgreSQL webhook store contract');
let database: TestDatabase | undefined;
beforeAll(async () => {
  if (hasPostgres) database = await createTestDatabase();
});
const prefixes: string[] = [];
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const prefix of prefixes.splice(0)) if (redis) await dropPrefix(redis, prefix);
});
afterAll(async () => {
  redis?.disconnect();
  await database?.drop();
});

const T0 = Date.UTC(2026, 10, 26, 12);

function webhook(id: string, userId: string, createdAt = T0): StoredWebhook {
  return {
    id,
    userId,
    url: `https://example.com/${id}`,
    events: ['presence', 'kv'],
    secret: `whsec_${id}`,
    createdAt,
    disabledAt: null,
    disabledReason: null,
  };
}

function delivery(id: string, status: DeliveryRecord['status'] = 'delivered', attempts = 1): DeliveryRecord {
  return {
    id,
    type: 'presence',
    status,
    attempts,
    at: T0 + attempts,
    response_code: status === 'delivered' ? 200 : 500,
    error: status === 'delivered' ? null : 'HTTP 500',
    next_attempt_at: status === 'retrying' ? T0 + 5_000 : null,
  };
}

function webhookStoreContract(name: string, open: () => Promise<WebhookStore>, skip = false): void {
  describe.skipIf(skip)(`${name} webhook store contract`, () => {
    it('adds webhooks up to the limit per user, keeps them oldest first, and finds one by id', async () => {
      const store = await open();
      expect(await store.addWebhook(webhook('a', '1', T0 + 2), 2)).toBe(true);
      expect(await store.addWebhook(webhook('b', '1', T0 + 1), 2)).toBe(true);
      expect(await store.addWebhook(webhook('c', '1', T0 + 3), 2)).toBe(false);
      expect(await store.addWebhook(webhook('d', '2'), 2)).toBe(true);
      expect((await store.webhooksOf('1')).map((found) => found.id)).toEqual(['b', 'a']);
      expect(await store.webhook('a')).toEqual(webhook('a', '1', T0 + 2));
      expect(await store.webhook('c')).toBeUndefined();
      expect(await store.webhooksOf('3')).toEqual([]);
    });

    it('two adds at once never pass the limit', async () => {
      const store = await open();
      const added = await Promise.all(
        ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => store.addWebhook(webhook(id, '1'), 3)),
      );
      expect(added.filter(Boolean)).toHaveLength(3);
      expect(await store.webhooksOf('1')).toHaveLength(3);
    });

    it('removes a webhook with its deliveries, making room for another', async () => {
      const store = await open();
      await store.addWebhook(webhook('a', '1'), 1);
      await store.recordDelivery('a', delivery('x'), 20);
      expect(await store.removeWebhook('a')).toBe(true);
      expect(await store.removeWebhook('a')).toBe(false);
      expect(await store.webhook('a')).toBeUndefined();
      expect(await store.deliveries('a', 20)).toEqual([]);
      expect(await store.activeWebhooks()).toEqual([]);
      expect(await store.addWebhook(webhook('b', '1'), 1)).toBe(true);
    });

    it('disables a webhook once, with when and why, and leaves it out of the active ones', async () => {
      const store = await open();
      await store.addWebhook(webhook('a', '1'), 5);
      await store.addWebhook(webhook('b', '2'), 5);
      expect(await store.disableWebhook('a', T0 + 9, 'it failed')).toBe(true);
      expect(await store.disableWebhook('a', T0 + 10, 'again')).toBe(false);
      expect(await store.disableWebhook('missing', T0, 'gone')).toBe(false);
      expect(await store.webhook('a')).toMatchObject({ disabledAt: T0 + 9, disabledReason: 'it failed' });
      expect((await store.activeWebhooks()).map((found) => found.id)).toEqual(['b']);
      expect(await store.webhooksOf('1')).toHaveLength(1);
    });

    it('keeps the newest deliveries, newest first, a retry replacing its own record', async () => {
      const store = await open();
      await store.addWebhook(webhook('a', '1'), 5);
      await store.recordDelivery('a', delivery('x'), 3);
      await store.recordDelivery('a', delivery('y', 'retrying', 1), 3);
      await store.recordDelivery('a', delivery('y', 'retrying', 2), 3);
      expect(await store.deliveries('a', 10)).toEqual([delivery('y', 'retrying', 2), delivery('x')]);
      await store.recordDelivery('a', delivery('y', 'failed', 3), 3);
      await store.recordDelivery('a', delivery('z'), 3);
      await store.recordDelivery('a', delivery('w'), 3);
      expect((await store.deliveries('a', 10)).map((record) => record.id)).toEqual(['w', 'z', 'y']);
      expect((await store.deliveries('a', 2)).map((record) => record.id)).toEqual(['w', 'z']);
      // A webhook that is gone records nothing.
      await store.recordDelivery('gone', delivery('v'), 3);
      expect(await store.deliveries('gone', 10)).toEqual([]);
    });
  });
}

webhookStoreContract('SQLite', async () => {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  closers.push(() => store.close());
  return store.webhooks;
});

webhookStoreContract(
  'Redis',
  async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const store = openRedisStore(redis as Redis, prefix);
    await store.ping();
    return store.webhooks;
  },
  !hasRedis,
);

webhookStoreContract(
  'PostgreSQL',
  async () => {
    const store = await openPostgresStore(await (database as TestDatabase).schema());
    closers.push(() => store.close());
    return store.webhooks;
  },
  !hasPostgres,
);
