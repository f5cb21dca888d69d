import type { Database, Statement } from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { AccountDetails, AccountStore, Erasure, ForgetResult } from '../ports.js';

/** A statement of one user's rows, by their id. */
type OfUser = Statement<[string]>;

/**
 * Everything about one user, erased in one transaction on the event loop's connection (as `forget`): a
 * history batch the write thread commits after it reads the moment it recorded.
 */
export class SqliteAccountStore implements AccountStore {
  private readonly eraseAll: (userId: Snowflake, at: number) => Erasure;
  private readonly keyOf: Statement<[string], number>;
  private readonly erasedAt: Statement<[string], number>;

  constructor(db: Database, forgetHistory: (userId: Snowflake, at: number) => ForgetResult) {
    const ofUser = (sql: string): OfUser => db.prepare(sql);
    const kvKeys = db.prepare('SELECT key FROM kv WHERE user_id = ? ORDER BY key').pluck() as Statement<
      [string],
      string
    >;
    const removeKv = ofUser('DELETE FROM kv WHERE user_id = ?');
    // The revision moves on with no keys left: an erasure is the KV's last write so far.
    const bumpKv = db
      .prepare(
        'UPDATE kv_revisions SET revision = revision + 1, bytes = 0 WHERE user_id = ? RETURNING revision',
      )
      .pluck() as Statement<[string], number>;
    const revision = db.prepare('SELECT revision FROM kv_revisions WHERE user_id = ?').pluck() as Statement<
      [string],
      number
    >;
    const removeKey = ofUser('DELETE FROM api_keys WHERE user_id = ?');
    const removePendingKey = ofUser('DELETE FROM api_keys_pending WHERE user_id = ?');
    const removeReadTokens = ofUser('DELETE FROM read_tokens WHERE user_id = ?');
    const webhookIds = db
      .prepare('SELECT id FROM webhooks WHERE user_id = ? ORDER BY created_at, id')
      .pluck() as Statement<[string], string>;
    const ofWebhook = (table: string): OfUser => db.prepare(`DELETE FROM ${table} WHERE webhook_id = ?`);
    const removeDeliveries = ofWebhook('webhook_deliveries');
    const removeQueued = ofWebhook('webhook_queue');
    const removeHead = ofWebhook('webhook_heads');
    const removeWebhooks = ofUser('DELETE FROM webhooks WHERE user_id = ?');
    const removePrivacy = ofUser('DELETE FROM privacy_settings WHERE user_id = ?');
    const removeProfile = ofUser('DELETE FROM profiles WHERE user_id = ?');

    this.eraseAll = db.transaction((userId: Snowflake, at: number): Erasure => {
      const keys = kvKeys.all(userId);
      removeKv.run(userId);
      const kvRevision = keys.length > 0 ? (bumpKv.get(userId) ?? 0) : (revision.get(userId) ?? 0);
      const apiKeys = removeKey.run(userId).changes + removePendingKey.run(userId).changes;
      const readTokens = removeReadTokens.run(userId).changes;
      const webhooks = webhookIds.all(userId);
      for (const id of webhooks) {
        removeDeliveries.run(id);
        removeQueued.run(id);
        removeHead.run(id);
      }
      removeWebhooks.run(userId);
      return {
        ...forgetHistory(userId, at),
        kvKeys: keys,
        kvRevision,
        apiKeys,
        readTokens,
        webhookIds: webhooks,
        privacySettings: removePrivacy.run(userId).changes > 0,
        profile: removeProfile.run(userId).changes > 0,
      };
    });
    this.keyOf = db.prepare('SELECT created_at FROM api_keys WHERE user_id = ?').pluck() as Statement<
      [string],
      number
    >;
    this.erasedAt = db
      .prepare('SELECT forgotten_at FROM history_forgotten WHERE user_id = ?')
      .pluck() as Statement<[string], number>;
  }

  async erase(userId: Snowflake, at: number): Promise<Erasure> {
    return this.eraseAll(userId, at);
  }

  async details(userId: Snowflake): Promise<AccountDetails> {
    const createdAt = this.keyOf.get(userId);
    return {
      key: createdAt === undefined ? null : { createdAt },
      historyErasedAt: this.erasedAt.get(userId) ?? null,
    };
  }
}
