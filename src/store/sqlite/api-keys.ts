import type { Database, Statement } from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { ApiKeyStore } from '../ports.js';

type Found = { user_id: string; key_hash: Buffer };

export class SqliteApiKeyStore implements ApiKeyStore {
  private readonly upsert: Statement<[string, Buffer, number]>;
  private readonly upsertPending: Statement<[string, Buffer, number, number]>;
  private readonly takePending: Statement<[string, Buffer, number]>;
  private readonly removePending: Statement<[string, Buffer]>;
  private readonly remove: Statement<[Buffer]>;
  private readonly removePendingHash: Statement<[Buffer]>;
  private readonly select: Statement<[Buffer, Buffer, number], Found>;
  private readonly activate: (userId: Snowflake, hash: Buffer, now: number) => boolean;
  private readonly revokeAll: (userId: Snowflake, now: number) => number;

  constructor(db: Database) {
    this.upsert = db.prepare(
      `INSERT INTO api_keys (user_id, key_hash, created_at) VALUES (?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at`,
    );
    this.upsertPending = db.prepare(
      `INSERT INTO api_keys_pending (user_id, key_hash, created_at, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at,
         expires_at = excluded.expires_at`,
    );
    this.takePending = db.prepare(
      'DELETE FROM api_keys_pending WHERE user_id = ? AND key_hash = ? AND expires_at > ?',
    );
    this.removePending = db.prepare('DELETE FROM api_keys_pending WHERE user_id = ? AND key_hash = ?');
    this.remove = db.prepare('DELETE FROM api_keys WHERE key_hash = ?');
    this.removePendingHash = db.prepare('DELETE FROM api_keys_pending WHERE key_hash = ?');
    this.select = db.prepare(
      `SELECT user_id, key_hash FROM api_keys WHERE key_hash = ?
       UNION ALL SELECT user_id, key_hash FROM api_keys_pending WHERE key_hash = ? AND expires_at > ?`,
    );
    this.activate = db.transaction((userId: Snowflake, hash: Buffer, now: number) => {
      if (this.takePending.run(userId, hash, now).changes === 0) return false;
      this.upsert.run(userId, hash, now);
      return true;
    });
    const live = db.prepare('DELETE FROM api_keys WHERE user_id = ?');
    const pendingLeft = db
      .prepare('SELECT COUNT(*) FROM api_keys_pending WHERE user_id = ? AND expires_at > ?')
      .pluck() as Statement<[string, number], number>;
    const pending = db.prepare('DELETE FROM api_keys_pending WHERE user_id = ?');
    this.revokeAll = db.transaction((userId: Snowflake, now: number) => {
      const working = pendingLeft.get(userId, now) ?? 0;
      pending.run(userId);
      return live.run(userId).changes + working;
    });
  }

  async replaceKey(userId: Snowflake, hash: Buffer, createdAt: number): Promise<void> {
    this.upsert.run(userId, hash, createdAt);
  }

  async addPendingKey(userId: Snowflake, hash: Buffer, createdAt: number, expiresAt: number): Promise<void> {
    this.upsertPending.run(userId, hash, createdAt, expiresAt);
  }

  async activateKey(userId: Snowflake, hash: Buffer, now: number): Promise<boolean> {
    return this.activate(userId, hash, now);
  }

  async discardPendingKey(userId: Snowflake, hash: Buffer): Promise<void> {
    this.removePending.run(userId, hash);
  }

  async revokeKey(hash: Buffer): Promise<boolean> {
    const live = this.remove.run(hash).changes;
    const pending = this.removePendingHash.run(hash).changes;
    return live + pending > 0;
  }

  /** On the event loop's connection, as every key write: the write thread takes history and profiles only. */
  async revokeKeysOf(userId: Snowflake): Promise<number> {
    return this.revokeAll(userId, Date.now());
  }

  async findKey(hash: Buffer, now = Date.now()): Promise<{ userId: Snowflake; hash: Buffer } | undefined> {
    const row = this.select.get(hash, hash, now);
    return row ? { userId: row.user_id, hash: row.key_hash } : undefined;
  }
}
