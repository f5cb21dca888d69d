import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { WebhookEvent } from '../../model/webhook.js';
import {
  type Claim,
  COLLAPSING_EVENTS,
  type EnqueueOutcome,
  MAX_QUEUED_EVENTS,
  type QueuedEvent,
  type WebhookQueue,
} from '../webhook-queue.js';
import { query, type Session, transaction } from './queries.js';

/**
 * Locks the webhook's head row, made if it is the first event: every change to one webhook's queue takes
 * it first, so the statements after it read what the others committed. A webhook with nothing due is due
 * at once; one leased or waiting for a retry keeps its time.
 */
const LOCK_FOR_EVENT = {
  name: 'webhook-queue.lock-for-event',
  text: `INSERT INTO webhook_heads AS h (webhook_id, due_at) VALUES ($1, $2)
         ON CONFLICT (webhook_id) DO UPDATE SET due_at = coalesce(h.due_at, excluded.due_at)`,
};
/**
 * Removes what the new event replaces behind the head (the oldest row, which may be in flight): those of
 * its type when it collapses ($3), then the oldest past the bound ($4), and appends it.
 */
const ENQUEUE = {
  name: 'webhook-queue.enqueue',
  text: `WITH waiting AS (
           SELECT seq, type, seq = min(seq) OVER () AS head FROM webhook_queue WHERE webhook_id = $1
         ), collapsed AS (
           SELECT seq FROM waiting WHERE NOT head AND $3 AND type = $5
         ), behind AS (
           SELECT seq, row_number() OVER (ORDER BY seq DESC) AS newer FROM waiting
           WHERE NOT head AND seq NOT IN (SELECT seq FROM collapsed)
         ), dropped AS (
           SELECT seq FROM behind WHERE newer > $4 - 2
         ), removed AS (
           DELETE FROM webhook_queue WHERE seq IN (SELECT seq FROM collapsed UNION ALL SELECT seq FROM dropped)
         ), added AS (
           INSERT INTO webhook_queue (webhook_id, delivery_id, type, body) VALUES ($1, $2, $5, $6)
         )
         SELECT (SELECT count(*) FROM collapsed)::integer AS collapsed,
           (SELECT count(*) FROM dropped)::integer AS dropped`,
};
/** The webhooks due but those passed over ($3), locked; one another node or call holds is left to it. */
const LOCK_DUE = {
  name: 'webhook-queue.lock-due',
  text: `SELECT webhook_id FROM webhook_heads WHERE due_at <= $1 AND NOT (webhook_id = ANY ($3::text[]))
         ORDER BY due_at, webhook_id LIMIT $2
         FOR UPDATE SKIP LOCKED`,
};
/**
 * Leases each locked webhook's head until $3, with lease $2 and the webhook's place; a head not seen
 * before starts its attempts from none. A webhook whose queue is empty is due no more.
 */
const LEASE = {
  name: 'webhook-queue.lease',
  text: `WITH heads AS (
           SELECT u.webhook_id, u.n, q.seq, q.delivery_id, q.type, q.body
           FROM unnest($1::text[]) WITH ORDINALITY AS u (webhook_id, n)
           LEFT JOIN LATERAL (
             SELECT seq, delivery_id, type, body FROM webhook_queue WHERE webhook_id = u.webhook_id
             ORDER BY seq LIMIT 1) AS q ON true
         )
         UPDATE webhook_heads h SET
           attempts = CASE WHEN h.head_seq = x.seq THEN h.attempts ELSE 0 END,
           first_attempt_at = CASE WHEN h.head_seq = x.seq THEN h.first_attempt_at END,
           head_seq = x.seq,
           lease = CASE WHEN x.seq IS NOT NULL THEN $2 || x.n END,
           due_at = CASE WHEN x.seq IS NOT NULL THEN $3::bigint END
         FROM heads x WHERE h.webhook_id = x.webhook_id
         RETURNING x.n, h.webhook_id, x.delivery_id, x.type, x.body, h.attempts, h.first_attempt_at, h.lease`,
};
/** The head's state, locked, if the lease ($2) is still held. */
const HELD = {
  name: 'webhook-queue.held',
  text: 'SELECT head_seq, failures FROM webhook_heads WHERE webhook_id = $1 AND lease = $2 FOR UPDATE',
};
/** The head ($2) leaves the queue; the next event, if any, is due at $4. */
const SETTLE = {
  name: 'webhook-queue.settle',
  text: `WITH removed AS (DELETE FROM webhook_queue WHERE seq = $2)
         UPDATE webhook_heads SET head_seq = NULL, attempts = 0, first_attempt_at = NULL, lease = NULL,
           failures = $3,
           due_at = CASE WHEN EXISTS (SELECT 1 FROM webhook_queue WHERE webhook_id = $1 AND seq <> $2)
             THEN $4::bigint END
         WHERE webhook_id = $1`,
};
const RELEASE = {
  name: 'webhook-queue.release',
  text: 'UPDATE webhook_heads SET due_at = $3, lease = NULL WHERE webhook_id = $1 AND lease = $2',
};
const RETRY = {
  name: 'webhook-queue.retry',
  text: `UPDATE webhook_heads SET attempts = $3, first_attempt_at = $4, due_at = $5, lease = NULL
         WHERE webhook_id = $1 AND lease = $2`,
};
/**
 * Locks the webhook's head row as an enqueue does, waiting for one under way (even one making the row):
 * deleting in one statement, the drop would miss the event that enqueue appends, left with no head row
 * to be claimed or dropped by.
 */
