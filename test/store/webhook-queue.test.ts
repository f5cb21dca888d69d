import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../src/model/webhook.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { PostgresWebhookQueue } from '../../src/store/postgres/webhook-queue.js';
import { RedisWebhookQueue } from '../../src/store/redis/webhook-queue.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SqliteWebhookQueue } from '../../src/store/sqlite/webhook-queue.js';
import {
  type Claim,
  MAX_QUEUED_EVENTS,
  type QueuedEvent,
  type WebhookQueue,
} from '../../src/store/webhook-queue.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

/**
 * The webhook queue's rules, for every adapter: one head per webhook in flight at a time, in order, a
 * backlog of presence and kv events collapsing to the newest, retries and leases that run out.
 */

const hasRedis = await redisAvailable('Redis webhook queue');
const redis = hasRedis ? new Redis(REDIS_TEST_URL) : null;
const hasPostgres = await postgresAvailable('PostgreSQL webhook queue');
const database: TestDatabase | null = hasPostgres ? await createTestDatabase() : null;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});
afterAll(async () => {
  redis?.disconnect();
  await database?.drop();
});

const T0 = 1_000_000;
const LEASE = 1_000;

const event = (id: string, type: WebhookEvent = 'now_playing'): QueuedEvent => ({
  id,
  type,
  body: `{"id":"${id}"}`,
});

/** Claims and delivers every head due at `now`, one round at a time, until none is left; the ids in order. */
async function drain(queue: WebhookQueue, now: number): Promise<string[]> {
  const delivered: string[] = [];
  for (;;) {
    const claims = await queue.claim(now, 10, LEASE);
    if (claims.length === 0) return delivered;
    for (const claim of claims) {
      delivered.push(claim.event.id);
      expect(await queue.settle(claim, true, now)).toBe(0);
    }
  }
}

