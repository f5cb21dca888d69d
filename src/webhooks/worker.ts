import type { Logger } from 'pino';
import type { DeliveryRecord, StoredWebhook } from '../model/webhook.js';
import type { Metrics } from '../ops/metrics.js';
import type { Snowflake } from '../presence/model.js';
import type { WebhookStore } from '../store/ports.js';
import type { Claim, WebhookQueue } from '../store/webhook-queue.js';
import { type Backoff, exponentialBackoff, MAX_FAILED_EVENTS, RETRY_WINDOW_MS } from './retry-policy.js';
import { DELIVERIES_KEPT } from './rules.js';
import type { AttemptResult, WebhookSender } from './sender.js';
import type { WebhookService } from './service.js';
import { signature } from './signer.js';

/** Deliveries one node makes at once, to different webhooks. */
export const DELIVERY_CONCURRENCY = 16;
/**
 * Deliveries one user's webhooks have in flight at once on a node: receivers that hang hold no more of
 * DELIVERY_CONCURRENCY than this, and the rest stays free for everyone else's.
 */
export const DELIVERIES_PER_USER = 2;
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
 * webhook gets its events in order; different webhooks are delivered side by side, at most
 * DELIVERIES_PER_USER of one user's at a time: a head taken past that is given back untried and passed
 * over until the user has one less in flight, so the free slots go to the other users in the order their
 * events fell due.
 */
export class DeliveryWorker {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perUser = new Map<Snowflake, number>();
  /** Webhooks given back because their user had its share in flight; emptied when it has less. */
  private readonly passedOver = new Map<Snowflake, Set<string>>();
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
    const { queue, store, logger } = this.options;
    let gaveBack: boolean;
    do {
      this.claimAgain = false;
      gaveBack = false;
      const free = DELIVERY_CONCURRENCY - this.inFlight.size;
      if (free <= 0) return;
      let claims: Claim[];
      try {
        claims = await queue.claim(this.now(), free, this.leaseMs, this.passing());
      } catch (error) {
        logger.warn({ err: error }, 'could not take webhook events');
        return;
      }
      const owners = await Promise.allSettled(claims.map((claim) => store.webhook(claim.webhookId)));
      for (const [index, claim] of claims.entries()) {
        const found = owners[index] as PromiseSettledResult<StoredWebhook | undefined>;
        if (found.status === 'rejected') {
          // Left leased: tried again once the lease runs out.
          logger.warn({ err: found.reason, webhookId: claim.webhookId }, 'webhook delivery failed');
          continue;
        }
        const webhook = found.value?.disabledAt === null ? found.value : undefined;
        if (webhook && (this.perUser.get(webhook.userId) ?? 0) >= DELIVERIES_PER_USER) {
          await this.giveBack(claim, webhook.userId);
          gaveBack = true;
        } else {
          this.track(claim, webhook);
        }
      }
    } while ((this.claimAgain || gaveBack) && !this.closed);
  }

  /** Every webhook passed over now: those of users with their share in flight. */
  private passing(): string[] {
    return [...this.passedOver.values()].flatMap((webhooks) => [...webhooks]);
  }

  private async giveBack(claim: Claim, userId: Snowflake): Promise<void> {
    const passed = this.passedOver.get(userId) ?? new Set<string>();
    this.passedOver.set(userId, passed.add(claim.webhookId));
    await this.options.queue.release(claim, this.now()).catch((error: unknown) => {
      // Left leased: due again once the lease runs out.
      this.options.logger.warn(
        { err: error, webhookId: claim.webhookId },
        'could not give a webhook event back',
      );
    });
  }

  /** Delivers the claim's head to the webhook, or drops its queue when the webhook is gone or disabled. */
  private track(claim: Claim, webhook: StoredWebhook | undefined): void {
    const userId = webhook?.userId;
    if (userId !== undefined) this.perUser.set(userId, (this.perUser.get(userId) ?? 0) + 1);
    const delivery = (webhook ? this.deliver(webhook, claim) : this.dropQueue(claim))
      .catch((error: unknown) => {
        // Left leased: retried once the lease runs out.
        this.options.logger.warn({ err: error, webhookId: claim.webhookId }, 'webhook delivery failed');
      })
      .finally(() => {
        this.inFlight.delete(delivery);
        if (userId !== undefined) this.done(userId);
        // The webhook's next event, if any, is due now; so are the user's passed over.
        void this.poll();
      });
    this.inFlight.add(delivery);
  }

  private done(userId: Snowflake): void {
    const left = (this.perUser.get(userId) ?? 1) - 1;
    if (left === 0) this.perUser.delete(userId);
    else this.perUser.set(userId, left);
    if (left < DELIVERIES_PER_USER) this.passedOver.delete(userId);
  }

  private async dropQueue(claim: Claim): Promise<void> {
    await this.options.queue.drop(claim.webhookId);
    this.options.metrics?.webhookDeliveries('dropped');
  }

  private async deliver(webhook: StoredWebhook, claim: Claim): Promise<void> {
    const { queue, store, metrics } = this.options;
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
