import { randomUUID } from 'node:crypto';
import type { Database, Statement } from 'better-sqlite3';
import type { WebhookEvent } from '../../model/webhook.js';
import {
  type Claim,
  COLLAPSING_EVENTS,
  type EnqueueOutcome,
  MAX_QUEUED_EVENTS,
  type QueuedEvent,
  type WebhookQueue,
} from '../webhook-queue.js';

interface HeadRow {
  head_seq: number | null;
  attempts: number;
  first_attempt_at: number | null;
  lease: string | null;
  failures: number;
}

interface EventRow {
  seq: number;
  delivery_id: string;
  type: WebhookEvent;
  body: string;
}

/**
 * The queue of a single process, in the embedded store (see its migrations): events wait across a
 * restart, and a lease the process held when it stopped runs out like any other.
 */
export class SqliteWebhookQueue implements WebhookQueue {
  private readonly statements: {
    collapse: Statement<[{ webhook: string; type: string }]>;
    count: Statement<[string], number>;
    dropOldest: Statement<[{ webhook: string; count: number }]>;
    insert: Statement<[string, string, string, string]>;
    due: Statement<[number, string, number], { webhook_id: string }>;
    head: Statement<[string], EventRow>;
    state: Statement<[string], HeadRow>;
    idle: Statement<[string]>;
    markDue: Statement<[string, number]>;
    lease: Statement<[{ seq: number; lease: string; due: number; webhook: string }]>;
    remove: Statement<[number]>;
    settle: Statement<[{ failures: number; now: number; webhook: string }]>;
    retry: Statement<[number, number, number, string]>;
    release: Statement<[number, string]>;
    dropQueue: Statement<[string]>;
    dropHead: Statement<[string]>;
  };
  private readonly transactions: {
    enqueue: (webhookId: string, event: QueuedEvent, now: number) => EnqueueOutcome;
    claim: (now: number, limit: number, leaseMs: number, passing: string) => Claim[];
    settle: (claim: Claim, delivered: boolean, now: number) => number | null;
  };

  constructor(private readonly db: Database) {
    // The head is the webhook's oldest row: it may be in flight, so only rows after it are touched.
    this.statements = {
      collapse: db.prepare(
        `DELETE FROM webhook_queue WHERE webhook_id = @webhook AND type = @type
           AND seq > (SELECT min(seq) FROM webhook_queue WHERE webhook_id = @webhook)`,
      ),
      count: db.prepare('SELECT count(*) FROM webhook_queue WHERE webhook_id = ?').pluck() as Statement<
        [string],
        number
      >,
      dropOldest: db.prepare(
        `DELETE FROM webhook_queue WHERE seq IN (
           SELECT seq FROM webhook_queue WHERE webhook_id = @webhook
             AND seq > (SELECT min(seq) FROM webhook_queue WHERE webhook_id = @webhook)
           ORDER BY seq LIMIT @count)`,
      ),
      insert: db.prepare(
        'INSERT INTO webhook_queue (webhook_id, delivery_id, type, body) VALUES (?, ?, ?, ?)',
      ),
      due: db.prepare(
        `SELECT webhook_id FROM webhook_heads
         WHERE due_at <= ? AND webhook_id NOT IN (SELECT value FROM json_each(?)) ORDER BY due_at LIMIT ?`,
      ),
      head: db.prepare(
        'SELECT seq, delivery_id, type, body FROM webhook_queue WHERE webhook_id = ? ORDER BY seq LIMIT 1',
      ),
      state: db.prepare(
        'SELECT head_seq, attempts, first_attempt_at, lease, failures FROM webhook_heads WHERE webhook_id = ?',
      ),
      idle: db.prepare('UPDATE webhook_heads SET due_at = NULL, lease = NULL WHERE webhook_id = ?'),
      markDue: db.prepare(
        `INSERT INTO webhook_heads (webhook_id, due_at) VALUES (?, ?)
         ON CONFLICT (webhook_id) DO UPDATE SET due_at = coalesce(due_at, excluded.due_at)`,
      ),
      // A head not seen before starts its attempts from none.
      lease: db.prepare(
        `UPDATE webhook_heads SET
           attempts = CASE WHEN head_seq IS @seq THEN attempts ELSE 0 END,
           first_attempt_at = CASE WHEN head_seq IS @seq THEN first_attempt_at ELSE NULL END,
           head_seq = @seq, lease = @lease, due_at = @due
         WHERE webhook_id = @webhook`,
      ),
      remove: db.prepare('DELETE FROM webhook_queue WHERE seq = ?'),
      settle: db.prepare(
        `UPDATE webhook_heads SET head_seq = NULL, attempts = 0, first_attempt_at = NULL, lease = NULL,
           failures = @failures,
           due_at = CASE WHEN EXISTS (SELECT 1 FROM webhook_queue WHERE webhook_id = @webhook) THEN @now END
         WHERE webhook_id = @webhook`,
      ),
      retry: db.prepare(
        'UPDATE webhook_heads SET attempts = ?, first_attempt_at = ?, due_at = ?, lease = NULL WHERE webhook_id = ?',
      ),
      release: db.prepare('UPDATE webhook_heads SET due_at = ?, lease = NULL WHERE webhook_id = ?'),
      dropQueue: db.prepare('DELETE FROM webhook_queue WHERE webhook_id = ?'),
      dropHead: db.prepare('DELETE FROM webhook_heads WHERE webhook_id = ?'),
    };
    this.transactions = {
      enqueue: db.transaction((webhookId, event, now) => this.enqueueNow(webhookId, event, now)),
      claim: db.transaction((now, limit, leaseMs, passing) => this.claimNow(now, limit, leaseMs, passing)),
      settle: db.transaction((claim, delivered, now) => this.settleNow(claim, delivered, now)),
    };
  }

