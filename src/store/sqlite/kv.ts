import type { Database, Statement } from 'better-sqlite3';
import type { KvChange, KvState } from '../../kv/rules.js';
import type { Snowflake } from '../../presence/model.js';
import type { KvLimitRefusal, KvStore } from '../ports.js';

export class SqliteKvStore implements KvStore {
  private readonly selectAll: Statement<[string], { key: string; value: string }>;
  private readonly selectRevision: Statement<[string], { revision: number }>;
  private readonly count: Statement<[string], { n: number }>;
  private readonly exists: Statement<[string, string], { one: number }>;
  private readonly upsert: Statement<[string, string, string]>;
  private readonly remove: Statement<[string, string]>;
  private readonly bump: Statement<[string], { revision: number }>;
  private readonly write: (userId: Snowflake, change: KvChange, maxKeys: number) => KvState | KvLimitRefusal;

  constructor(db: Database) {
    this.selectAll = db.prepare('SELECT key, value FROM kv WHERE user_id = ? ORDER BY key');
    this.selectRevision = db.prepare('SELECT revision FROM kv_revisions WHERE user_id = ?');
    this.count = db.prepare('SELECT count(*) AS n FROM kv WHERE user_id = ?');
    this.exists = db.prepare('SELECT 1 AS one FROM kv WHERE user_id = ? AND key = ?');
    this.upsert = db.prepare(
      'INSERT INTO kv (user_id, key, value) VALUES (?, ?, ?) ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value',
    );
    this.remove = db.prepare('DELETE FROM kv WHERE user_id = ? AND key = ?');
    this.bump = db.prepare(
      `INSERT INTO kv_revisions (user_id, revision) VALUES (?, 1)
       ON CONFLICT (user_id) DO UPDATE SET revision = revision + 1 RETURNING revision`,
    );
    // One transaction: the limit is checked against what is stored at the moment of the write.
    this.write = db.transaction((userId: Snowflake, change: KvChange, maxKeys: number) => {
      const deleted = new Set(change.delete);
      let count = this.count.get(userId)?.n ?? 0;
      for (const key of deleted) {
        if (!change.set.has(key) && this.exists.get(userId, key)) count--;
      }
      for (const key of change.set.keys()) {
        if (!this.exists.get(userId, key)) count++;
      }
      if (count > maxKeys) return { refused: 'limit', wouldHave: count } as const;
      for (const key of deleted) {
        if (!change.set.has(key)) this.remove.run(userId, key);
      }
      for (const [key, value] of change.set) this.upsert.run(userId, key, value);
      const revision = (this.bump.get(userId) as { revision: number }).revision;
      return { kv: this.read(userId), revision };
    });
  }

  async getKv(userId: Snowflake): Promise<KvState> {
    return { kv: this.read(userId), revision: this.selectRevision.get(userId)?.revision ?? 0 };
  }

  async writeKv(userId: Snowflake, change: KvChange, maxKeys: number): Promise<KvState | KvLimitRefusal> {
    return this.write(userId, change, maxKeys);
  }

  private read(userId: Snowflake): Record<string, string> {
    // fromEntries defines own properties, so a key named __proto__ stays data.
    return Object.fromEntries(this.selectAll.all(userId).map((row) => [row.key, row.value]));
  }
}
