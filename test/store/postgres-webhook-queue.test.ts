import { Client } from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { PostgresWebhookQueue } from '../../src/store/postgres/webhook-queue.js';
import { MAX_QUEUED_EVENTS } from '../../src/store/webhook-queue.js';
import { eventually } from '../support/eventually.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';

/**
 * The PostgreSQL queue against another transaction on the same webhook, made to interleave: a removal or
 * a disabling (drop) meets an enqueue that holds the webhook's head row and has not committed yet.
 */

const hasPostgres = await postgresAvailable('PostgreSQL webhook queue, interleaved');
const database: TestDatabase | null = hasPostgres ? await createTestDatabase() : null;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await database?.drop();
});

const T0 = 1_000_000;

async function open(): Promise<{ queue: PostgresWebhookQueue; other: Client; count: () => Promise<number> }> {
  const url = await (database as TestDatabase).schema();
  const store = await openPostgresStore(url);
  cleanups.push(() => store.close());
  const other = new Client({ connectionString: url });
  await other.connect();
  cleanups.push(() => other.end());
  const count = async () =>
    Number(
      (
        await store.pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM webhook_queue WHERE webhook_id = 'A'",
        )
      ).rows[0]?.n,
    );
  return { queue: new PostgresWebhookQueue(store.pool), other, count };
}

/** An enqueue's first steps, as the queue takes them: the head row locked, then an event appended. */
async function enqueueUncommitted(other: Client, id: string): Promise<void> {
  await other.query('BEGIN');
  await other.query(
    `INSERT INTO webhook_heads AS h (webhook_id, due_at) VALUES ('A', $1)
     ON CONFLICT (webhook_id) DO UPDATE SET due_at = coalesce(h.due_at, excluded.due_at)`,
    [T0],
  );
  await other.query(
    `INSERT INTO webhook_queue (webhook_id, delivery_id, type, body) VALUES ('A', $1, 'presence', '{}')`,
    [id],
  );
}

/** Resolves once a statement of this database waits for a row lock another transaction holds. */
async function someoneWaits(other: Client): Promise<void> {
  await eventually(async () => {
    // Inside a transaction the activity view is read once and kept, unless its snapshot is cleared.
    await other.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await other.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    );
    expect(Number(rows[0]?.n)).toBeGreaterThan(0);
  });
}

describe.skipIf(!hasPostgres)('the PostgreSQL webhook queue, interleaved', () => {
  it('drops an event whose enqueue commits while the drop waits: no event is left without its head', async () => {
    const { queue, other, count } = await open();
    await queue.enqueue('A', { id: 'a1', type: 'now_playing', body: '{}' }, T0);
    await enqueueUncommitted(other, 'a2');
    const dropping = queue.drop('A');
    await someoneWaits(other);
    await other.query('COMMIT');
    await dropping;
    // An event left without a head row is claimed by no one and dropped by no one: it stays for good.
    const { rows: heads } = await other.query("SELECT 1 FROM webhook_heads WHERE webhook_id = 'A'");
    expect({ events: await count(), heads: heads.length }).toEqual({ events: 0, heads: 0 });
  });

  it("holds at most the queue's bound of events waiting in memory for a webhook whose head row is held", async () => {
    const { queue, other, count } = await open();
    await enqueueUncommitted(other, 'held');
    let settled = 0;
    const waiting = Array.from({ length: MAX_QUEUED_EVENTS }, (_, n) =>
      queue.enqueue('A', { id: `e${n}`, type: 'now_playing', body: '{}' }, T0).finally(() => settled++),
    );
    await someoneWaits(other);
    // One past the bound is dropped at once, while those before it still wait for the lock.
    expect(await queue.enqueue('A', { id: 'past', type: 'now_playing', body: '{}' }, T0)).toEqual({
      collapsed: 0,
      dropped: 1,
    });
    expect(settled).toBe(0);
    await other.query('COMMIT');
    await Promise.all(waiting);
    const { rows } = await other.query<{ delivery_id: string }>(
      "SELECT delivery_id FROM webhook_queue WHERE webhook_id = 'A' AND delivery_id = 'past'",
    );
    expect(rows).toEqual([]);
    expect(await count()).toBe(MAX_QUEUED_EVENTS);
  });
});
