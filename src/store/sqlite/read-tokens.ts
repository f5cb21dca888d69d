import type { Database, Statement } from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { ReadTokenListing, ReadTokenStore, StoredReadToken } from '../ports.js';

type Row = { id: string; label: string | null; created_at: number };
type Found = { user_id: string; id: string; token_hash: Buffer };

export class SqliteReadTokenStore implements ReadTokenStore {
  private readonly insert: Statement<[string, string, Buffer, string | null, number]>;
  private readonly countOf: Statement<[string], number>;
  private readonly byUser: Statement<[string], Row>;
  private readonly remove: Statement<[string, string]>;
  private readonly byHash: Statement<[Buffer], Found>;
  private readonly add: (token: StoredReadToken, maxPerUser: number) => boolean;

  constructor(db: Database) {
    this.insert = db.prepare(
      'INSERT INTO read_tokens (id, user_id, token_hash, label, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.countOf = db.prepare('SELECT count(*) FROM read_tokens WHERE user_id = ?').pluck() as Statement<
      [string],
      number
    >;
    this.byUser = db.prepare(
      'SELECT id, label, created_at FROM read_tokens WHERE user_id = ? ORDER BY created_at, id',
    );
    this.remove = db.prepare('DELETE FROM read_tokens WHERE user_id = ? AND id = ?');
    this.byHash = db.prepare('SELECT user_id, id, token_hash FROM read_tokens WHERE token_hash = ?');
    // Counted and written in one transaction, which takes the file's write lock first (connection.ts).
    this.add = db.transaction((token: StoredReadToken, maxPerUser: number) => {
      if ((this.countOf.get(token.userId) ?? 0) >= maxPerUser) return false;
      this.insert.run(token.id, token.userId, token.hash, token.label, token.createdAt);
      return true;
    });
  }

  async addReadToken(token: StoredReadToken, maxPerUser: number): Promise<boolean> {
    return this.add(token, maxPerUser);
  }

  async readTokensOf(userId: Snowflake): Promise<ReadTokenListing[]> {
    return this.byUser
      .all(userId)
      .map((row) => ({ id: row.id, label: row.label, createdAt: row.created_at }));
  }

  async removeReadToken(userId: Snowflake, id: string): Promise<boolean> {
    return this.remove.run(userId, id).changes > 0;
  }

  async findReadToken(hash: Buffer): Promise<{ userId: Snowflake; id: string; hash: Buffer } | undefined> {
    const row = this.byHash.get(hash);
    return row ? { userId: row.user_id, id: row.id, hash: row.token_hash } : undefined;
  }
}
