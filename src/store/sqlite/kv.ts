import type { Database, Statement } from 'better-sqlite3';
import type { KvChange, KvState } from '../../kv/rules.js';
import type { Snowflake } from '../../presence/model.js';
import type { KvLimitRefusal, KvStore } from '../ports.js';

export class SqliteKvStore implements KvStore {
  private readonly selectAll: Statement<[string], { key: string; value: string }>;
  private readonly selectRevision: Statement<[string], { revision: number }>;
  private readonly selectMany: Statement<[string], { user_id: string; key: string; value: string }>;
  private readonly selectRevisions: Statement<[string], { user_id: string; revision: number }>;
  private readonly count: Statement<[string], { n: number }>;
  private readonly exists: Statement<[string, string], { one: number }>;
  private readonly upsert: Statement<[string, string, string]>;
  private readonly remove: Statement<[string, string]>;
  private readonly bump: Statement<[string], { revision: number }>;
  private readonly readMany: (ids: string) => {
    rows: { user_id: string; key: string; value: string }[];
    revisions: { user_id: string; revision: number }[];
  };
  private readonly write: (userId: Snowflake, change: KvChange, maxKeys: number) => KvState | KvLimitRefusal;

  constructor(db: Database) {
    this.selectAll = db.prepare('SELECT key, value FROM kv WHERE user_id = ? ORDER BY key');
    this.selectRevision = db.prepare('SELECT revision FROM kv_revisions WHERE user_id = ?');
    // The users come as one JSON array: one statement for any number of them.
    this.selectMany = db.prepare(
      'SELECT user_id, key, value FROM kv WHERE user_id IN (SELECT value FROM json_each(?)) ORDER BY user_id, key',
    );
    this.selectRevisions = db.prepare(
      'SELECT user_id, revision FROM kv_revisions WHERE user_id IN (SELECT value FROM json_each(?))',
    );
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
    // One transaction: the keys and the revisions are read from the same state.
    this.readMany = db.transaction((ids: string) => ({
      rows: this.selectMany.all(ids),
      revisions: this.selectRevisions.all(ids),
    }));
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

  async getKvs(userIds: readonly Snowflake[]): Promise<Map<Snowflake, KvState>> {
    const found = new Map<Snowflake, KvState>();
    if (userIds.length === 0) return found;
    const { rows, revisions } = this.readMany(JSON.stringify(userIds));
    const entries = new Map<Snowflake, [string, string][]>();
    for (const row of rows) {
      const list = entries.get(row.user_id);
      if (list) list.push([row.key, row.value]);
      else entries.set(row.user_id, [[row.key, row.value]]);
    }
    const revisionOf = new Map(revisions.map((row) => [row.user_id, row.revision]));
    for (const userId of new Set([...entries.keys(), ...revisionOf.keys()])) {
      found.set(userId, {
        kv: Object.fromEntries(entries.get(userId) ?? []),
        revision: revisionOf.get(userId) ?? 0,
      });
    }
    return found;
  }

  async writeKv(userId: Snowflake, change: KvChange, maxKeys: number): Promise<KvState | KvLimitRefusal> {
    return this.write(userId, change, maxKeys);
  }

  private read(userId: Snowflake): Record<string, string> {
    // fromEntries defines own properties, so a key named __proto__ stays data.
    return Object.fromEntries(this.selectAll.all(userId).map((row) => [row.key, row.value]));
  }
}
