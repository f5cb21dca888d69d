import type { Pool } from 'pg';
import type { KvChange, KvLimits, KvState, Snowflake } from '../../presence/model.js';
import type { KvLimitRefusal, KvStore, KvWritten } from '../ports.js';
import { query, transaction } from './queries.js';

/**
 * Locks the user's totals row, creating it when the user has none (a write that changes nothing rolls the
 * new row back). The totals are read from the row as locked: a write waiting here sees the one before it.
 */
const LOCK_TOTALS = {
  name: 'kv.lock',
  text: `INSERT INTO kv_revisions AS r (user_id, revision, bytes, keys) VALUES ($1, 0, 0, 0)
         ON CONFLICT (user_id) DO UPDATE SET revision = r.revision
         RETURNING revision, bytes, keys`,
};
/** What is stored under the keys a change touches: sizes and comparisons in SQL, never copied out. */
const STORED = {
  name: 'kv.stored',
  text: `SELECT k.key, octet_length(kv.value) AS bytes, kv.value = k.value AS same
         FROM unnest($2::text[], $3::bytea[]) AS k (key, value)
         JOIN kv ON kv.user_id = $1 AND kv.key = k.key`,
};
const WRITE = {
  name: 'kv.write',
  text: `WITH removed AS (DELETE FROM kv WHERE user_id = $1 AND key = ANY ($2::text[])),
           stored AS (
             INSERT INTO kv (user_id, key, value) SELECT $1, key, value FROM unnest($3::text[], $4::bytea[]) AS k (key, value)
             ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value)
         UPDATE kv_revisions SET revision = revision + 1, bytes = $5, keys = $6 WHERE user_id = $1
         RETURNING revision`,
};
/** The revision and the keys in one statement, so both come from the same moment. */
const READ = {
  name: 'kv.read',
  text: `SELECT r.user_id, r.revision, kv.key, kv.value FROM kv_revisions r
         LEFT JOIN kv ON kv.user_id = r.user_id
         WHERE r.user_id = ANY ($1::text[]) ORDER BY r.user_id, kv.key`,
};

interface Totals {
  revision: number;
  bytes: number;
  keys: number;
}

export class PostgresKvStore implements KvStore {
  constructor(private readonly pool: Pool) {}

  async getKv(userId: Snowflake): Promise<KvState> {
    return (await this.getKvs([userId])).get(userId) ?? { kv: {}, revision: 0 };
  }

  async getKvs(userIds: readonly Snowflake[]): Promise<Map<Snowflake, KvState>> {
    const found = new Map<Snowflake, KvState>();
    if (userIds.length === 0) return found;
    const { rows } = await query<{
      user_id: string;
      revision: number;
      key: string | null;
      value: Buffer | null;
    }>(this.pool, { ...READ, values: [[...new Set(userIds)]] });
    const entries = new Map<Snowflake, [string, string][]>();
    for (const row of rows) {
      let list = entries.get(row.user_id);
      if (!list) {
        list = [];
        entries.set(row.user_id, list);
        found.set(row.user_id, { kv: {}, revision: row.revision });
      }
      if (row.key !== null && row.value !== null) list.push([row.key, row.value.toString('utf8')]);
    }
    // fromEntries defines own properties, so a key named __proto__ stays data.
    for (const [userId, list] of entries) (found.get(userId) as KvState).kv = Object.fromEntries(list);
    return found;
  }

  /** One transaction: the limits are checked against what is stored at the moment of the write. */
  async writeKv(userId: Snowflake, change: KvChange, limits: KvLimits): Promise<KvWritten | KvLimitRefusal> {
    const deletes = [...new Set(change.delete)].filter((key) => !change.set.has(key));
    const setKeys = [...change.set.keys()];
    const setValues = setKeys.map((key) => Buffer.from(change.set.get(key) as string, 'utf8'));
    return transaction(
      this.pool,
      async (client) => {
        const totals = (await client.query<Totals>({ ...LOCK_TOTALS, values: [userId] })).rows[0] as Totals;
        const { rows: stored } = await client.query<{ key: string; bytes: number; same: boolean | null }>({
          ...STORED,
          values: [userId, [...deletes, ...setKeys], [...deletes.map(() => null), ...setValues]],
        });
        const storedOf = new Map(stored.map((row) => [row.key, row]));
        let count = totals.keys;
        let bytes = totals.bytes;
        const removed: string[] = [];
        for (const key of deletes) {
          const found = storedOf.get(key);
          if (!found) continue;
          count--;
          bytes -= Buffer.byteLength(key) + found.bytes;
          removed.push(key);
        }
        const updatedKeys: string[] = [];
        const updatedValues: Buffer[] = [];
        setKeys.forEach((key, index) => {
          const found = storedOf.get(key);
          if (found?.same) return;
          const value = setValues[index] as Buffer;
          if (found) bytes -= found.bytes;
          else {
            count++;
            bytes += Buffer.byteLength(key);
          }
          bytes += value.length;
          updatedKeys.push(key);
          updatedValues.push(value);
        });
        if (count > limits.maxKeys) return { refused: 'keys', wouldHave: count } as const;
        if (bytes > limits.maxBytes && bytes > totals.bytes)
          return { refused: 'bytes', wouldHave: bytes } as const;
        if (removed.length === 0 && updatedKeys.length === 0)
          return { revision: totals.revision, changed: false };
        const { rows } = await client.query<{ revision: number }>({
          ...WRITE,
          values: [userId, removed, updatedKeys, updatedValues, bytes, count],
        });
        return { revision: (rows[0] as { revision: number }).revision, changed: true };
      },
      { keep: (result) => 'changed' in result && result.changed === true },
    );
  }
}
