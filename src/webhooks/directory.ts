import type { StoredWebhook, WebhookEvent } from '../model/webhook.js';
import type { Snowflake } from '../presence/model.js';
import type { WebhookStore } from '../store/ports.js';

interface Subscription {
  id: string;
  events: readonly WebhookEvent[];
}

/**
 * This node's view of which users have active webhooks, and for what: every presence change asks it, so
 * it is a map in memory, and only users it names cost anything more. It is read from the store at start
 * and re-read for a user whenever their webhooks change (on any node: `webhooks.changed` on the bus).
 */
export class WebhookDirectory {
  private byUser = new Map<Snowflake, Subscription[]>();
  /** Re-reads of a user, one after another, so the last one to finish read the newest state. */
  private readonly reading = new Map<Snowflake, Promise<void>>();

  constructor(private readonly store: WebhookStore) {}

  /** Every active webhook, as the store has them now. */
  async load(): Promise<void> {
    const byUser = new Map<Snowflake, Subscription[]>();
    for (const webhook of await this.store.activeWebhooks()) {
      byUser.set(webhook.userId, [...(byUser.get(webhook.userId) ?? []), subscriptionOf(webhook)]);
    }
    this.byUser = byUser;
  }

  /** Re-reads the user's webhooks; resolves once this node sees what the store held when it was called. */
  refresh(userId: Snowflake): Promise<void> {
    const previous = this.reading.get(userId) ?? Promise.resolve();
    const next = previous.then(async () => {
      const active = (await this.store.webhooksOf(userId)).filter((webhook) => webhook.disabledAt === null);
      if (active.length === 0) this.byUser.delete(userId);
      else this.byUser.set(userId, active.map(subscriptionOf));
    });
    this.reading.set(userId, next);
    const forget = () => {
      if (this.reading.get(userId) === next) this.reading.delete(userId);
    };
    next.then(forget, forget);
    return next;
  }

  has(userId: Snowflake): boolean {
    return this.byUser.has(userId);
  }

  /** The ids of the user's webhooks that want `type`. */
  subscribed(userId: Snowflake, type: WebhookEvent): string[] {
    const subscriptions = this.byUser.get(userId) ?? [];
    return subscriptions.filter((entry) => entry.events.includes(type)).map((entry) => entry.id);
  }
}

function subscriptionOf(webhook: StoredWebhook): Subscription {
  return { id: webhook.id, events: webhook.events };
}
