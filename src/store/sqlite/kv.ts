import type { Database, Statement } from 'better-sqlite3';
import type { KvChange, KvLimits, KvState, Snowflake } from '../../presence/model.js';
import type { KvLimitRefusal, KvStore, KvWritten } from '../ports.js';

export class SqliteKvStore implements KvStore {
  private readonly selectAll: Statement<[string], { key: string; value: string }>;
  private readonly selectRevision: Statement<[string], { revision: number }>;
  private readonly selectMany: Statement<[string], { user_id: string; key: string; value: string }>;
  private readonly selectRevisions: Statement<[string], { user_id: string; revision: number }>;
  private readonly selectTotals: Statement<[string], { revision: number; bytes: number }>;
  private readonly count: Statement<[string], { n: number }>;
  private readonly storedSize: Statement<[string, string], { bytes: number }>;
  private readonly storedAs: Statement<[string, string, string], { bytes: number; same: number }>;
  private readonly upsert: Statement<[string, string, string]>;
  private readonly remove: Statement<[string, string]>;
  private readonly bump: Statement<[string, number], { revision: number }>;
  private readonly readMany: (ids: string) => {
    rows: { user_id: string; key: string; value: string }[];
    revisions: { user_id: string; revision: number }[];
  };
  private readonly write: (
    userId: Snowflake,
    change: KvChange,
    limits: KvLimits,
  ) => KvWritten | KvLimitRefusal;

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
    this.selectTotals = db.prepare('SELECT revision, bytes FROM kv_revisions WHERE user_id = ?');
    this.count = db.prepare('SELECT count(*) AS n FROM kv WHERE user_id = ?');
    // Sizes and comparisons in SQL: a stored value is never copied out to be measured.
    this.storedSize = db.prepare(
      'SELECT length(CAST(value AS BLOB)) AS bytes FROM kv WHERE user_id = ? AND key = ?',
    );
    this.storedAs = db.prepare(
      'SELECT length(CAST(value AS BLOB)) AS bytes, value = ? AS same FROM kv WHERE user_id = ? AND key = ?',
    );
    this.upsert = db.prepare(
      'INSERT INTO kv (user_id, key, value) VALUES (?, ?, ?) ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value',
    );
    this.remove = db.prepare('DELETE FROM kv WHERE user_id = ? AND key = ?');
    this.bump = db.prepare(
      `INSERT INTO kv_revisions (user_id, revision, bytes) VALUES (?, 1, ?)
       ON CONFLICT (user_id) DO UPDATE SET revision = revision + 1, bytes = excluded.bytes RETURNING revision`,
    );
    // One transaction: the keys and the revisions are read from the same state. Deferred: it only reads,
    // so it need not wait for the write thread's writes. Every write of a key bumps its user's revision,
    // so users without a revision have no keys, as most have not when they are first seen.
    this.readMany = db.transaction((ids: string) => {
      const revisions = this.selectRevisions.all(ids);
      return { revisions, rows: revisions.length === 0 ? [] : this.selectMany.all(ids) };
    }).deferred;
    // One transaction: the limits are checked against what is stored at the moment of the write, and the
    // total moves with the keys.
    this.write = db.transaction((userId: Snowflake, change: KvChange, limits: KvLimits) => {
      const totals = this.selectTotals.get(userId);
      const before = totals?.bytes ?? 0;
      let count = this.count.get(userId)?.n ?? 0;
      let bytes = before;
      const removed: string[] = [];
      for (const key of new Set(change.delete)) {
        const stored = change.set.has(key) ? undefined : this.storedSize.get(userId, key);
        if (!stored) continue;
        count--;
        bytes -= Buffer.byteLength(key) + stored.bytes;
        removed.push(key);
      }
      const updated: [string, string][] = [];
      for (const [key, value] of change.set) {
        const stored = this.storedAs.get(value, userId, key);
        if (stored?.same) continue;
        if (stored) bytes -= stored.bytes;
        else {
          count++;
          bytes += Buffer.byteLength(key);
        }
        bytes += Buffer.byteLength(value);
        updated.push([key, value]);
      }
      if (count > limits.maxKeys) return { refused: 'keys', wouldHave: count } as const;
      if (bytes > limits.maxBytes && bytes > before) return { refused: 'bytes', wouldHave: bytes } as const;
      if (removed.length === 0 && updated.length === 0)
        return { revision: totals?.revision ?? 0, changed: false };
      for (const key of removed) this.remove.run(userId, key);
      for (const [key, value] of updated) this.upsert.run(userId, key, value);
      const revision = (this.bump.get(userId, bytes) as { revision: number }).revision;
      return { revision, changed: true };
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

  async writeKv(userId: Snowflake, change: KvChange, limits: KvLimits): Promise<KvWritten | KvLimitRefusal> {
    return this.write(userId, change, limits);
  }

  private read(userId: Snowflake): Record<string, string> {
    // fromEntries defines own properties, so a key named __proto__ stays data.
    return Object.fromEntries(this.selectAll.all(userId).map((row) => [row.key, row.value]));
  }
}