const LOCK_FOR_DROP = {
  name: 'webhook-queue.lock-for-drop',
  text: `INSERT INTO webhook_heads AS h (webhook_id) VALUES ($1)
         ON CONFLICT (webhook_id) DO UPDATE SET lease = h.lease`,
};
const DROP = {
  name: 'webhook-queue.drop',
  text: `WITH events AS (DELETE FROM webhook_queue WHERE webhook_id = $1)
         DELETE FROM webhook_heads WHERE webhook_id = $1`,
};

interface LeasedRow {
  n: number;
  webhook_id: string;
  delivery_id: string | null;
  type: WebhookEvent | null;
  body: string | null;
  attempts: number;
  first_attempt_at: number | null;
  lease: string | null;
}

/**
 * The queue of a process on PostgreSQL alone, in the store's database (see its migrations): events wait
 * across a restart, and a lease the process held when it stopped runs out like any other. Each change to
 * a webhook's queue locks its head row first, so that processes sharing the database would keep each
 * webhook's events in order too.
 */
export class PostgresWebhookQueue implements WebhookQueue {
  /**
   * Each webhook's last enqueue under way. The feed queues without waiting, and each enqueue is a
   * transaction on any of the pool's connections: run side by side, a later event could take the
   * webhook's lock first and be queued ahead of an earlier one.
   */
  private readonly enqueuing = new Map<string, Promise<unknown>>();
  /**
   * Each webhook's enqueues not yet settled. While PostgreSQL is slow or away they wait in memory, so they
   * are held to the queue's own bound: past it an event is dropped at once, as a full backlog drops one.
   */
  private readonly waiting = new Map<string, number>();

  constructor(private readonly pool: Pool) {}

  /** After the webhook's enqueues called before it. */
  enqueue(webhookId: string, event: QueuedEvent, now: number): Promise<EnqueueOutcome> {
    const waiting = this.waiting.get(webhookId) ?? 0;
    if (waiting >= MAX_QUEUED_EVENTS) return Promise.resolve({ collapsed: 0, dropped: 1 });
    this.waiting.set(webhookId, waiting + 1);
    const write = () => this.enqueueNow(webhookId, event, now);
    const run = (this.enqueuing.get(webhookId) ?? Promise.resolve()).then(write, write);
    const settled = run.catch(() => undefined);
    this.enqueuing.set(webhookId, settled);
    void settled.then(() => {
      const left = (this.waiting.get(webhookId) ?? 1) - 1;
      if (left === 0) this.waiting.delete(webhookId);
      else this.waiting.set(webhookId, left);
      if (this.enqueuing.get(webhookId) === settled) this.enqueuing.delete(webhookId);
    });
    return run;
  }

  private enqueueNow(webhookId: string, event: QueuedEvent, now: number): Promise<EnqueueOutcome> {
    return transaction(this.pool, async (session) => {
      await session.query({ ...LOCK_FOR_EVENT, values: [webhookId, now] });
      const { rows } = await session.query<EnqueueOutcome>({
        ...ENQUEUE,
        values: [
          webhookId,
          event.id,
          COLLAPSING_EVENTS.has(event.type),
          MAX_QUEUED_EVENTS,
          event.type,
          event.body,
        ],
      });
      return rows[0] as EnqueueOutcome;
    });
  }

  async claim(
    now: number,
    limit: number,
    leaseMs: number,
    passing: readonly string[] = [],
  ): Promise<Claim[]> {
    return transaction(this.pool, async (session) => {
      const { rows: due } = await session.query<{ webhook_id: string }>({
        ...LOCK_DUE,
        values: [now, limit, passing],
      });
      if (due.length === 0) return [];
      return leased(session, due, now + leaseMs);
    });
  }

  async settle(claim: Claim, delivered: boolean, now: number): Promise<number | null> {
    return transaction(this.pool, async (session) => {
      const { rows } = await session.query<{ head_seq: number; failures: number }>({
        ...HELD,
        values: [claim.webhookId, claim.lease],
      });
      const held = rows[0];
      if (!held) return null;
      const failures = delivered ? 0 : held.failures + 1;
      await session.query({ ...SETTLE, values: [claim.webhookId, held.head_seq, failures, now] });
      return failures;
    });
  }

  async release(claim: Claim, now: number): Promise<boolean> {
    const { rowCount } = await query(this.pool, { ...RELEASE, values: [claim.webhookId, claim.lease, now] });
    return rowCount === 1;
  }

  async retryLater(claim: Claim, attempts: number, firstAttemptAt: number, dueAt: number): Promise<boolean> {
    const { rowCount } = await query(this.pool, {
      ...RETRY,
      values: [claim.webhookId, claim.lease, attempts, firstAttemptAt, dueAt],
    });
    return rowCount === 1;
  }

  /** After the head row is locked, so the events the statement deletes are all that were committed. */
  async drop(webhookId: string): Promise<void> {
    await transaction(this.pool, async (session) => {
      await session.query({ ...LOCK_FOR_DROP, values: [webhookId] });
      await session.query({ ...DROP, values: [webhookId] });
    });
  }
}

/** Leases the heads of the webhooks locked, in the order they were due. */
async function leased(session: Session, due: { webhook_id: string }[], until: number): Promise<Claim[]> {
  const { rows } = await session.query<LeasedRow>({
    ...LEASE,
    values: [due.map((row) => row.webhook_id), `${randomUUID()}:`, until],
  });
  const claims: { n: number; claim: Claim }[] = [];
  for (const row of rows) {
    if (row.delivery_id === null || row.lease === null) continue;
    claims.push({
      n: row.n,
      claim: {
        webhookId: row.webhook_id,
        event: { id: row.delivery_id, type: row.type as WebhookEvent, body: row.body as string },
        attempts: row.attempts,
        firstAttemptAt: row.first_attempt_at,
        lease: row.lease,
      },
    });
  }
  return claims.sort((a, b) => a.n - b.n).map(({ claim }) => claim);
}
