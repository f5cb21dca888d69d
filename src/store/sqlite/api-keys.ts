import type { Database, Statement } from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { ApiKeyStore } from '../ports.js';

export class SqliteApiKeyStore implements ApiKeyStore {
  private readonly upsert: Statement<[string, Buffer, number]>;
  private readonly remove: Statement<[Buffer]>;
  private readonly select: Statement<[Buffer], { user_id: string; key_hash: Buffer }>;

  constructor(db: Database) {
    this.upsert = db.prepare(
      `INSERT INTO api_keys (user_id, key_hash, created_at) VALUES (?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at`,
    );
    this.remove = db.prepare('DELETE FROM api_keys WHERE key_hash = ?');
    this.select = db.prepare('SELECT user_id, key_hash FROM api_keys WHERE key_hash = ?');
  }

  async replaceKey(userId: Snowflake, hash: Buffer, createdAt: number): Promise<void> {
    this.upsert.run(userId, hash, createdAt);
  }

  async revokeKey(hash: Buffer): Promise<boolean> {
    return this.remove.run(hash).changes > 0;
  }

  async findKey(hash: Buffer): Promise<{ userId: Snowflake; hash: Buffer } | undefined> {
    const row = this.select.get(hash);
    return row ? { userId: row.user_id, hash: row.key_hash } : undefined;
  }
}
