import type { Database, Statement } from 'better-sqlite3';
import type { DeliveryRecord, StoredWebhook } from '../../model/webhook.js';
import type { Snowflake } from '../../presence/model.js';
import type { WebhookStore } from '../ports.js';
import { WEBHOOK_COLUMNS, type WebhookRow, webhookOf } from '../webhook-row.js';

export class SqliteWebhookStore implements WebhookStore {
  private readonly insert: Statement<[string, string, string, string, string, number]>;
  private readonly countOf: Statement<[string], number>;
  private readonly byUser: Statement<[string], WebhookRow>;
  private readonly byId: Statement<[string], WebhookRow>;
  private readonly active: Statement<[], WebhookRow>;
  private readonly remove: Statement<[string]>;
  private readonly removeDeliveries: Statement<[string]>;
  private readonly disable: Statement<[number, string, string]>;
  private readonly upsertDelivery: Statement<[string, string, string]>;
  private readonly trimDeliveries: Statement<[string, string, number]>;
  private readonly recent: Statement<[string, number], { record: string }>;
  private readonly add: (webhook: StoredWebhook, maxPerUser: number) => boolean;
  private readonly record: (webhookId: string, record: DeliveryRecord, keep: number) => void;

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      `INSERT INTO webhooks (id, user_id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.countOf = db.prepare('SELECT count(*) FROM webhooks WHERE user_id = ?').pluck() as Statement<
      [string],
      number
    >;
    this.byUser = db.prepare(
      `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE user_id = ? ORDER BY created_at, id`,
    );
    this.byId = db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?`);
    this.active = db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE disabled_at IS NULL`);
    this.remove = db.prepare('DELETE FROM webhooks WHERE id = ?');
    this.removeDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE webhook_id = ?');
    this.disable = db.prepare(
      'UPDATE webhooks SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL',
    );
    this.upsertDelivery = db.prepare(
      `INSERT INTO webhook_deliveries (webhook_id, delivery_id, record) VALUES (?, ?, ?)
       ON CONFLICT (webhook_id, delivery_id) DO UPDATE SET record = excluded.record`,
    );
    this.trimDeliveries = db.prepare(
      `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND seq <= (
         SELECT seq FROM webhook_deliveries WHERE webhook_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
    );
    this.recent = db.prepare(
      'SELECT record FROM webhook_deliveries WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?',
    );
    this.add = db.transaction((webhook: StoredWebhook, maxPerUser: number) => {
      if ((this.countOf.get(webhook.userId) ?? 0) >= maxPerUser) return false;
      this.insert.run(
        webhook.id,
        webhook.userId,
        webhook.url,
        JSON.stringify(webhook.events),
        webhook.secret,
        webhook.createdAt,
      );
      return true;
    });
    this.record = db.transaction((webhookId: string, record: DeliveryRecord, keep: number) => {
      if (!this.byId.get(webhookId)) return;
      this.upsertDelivery.run(webhookId, record.id, JSON.stringify(record));
      this.trimDeliveries.run(webhookId, webhookId, keep);
    });
  }

  async addWebhook(webhook: StoredWebhook, maxPerUser: number): Promise<boolean> {
    return this.add(webhook, maxPerUser);
  }

  async webhooksOf(userId: Snowflake): Promise<StoredWebhook[]> {
    return this.byUser.all(userId).map(webhookOf);
  }

  async webhook(id: string): Promise<StoredWebhook | undefined> {
    const row = this.byId.get(id);
    return row ? webhookOf(row) : undefined;
  }

  async activeWebhooks(): Promise<StoredWebhook[]> {
    return this.active.all().map(webhookOf);
  }

  async removeWebhook(id: string): Promise<boolean> {
    return this.db.transaction(() => {
      this.removeDeliveries.run(id);
      return this.remove.run(id).changes > 0;
    })();
  }

  async disableWebhook(id: string, at: number, reason: string): Promise<boolean> {
    return this.disable.run(at, reason, id).changes > 0;
  }

  async recordDelivery(webhookId: string, record: DeliveryRecord, keep: number): Promise<void> {
    this.record(webhookId, record, keep);
  }

  async deliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.recent.all(webhookId, limit).map((row) => JSON.parse(row.record) as DeliveryRecord);
  }
}