function queueContract(name: string, open: () => Promise<WebhookQueue>, skip = false): void {
  describe.skipIf(skip)(`${name} webhook queue`, () => {
    it('hands out each webhook’s head to one claimer at a time, in order, with its body', async () => {
      const queue = await open();
      for (const id of ['a1', 'a2', 'a3']) await queue.enqueue('A', event(id), T0);
      await queue.enqueue('B', event('b1'), T0);
      const first = await queue.claim(T0, 10, LEASE);
      expect(first.map((claim) => [claim.webhookId, claim.event.id])).toEqual([
        ['A', 'a1'],
        ['B', 'b1'],
      ]);
      expect(first[0]).toMatchObject({ attempts: 0, firstAttemptAt: null, event: event('a1') });
      // Both are leased: nothing more is due until one is settled.
      expect(await queue.claim(T0, 10, LEASE)).toEqual([]);
      await queue.settle(first[0] as Claim, true, T0);
      const next = await queue.claim(T0, 10, LEASE);
      expect(next.map((claim) => claim.event.id)).toEqual(['a2']);
      await queue.settle(next[0] as Claim, true, T0);
      await queue.settle(first[1] as Claim, true, T0);
      expect(await drain(queue, T0)).toEqual(['a3']);
    });

    it('keeps the order of events queued at once, as the feed queues them', async () => {
      const queue = await open();
      const ids = Array.from({ length: 30 }, (_, i) => `a${String(i).padStart(2, '0')}`);
      await Promise.all(ids.map((id) => queue.enqueue('A', event(id), T0)));
      expect(await drain(queue, T0)).toEqual(ids);
    });

    it('hands each head to one of several claimers at once', async () => {
      const queue = await open();
      const webhooks = Array.from({ length: 20 }, (_, i) => `W${String(i).padStart(2, '0')}`);
      for (const webhookId of webhooks) await queue.enqueue(webhookId, event(`${webhookId}-1`), T0);
      const rounds = await Promise.all(Array.from({ length: 4 }, () => queue.claim(T0, 10, LEASE)));
      const claimed = rounds.flat().map((claim) => claim.webhookId);
      expect(new Set(claimed).size).toBe(claimed.length);
      for (const claim of rounds.flat()) await queue.settle(claim, true, T0);
      const rest = await drain(queue, T0);
      expect([...claimed, ...rest.map((id) => id.slice(0, 3))].sort()).toEqual(webhooks);
    });

    it('collapses a backlog of presence and kv events to the newest, never the head, keeping now_playing', async () => {
      const queue = await open();
      const sent: [string, WebhookEvent][] = [
        ['p1', 'presence'],
        ['n1', 'now_playing'],
        ['p2', 'presence'],
        ['k1', 'kv'],
        ['p3', 'presence'],
        ['k2', 'kv'],
        ['n2', 'now_playing'],
      ];
      let collapsed = 0;
      for (const [id, type] of sent) collapsed += (await queue.enqueue('A', event(id, type), T0)).collapsed;
      expect(collapsed).toBe(2);
      expect(await drain(queue, T0)).toEqual(['p1', 'n1', 'p3', 'k2', 'n2']);
    });

    it('does not collapse into the head, which may be in flight', async () => {
      const queue = await open();
      await queue.enqueue('A', event('p1', 'presence'), T0);
      const [head] = await queue.claim(T0, 10, LEASE);
      expect((await queue.enqueue('A', event('p2', 'presence'), T0)).collapsed).toBe(0);
      expect((await queue.enqueue('A', event('p3', 'presence'), T0)).collapsed).toBe(1);
      await queue.settle(head as Claim, true, T0);
      expect(await drain(queue, T0)).toEqual(['p3']);
    });

    it('retries the head when due, counting attempts from the first, and keeps the rest waiting', async () => {
      const queue = await open();
      await queue.enqueue('A', event('a1'), T0);
      const [claim] = await queue.claim(T0, 10, LEASE);
      expect(await queue.retryLater(claim as Claim, 1, T0, T0 + 5_000)).toBe(true);
      // A new event does not make the webhook due before its retry.
      await queue.enqueue('A', event('a2'), T0 + 1);
      expect(await queue.claim(T0 + 4_999, 10, LEASE)).toEqual([]);
      const [again] = await queue.claim(T0 + 5_000, 10, LEASE);
      expect(again).toMatchObject({ event: event('a1'), attempts: 1, firstAttemptAt: T0 });
      expect(await queue.settle(again as Claim, false, T0 + 5_000)).toBe(1);
      const [next] = await queue.claim(T0 + 5_000, 10, LEASE);
      expect(next).toMatchObject({ event: event('a2'), attempts: 0, firstAttemptAt: null });
    });

    it('counts events given up in a row, until one is delivered', async () => {
      const queue = await open();
      for (const id of ['a1', 'a2', 'a3']) await queue.enqueue('A', event(id), T0);
      const settleNext = async (delivered: boolean) => {
        const [claim] = await queue.claim(T0, 10, LEASE);
        return queue.settle(claim as Claim, delivered, T0);
      };
      expect(await settleNext(false)).toBe(1);
      expect(await settleNext(false)).toBe(2);
      expect(await settleNext(true)).toBe(0);
      await queue.enqueue('A', event('a4'), T0);
      expect(await settleNext(false)).toBe(1);
    });

    it('gives a head whose lease ran out to the next claimer; the old lease settles nothing', async () => {
      const queue = await open();
      await queue.enqueue('A', event('a1'), T0);
      const [lost] = await queue.claim(T0, 10, LEASE);
      expect(await queue.claim(T0 + LEASE - 1, 10, LEASE)).toEqual([]);
      const [taken] = await queue.claim(T0 + LEASE, 10, LEASE);
      expect(taken).toMatchObject({ event: event('a1'), attempts: 0 });
      expect(await queue.settle(lost as Claim, true, T0 + LEASE)).toBeNull();
      expect(await queue.retryLater(lost as Claim, 1, T0, T0 + LEASE)).toBe(false);
      expect(await queue.settle(taken as Claim, true, T0 + LEASE)).toBe(0);
      expect(await queue.claim(T0 + 10 * LEASE, 10, LEASE)).toEqual([]);
    });

    it('passes over the webhooks it is told to, leaving them due for a later claim', async () => {
      const queue = await open();
      for (const webhook of ['A', 'B', 'C']) await queue.enqueue(webhook, event(`${webhook}1`), T0);
      const claimed = await queue.claim(T0, 2, LEASE, ['A', 'B']);
      expect(claimed.map((claim) => claim.webhookId)).toEqual(['C']);
      const later = await queue.claim(T0, 10, LEASE);
      expect(later.map((claim) => claim.webhookId).sort()).toEqual(['A', 'B']);
    });

    it('takes a head given back untried again, with its attempts as they were; a lost lease gives nothing back', async () => {
      const queue = await open();
      await queue.enqueue('A', event('a1'), T0);
      const [first] = await queue.claim(T0, 10, LEASE);
      await queue.retryLater(first as Claim, 1, T0, T0 + 5_000);
      const [retried] = await queue.claim(T0 + 5_000, 10, LEASE);
      expect(await queue.release(retried as Claim, T0 + 5_001)).toBe(true);
      expect(await queue.release(retried as Claim, T0 + 5_001)).toBe(false);
      expect(await queue.claim(T0 + 5_000, 10, LEASE)).toEqual([]);
      const [again] = await queue.claim(T0 + 5_001, 10, LEASE);
      expect(again).toMatchObject({ event: event('a1'), attempts: 1, firstAttemptAt: T0 });
      expect(await queue.settle(retried as Claim, true, T0 + 5_001)).toBeNull();
      expect(await queue.settle(again as Claim, true, T0 + 5_001)).toBe(0);
    });

    it('drops everything queued for a webhook, and the lease of its head', async () => {
      const queue = await open();
      for (const id of ['a1', 'a2']) await queue.enqueue('A', event(id), T0);
      await queue.enqueue('B', event('b1'), T0);
      const [claim] = await queue.claim(T0, 1, LEASE);
      await queue.drop('A');
      expect(await queue.settle(claim as Claim, true, T0)).toBeNull();
      expect(await drain(queue, T0 + 10 * LEASE)).toEqual(['b1']);
    });

    it('keeps at most MAX_QUEUED_EVENTS, dropping the oldest behind the head', async () => {
      const queue = await open();
      let dropped = 0;
      for (let i = 0; i <= MAX_QUEUED_EVENTS; i++) {
        dropped += (await queue.enqueue('A', event(`n${i}`), T0)).dropped;
      }
      expect(dropped).toBe(1);
      const delivered = await drain(queue, T0);
      expect(delivered).toHaveLength(MAX_QUEUED_EVENTS);
      expect(delivered.slice(0, 3)).toEqual(['n0', 'n2', 'n3']);
    });
  });
}

