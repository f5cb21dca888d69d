import type { Pool } from 'pg';
import type { DeliveryRecord, StoredWebhook } from '../../model/webhook.js';
import type { Snowflake } from '../../presence/model.js';
import type { WebhookStore } from '../ports.js';
import { WEBHOOK_COLUMNS, type WebhookRow, webhookOf } from '../webhook-row.js';
import { query, transaction } from './queries.js';

/** Adds of one user take turns on a lock of their own (the one-key space, apart from ADVISORY_LOCKS). */
const LOCK_USER = {
  name: 'webhooks.lock-user',
  text: "SELECT pg_advisory_xact_lock(hashtext('webhooks:' || $1))",
};
const COUNT = {
  name: 'webhooks.count',
  text: 'SELECT count(*)::integer AS count FROM webhooks WHERE user_id = $1',
};
const INSERT = {
  name: 'webhooks.insert',
  text: `INSERT INTO webhooks (id, user_id, url, events, secret, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
};
const BY_USER = {
  name: 'webhooks.by-user',
  text: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE user_id = $1 ORDER BY created_at, id`,
};
const BY_ID = { name: 'webhooks.by-id', text: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1` };
const ACTIVE = {
  name: 'webhooks.active',
  text: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE disabled_at IS NULL`,
};
const REMOVE = {
  name: 'webhooks.remove',
  text: `WITH gone AS (DELETE FROM webhook_deliveries WHERE webhook_id = $1)
         DELETE FROM webhooks WHERE id = $1`,
};
const DISABLE = {
  name: 'webhooks.disable',
  text: 'UPDATE webhooks SET disabled_at = $2, disabled_reason = $3 WHERE id = $1 AND disabled_at IS NULL',
};
// An attempt at the newest delivery (a retry) replaces it where it is: its row keeps its place.
const RECORD = {
  name: 'webhooks.record',
  text: `INSERT INTO webhook_deliveries (webhook_id, delivery_id, record)
         SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = $1)
         ON CONFLICT (webhook_id, delivery_id) DO UPDATE SET record = excluded.record`,
};
const TRIM = {
  name: 'webhooks.trim',
  text: `DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND seq <= (
           SELECT seq FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`,
};
const RECENT = {
  name: 'webhooks.recent',
  text: 'SELECT record FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq DESC LIMIT $2',
};

export class PostgresWebhookStore implements WebhookStore {
  constructor(private readonly pool: Pool) {}

  async addWebhook(webhook: StoredWebhook, maxPerUser: number): Promise<boolean> {
    return transaction(this.pool, async (client) => {
      await client.query({ ...LOCK_USER, values: [webhook.userId] });
      const { rows } = await client.query<{ count: number }>({ ...COUNT, values: [webhook.userId] });
      if ((rows[0]?.count ?? 0) >= maxPerUser) return false;
      const { id, userId, url, events, secret, createdAt } = webhook;
      await client.query({ ...INSERT, values: [id, userId, url, JSON.stringify(events), secret, createdAt] });
      return true;
    });
  }

  async webhooksOf(userId: Snowflake): Promise<StoredWebhook[]> {
    return (await query<WebhookRow>(this.pool, { ...BY_USER, values: [userId] })).rows.map(webhookOf);
  }

  async webhook(id: string): Promise<StoredWebhook | undefined> {
    const row = (await query<WebhookRow>(this.pool, { ...BY_ID, values: [id] })).rows[0];
    return row ? webhookOf(row) : undefined;
  }

  async activeWebhooks(): Promise<StoredWebhook[]> {
    return (await query<WebhookRow>(this.pool, ACTIVE)).rows.map(webhookOf);
  }

  async removeWebhook(id: string): Promise<boolean> {
    return ((await query(this.pool, { ...REMOVE, values: [id] })).rowCount ?? 0) > 0;
  }

  async disableWebhook(id: string, at: number, reason: string): Promise<boolean> {
    return ((await query(this.pool, { ...DISABLE, values: [id, at, reason] })).rowCount ?? 0) > 0;
  }

  async recordDelivery(webhookId: string, record: DeliveryRecord, keep: number): Promise<void> {
    await query(this.pool, { ...RECORD, values: [webhookId, record.id, JSON.stringify(record)] });
    await query(this.pool, { ...TRIM, values: [webhookId, keep] });
  }

  async deliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    const { rows } = await query<{ record: string }>(this.pool, { ...RECENT, values: [webhookId, limit] });
    return rows.map((row) => JSON.parse(row.record) as DeliveryRecord);
  }
}