  async enqueue(webhookId: string, event: QueuedEvent, now: number): Promise<EnqueueOutcome> {
    return this.transactions.enqueue(webhookId, event, now);
  }

  async claim(
    now: number,
    limit: number,
    leaseMs: number,
    passing: readonly string[] = [],
  ): Promise<Claim[]> {
    const passed = JSON.stringify(passing);
    // Looked for first outside a transaction, which in WAL never waits: a poll that finds nothing due
    // must not block the event loop on the write lock while the write thread commits.
    if (this.statements.due.get(now, passed, 1) === undefined) return [];
    return this.transactions.claim(now, limit, leaseMs, passed);
  }

  async settle(claim: Claim, delivered: boolean, now: number): Promise<number | null> {
    return this.transactions.settle(claim, delivered, now);
  }

  async release(claim: Claim, now: number): Promise<boolean> {
    return this.db.transaction(() => {
      if (!this.holds(claim)) return false;
      this.statements.release.run(now, claim.webhookId);
      return true;
    })();
  }

  async retryLater(claim: Claim, attempts: number, firstAttemptAt: number, dueAt: number): Promise<boolean> {
    return this.db.transaction(() => {
      if (!this.holds(claim)) return false;
      this.statements.retry.run(attempts, firstAttemptAt, dueAt, claim.webhookId);
      return true;
    })();
  }

  async drop(webhookId: string): Promise<void> {
    this.db.transaction(() => {
      this.statements.dropQueue.run(webhookId);
      this.statements.dropHead.run(webhookId);
    })();
  }

  private enqueueNow(webhookId: string, event: QueuedEvent, now: number): EnqueueOutcome {
    const { statements } = this;
    const collapsed = COLLAPSING_EVENTS.has(event.type)
      ? statements.collapse.run({ webhook: webhookId, type: event.type }).changes
      : 0;
    const excess = (statements.count.get(webhookId) ?? 0) - MAX_QUEUED_EVENTS + 1;
    const dropped = excess > 0 ? statements.dropOldest.run({ webhook: webhookId, count: excess }).changes : 0;
    statements.insert.run(webhookId, event.id, event.type, event.body);
    statements.markDue.run(webhookId, now);
    return { collapsed, dropped };
  }

  private claimNow(now: number, limit: number, leaseMs: number, passing: string): Claim[] {
    const { statements } = this;
    const claims: Claim[] = [];
    for (const { webhook_id: webhookId } of statements.due.all(now, passing, limit)) {
      const head = statements.head.get(webhookId);
      if (!head) {
        statements.idle.run(webhookId);
        continue;
      }
      const state = statements.state.get(webhookId) as HeadRow;
      const fresh = state.head_seq !== head.seq;
      const lease = randomUUID();
      statements.lease.run({ seq: head.seq, lease, due: now + leaseMs, webhook: webhookId });
      claims.push({
        webhookId,
        event: { id: head.delivery_id, type: head.type, body: head.body },
        attempts: fresh ? 0 : state.attempts,
        firstAttemptAt: fresh ? null : state.first_attempt_at,
        lease,
      });
    }
    return claims;
  }

  private settleNow(claim: Claim, delivered: boolean, now: number): number | null {
    const state = this.holds(claim);
    if (!state) return null;
    this.statements.remove.run(state.head_seq as number);
    const failures = delivered ? 0 : state.failures + 1;
    this.statements.settle.run({ failures, now, webhook: claim.webhookId });
    return failures;
  }

  /** The head's state, if `claim` still holds its lease. */
  private holds(claim: Claim): HeadRow | undefined {
    const state = this.statements.state.get(claim.webhookId);
    return state?.lease === claim.lease ? state : undefined;
  }
}