queueContract('SQLite', async () => {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  cleanups.push(() => store.close());
  return new SqliteWebhookQueue(store.db);
});

queueContract(
  'Redis',
  async () => {
    const prefix = uniquePrefix();
    cleanups.push(() => dropPrefix(redis as Redis, prefix));
    return new RedisWebhookQueue(redis as Redis, prefix);
  },
  !hasRedis,
);

queueContract(
  'PostgreSQL',
  async () => {
    const store = await openPostgresStore(await (database as TestDatabase).schema());
    cleanups.push(() => store.close());
    return new PostgresWebhookQueue(store.pool);
  },
  !hasPostgres,
);

describe('the SQLite queue beside a connection holding the write lock (the write thread committing)', () => {
  it('answers a poll with nothing due at once, without waiting for the lock; one with an event due claims it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'presently-queue-'));
    const store = openSqliteStore({ kind: 'sqlite', path: join(dir, 'store.db') });
    const other = new Database(join(dir, 'store.db'));
    cleanups.push(() => {
      other.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const queue = new SqliteWebhookQueue(store.db);
    other.exec('BEGIN IMMEDIATE');
    expect(await queue.claim(T0, 10, LEASE)).toEqual([]);
    other.exec('COMMIT');
    await queue.enqueue('w1', event('e1'), T0);
    expect((await queue.claim(T0, 10, LEASE)).map((claim) => claim.event.id)).toEqual(['e1']);
  });
});
