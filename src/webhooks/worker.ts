import type { Logger } from 'pino';
import type { Metrics } from '../ops/metrics.js';
import type { DeliveryRecord, StoredWebhook } from '../presence/webhook.js';
import type { WebhookStore } from '../store/ports.js';
import type { Claim, WebhookQueue } from '../store/webhook-queue.js';
import { type Backoff, exponentialBackoff, MAX_FAILED_EVENTS, RETRY_WINDOW_MS } from './retry-policy.js';
import { DELIVERIES_KEPT } from './rules.js';
import type { AttemptResult, WebhookSender } from './sender.js';
import type { WebhookService } from './service.js';
import { signature } from './signer.js';

/** Deliveries one node makes at once, to different webhooks. */
export const DELIVERY_CONCURRENCY = 16;
/** How often a node looks for events due (retries, and events another node queued). */
export const POLL_MS = 1_000;
/**
 * A webhook is leased to one worker for this long per attempt: longer than an attempt can take, so only
 * a worker that died (or lost Redis) lets it pass to another.
 */
export const LEASE_MS = 15_000;

export interface DeliveryWorkerOptions {
  queue: WebhookQueue;
  store: WebhookStore;
  sender: Pick<WebhookSender, 'send'>;
  webhooks: Pick<WebhookService, 'disable'>;
  logger: Logger;
  metrics?: Metrics;
  /** Tests drive time and waits. */
  now?: () => number;
  backoff?: Backoff;
  pollMs?: number;
  leaseMs?: number;
}

/**
 * Delivers queued events: takes the webhooks whose head is due, sends each head, then settles it
 * (delivered, or given up) or schedules its retry. A webhook's next event waits for its head, so each
 * webhook gets its events in order; different webhooks are delivered side by side.
 */
export class DeliveryWorker {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly now: () => number;
  private readonly backoff: Backoff;
  private readonly leaseMs: number;
  private claiming: Promise<void> | null = null;
  private claimAgain = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.now = options.now ?? Date.now;
    this.backoff = options.backoff ?? exponentialBackoff;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
  }

  /** Polls for due events until closed. */
  start(): void {
    this.timer = setInterval(() => void this.poll(), this.options.pollMs ?? POLL_MS);
    this.timer.unref();
    void this.poll();
  }

  /**
   * Takes what is due now and starts delivering it; resolves once taken (deliveries go on). A call while
   * one is taking makes that one look again when done.
   */
  poll(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.claiming) {
      this.claimAgain = true;
      return this.claiming;
    }
    this.claiming = this.claimWhileAsked().finally(() => {
      this.claiming = null;
    });
    return this.claiming;
  }

  /** Resolves once nothing is being taken or delivered. */
  async idle(): Promise<void> {
    while (this.claiming || this.inFlight.size > 0) {
      await Promise.allSettled([this.claiming, ...this.inFlight]);
    }
  }

  /** Stops taking events and waits for the deliveries under way. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.idle();
  }

  private async claimWhileAsked(): Promise<void> {
    do {
      this.claimAgain = false;
      const free = DELIVERY_CONCURRENCY - this.inFlight.size;
      if (free <= 0) return;
      let claims: Claim[];
      try {
        claims = await this.options.queue.claim(this.now(), free, this.leaseMs);
      } catch (error) {
        this.options.logger.warn({ err: error }, 'could not take webhook events');
        return;
      }
      for (const claim of claims) this.track(claim);
    } while (this.claimAgain && !this.closed);
  }

  private track(claim: Claim): void {
    const delivery = this.deliver(claim)
      .catch((error: unknown) => {
        // Left leased: retried once the lease runs out.
        this.options.logger.warn({ err: error, webhookId: claim.webhookId }, 'webhook delivery failed');
      })
      .finally(() => {
        this.inFlight.delete(delivery);
        // The webhook's next event, if any, is due now.
        void this.poll();
      });
    this.inFlight.add(delivery);
  }

  private async deliver(claim: Claim): Promise<void> {
    const { queue, store, metrics } = this.options;
    const webhook = await store.webhook(claim.webhookId);
    if (!webhook || webhook.disabledAt !== null) {
      await queue.drop(claim.webhookId);
      metrics?.webhookDeliveries('dropped');
      return;
    }
    const startedAt = this.now();
    const attempts = claim.attempts + 1;
    const firstAttemptAt = claim.firstAttemptAt ?? startedAt;
    const result = await this.send(webhook, claim, startedAt);
    const record: DeliveryRecord = {
      id: claim.event.id,
      type: claim.event.type,
      status: 'delivered',
      attempts,
      at: startedAt,
      response_code: result.status,
      error: result.error,
      next_attempt_at: null,
    };
    if (result.delivered) {
      await store.recordDelivery(webhook.id, record, DELIVERIES_KEPT);
      await queue.settle(claim, true, this.now());
      metrics?.webhookDeliveries('delivered');
      return;
    }
    const retryAt = result.retryable ? this.now() + this.backoff(attempts) : null;
    if (retryAt !== null && retryAt - firstAttemptAt <= RETRY_WINDOW_MS) {
      await store.recordDelivery(
        webhook.id,
        { ...record, status: 'retrying', next_attempt_at: retryAt },
        DELIVERIES_KEPT,
      );
      await queue.retryLater(claim, attempts, firstAttemptAt, retryAt);
      metrics?.webhookDeliveries('retried');
      return;
    }
    await store.recordDelivery(webhook.id, { ...record, status: 'failed' }, DELIVERIES_KEPT);
    const failures = await queue.settle(claim, false, this.now());
    metrics?.webhookDeliveries('failed');
    if (result.retryable) {
      await this.options.webhooks.disable(
        webhook,
        `an event could not be delivered for an hour (${result.error})`,
      );
    } else if (failures !== null && failures >= MAX_FAILED_EVENTS) {
      await this.options.webhooks.disable(
        webhook,
        `${failures} events in a row were refused (${result.error})`,
      );
    }
  }

  private send(webhook: StoredWebhook, claim: Claim, at: number): Promise<AttemptResult> {
    const { body, id, type } = claim.event;
    return this.options.sender.send(
      webhook.url,
      {
        'content-type': 'application/json',
        'presently-delivery': id,
        'presently-event': type,
        'presently-signature': signature(webhook.secret, body, Math.floor(at / 1000)),
      },
      body,
    );
  }
}
