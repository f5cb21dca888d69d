import type { StoredWebhook, WebhookEvent } from '../model/webhook.js';

/** A webhook as the SQL stores keep it: one row, its events as JSON text. */
export interface WebhookRow {
  id: string;
  user_id: string;
  url: string;
  events: string;
  secret: string;
  created_at: number;
  disabled_at: number | null;
  disabled_reason: string | null;
}

export const WEBHOOK_COLUMNS = 'id, user_id, url, events, secret, created_at, disabled_at, disabled_reason';

export function webhookOf(row: WebhookRow): StoredWebhook {
  return {
    id: row.id,
    userId: row.user_id,
    url: row.url,
    events: JSON.parse(row.events) as WebhookEvent[],
    secret: row.secret,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
  };
}
