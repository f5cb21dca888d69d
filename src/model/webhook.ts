import type { Snowflake } from '../presence/model.js';

/** What a webhook can be told of. */
export const WEBHOOK_EVENTS = ['presence', 'now_playing', 'kv'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** A webhook as the store keeps it, with the secret that signs its deliveries. */
export interface StoredWebhook {
  id: string;
  userId: Snowflake;
  url: string;
  events: WebhookEvent[];
  secret: string;
  createdAt: number;
  /** When deliveries stopped for good, and why; null while it delivers. */
  disabledAt: number | null;
  disabledReason: string | null;
}

/** `retrying`: the last attempt failed and another is due at `next_attempt_at`. */
export type DeliveryStatus = 'delivered' | 'retrying' | 'failed';

/** One event's delivery to one webhook, as `GET /v1/users/@me/webhooks` shows it. */
export interface DeliveryRecord {
  /** The delivery id, sent in `Presently-Delivery` with every attempt. */
  id: string;
  type: WebhookEvent;
  status: DeliveryStatus;
  attempts: number;
  /** When the last attempt was made (epoch ms). */
  at: number;
  /** The receiver's HTTP status, when it answered. */
  response_code: number | null;
  /** Why the last attempt failed, when it did. */
  error: string | null;
  next_attempt_at: number | null;
}

/** A webhook as its owner reads it: never the secret. */
export interface WebhookView {
  id: string;
  url: string;
  events: WebhookEvent[];
  created_at: number;
  disabled_at: number | null;
  disabled_reason: string | null;
  /** The most recent deliveries, newest first. */
  deliveries: DeliveryRecord[];
}

/** A webhook just added: the only answer that carries the secret. */
export interface CreatedWebhook {
  id: string;
  url: string;
  events: WebhookEvent[];
  secret: string;
  created_at: number;
}
