import type { WebhookEvent } from '../model/webhook.js';

/** An event waiting for one webhook, as it will be sent. */
export interface QueuedEvent {
  /** The delivery id: the same on every attempt, so a receiver can tell a retry from a new event. */
  id: string;
  type: WebhookEvent;
  /** The JSON body, exactly as it is sent and signed. */
  body: string;
}

/**
 * The event at the head of a webhook's queue, leased to one worker: until the worker settles it or the
 * lease runs out, no other worker (on any node) is handed this webhook, so its events go out in order.
 */
export interface Claim {
  webhookId: string;
  event: QueuedEvent;
  /** Attempts made before this one, and when the first of them was (epoch ms). */
  attempts: number;
  firstAttemptAt: number | null;
  /** Proves the lease: settling with one that ran out (another worker took over) changes nothing. */
  lease: string;
}

export interface EnqueueOutcome {
  /** Older events of the same kind this one replaced in the backlog. */
  collapsed: number;
  /** Events dropped because the backlog was full. */
  dropped: number;
}

/** Events that a new one of the same type replaces while they wait: each carries the whole state. */
export const COLLAPSING_EVENTS: ReadonlySet<WebhookEvent> = new Set(['presence', 'kv']);

/** Events one webhook may have waiting; past it the oldest waiting behind the head is dropped. */
export const MAX_QUEUED_EVENTS = 100;

/**
 * Each webhook's events in order, and which webhooks have one due: the port webhooks/ delivers from, its
 * adapters in sqlite/, postgres/ and redis/ (webhook-queue.ts). The SQLite and PostgreSQL adapters serve
 * one process; the Redis adapter is shared by every node, each event handed to one worker at a time across
 * them.
 */
export interface WebhookQueue {
  /**
   * Appends an event to the webhook's queue. A `presence` or `kv` event replaces those of its type waiting
   * behind the head (never the head itself, which may be in flight).
   */
  enqueue(webhookId: string, event: QueuedEvent, now: number): Promise<EnqueueOutcome>;
  /**
   * Leases up to `limit` webhooks whose head is due, for `leaseMs`, and hands their heads over, oldest due
   * first; those in `passing` are left due as they are.
   */
  claim(now: number, limit: number, leaseMs: number, passing?: readonly string[]): Promise<Claim[]>;
  /**
   * The head was delivered, or given up: it leaves the queue and the next event is due at once. Resolves
   * with the webhook's events given up in a row (0 after a delivery), or null when the lease was lost.
   */
  settle(claim: Claim, delivered: boolean, now: number): Promise<number | null>;
  /** Gives the head back untried, due at `now` with its attempts as they were; false when the lease was lost. */
  release(claim: Claim, now: number): Promise<boolean>;
  /** The head failed and is tried again at `dueAt`; false when the lease was lost. */
  retryLater(claim: Claim, attempts: number, firstAttemptAt: number, dueAt: number): Promise<boolean>;
  /** Forgets everything queued for the webhook (removed or disabled). */
  drop(webhookId: string): Promise<void>;
}
