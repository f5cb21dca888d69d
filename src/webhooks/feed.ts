import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { BusMessages } from '../bus/ports.js';
import type { WebhookEvent } from '../model/webhook.js';
import type { Metrics } from '../ops/metrics.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceChange } from '../presence/registry/registry.js';
import type { KvStore } from '../store/ports.js';
import type { WebhookQueue } from '../store/webhook-queue.js';
import type { WebhookDirectory } from './directory.js';
import { eventBody, eventsOfChange } from './events.js';

export interface WebhookFeedOptions {
  directory: WebhookDirectory;
  queue: WebhookQueue;
  /** Where a kv event's data is read: the KV as the write left it. */
  kv: Pick<KvStore, 'getKv'>;
  logger: Logger;
  metrics?: Metrics;
  /** Told when this node queued an event, to deliver it without waiting for the next poll. */
  queued?: () => void;
  /** Whether the user's settings hide their KV: then no `kv` event tells of it either. */
  hidesKv?: (userId: Snowflake) => boolean;
  now?: () => number;
}

/**
 * Turns changes into queued events, one per webhook that wants it. It hears each change once across the
 * deployment: the presence changes its node published (the registry's on one machine), and the KV writes
 * made on its node.
 */
export class WebhookFeed {
  private readonly now: () => number;

  constructor(private readonly options: WebhookFeedOptions) {
    this.now = options.now ?? Date.now;
  }

  readonly observe = (change: PresenceChange): void => {
    const { directory } = this.options;
    if (!directory.has(change.userId)) return;
    const wanted = (type: WebhookEvent) => directory.subscribed(change.userId, type).length > 0;
    for (const { type, data } of eventsOfChange(change, wanted)) {
      this.enqueue(change.userId, type, eventBody(type, change.userId, change.at, data));
    }
  };

  readonly kvWritten = (change: BusMessages['kv.changed']): void => {
    const { userId } = change;
    if (this.options.directory.subscribed(userId, 'kv').length === 0) return;
    if (this.options.hidesKv?.(userId)) return;
    const at = this.now();
    this.track(
      this.options.kv.getKv(userId).then(
        (state) => this.enqueue(userId, 'kv', eventBody('kv', userId, at, JSON.stringify(state.kv))),
        (error: unknown) =>
          this.options.logger.warn({ err: error, userId }, 'could not read the KV for its webhooks'),
      ),
    );
  };

  /**
   * Resolves once every event seen so far is queued (or has failed to be): shutdown waits for it before the
   * store closes, so a change seen in the last moments is not lost on the way to the queue.
   */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private readonly inFlight = new Set<Promise<unknown>>();

  private track(work: Promise<unknown>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private enqueue(userId: Snowflake, type: WebhookEvent, body: string): void {
    const { directory, queue, metrics, logger } = this.options;
    for (const webhookId of directory.subscribed(userId, type)) {
      this.track(
        queue.enqueue(webhookId, { id: randomUUID(), type, body }, this.now()).then(
          ({ collapsed, dropped }) => {
            metrics?.webhookDeliveries('collapsed', collapsed);
            metrics?.webhookDeliveries('dropped', dropped);
            this.options.queued?.();
          },
          (error: unknown) => logger.warn({ err: error, webhookId, type }, 'could not queue a webhook event'),
        ),
      );
    }
  }
}
