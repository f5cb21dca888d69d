import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { Adoption, RetentionStore } from '../ports.js';
import { query } from './queries.js';

/**
 * The tables holding what is kept about a user, each with an index that starts with `user_id`: adoption
 * walks them in id order. `kv_revisions` and `history_forgotten` are not data: they outlive an erasure.
 */
const USER_DATA_TABLES = [
  'kv',
  'api_keys',
  'api_keys_pending',
  'read_tokens',
  'webhooks',
  'privacy_settings',
  'profiles',
  'user_stats',
  'status_history',
  'track_history',
  'play_counts',
] as const;

// In id order, so that two nodes writing the same users at once lock their rows in the same order.
const SEEN = {
  name: 'retention.seen',
  text: `INSERT INTO last_monitored AS l (user_id, seen_at)
         SELECT * FROM unnest($1::text[], $2::bigint[]) ORDER BY 1
         ON CONFLICT (user_id) DO UPDATE SET seen_at = excluded.seen_at WHERE l.seen_at < excluded.seen_at`,
};
const DUE = {
  name: 'retention.due',
  text: 'SELECT user_id FROM last_monitored WHERE seen_at < $1 ORDER BY seen_at, user_id LIMIT $2',
};
const FORGET = {
  name: 'retention.forget',
  text: 'DELETE FROM last_monitored WHERE user_id = ANY ($1::text[]) AND seen_at < $2',
};

/** The next `$2` users with data in one table after `$1`, given the moment `$3` unless they have one. */
const adoptFrom = (table: string) => ({
  name: `retention.adopt-${table}`,
  text: `WITH found AS (
           SELECT DISTINCT user_id FROM ${table} WHERE user_id > $1 ORDER BY user_id LIMIT $2
         ), adopted AS (
           INSERT INTO last_monitored (user_id, seen_at) SELECT user_id, $3 FROM found ORDER BY user_id
           ON CONFLICT (user_id) DO NOTHING RETURNING 1
         )
         SELECT (SELECT count(*) FROM found) AS found,
                (SELECT user_id FROM found ORDER BY user_id DESC LIMIT 1) AS last,
                (SELECT count(*) FROM adopted) AS adopted`,
});
const ADOPT = USER_DATA_TABLES.map(adoptFrom);

/** Each user's last moment in a monitored guild (table `last_monitored`, indexed by the moment). */
export class PostgresRetentionStore implements RetentionStore {
  /** Where adoption goes on from: a table of USER_DATA_TABLES, and the last id looked at in it. */
  private cursor = { table: 0, after: '' };

  constructor(private readonly pool: Pool) {}

  async seen(moments: ReadonlyMap<Snowflake, number>): Promise<void> {
    if (moments.size === 0) return;
    await query(this.pool, { ...SEEN, values: [[...moments.keys()], [...moments.values()]] });
  }

  async due(before: number, limit: number): Promise<Snowflake[]> {
    const { rows } = await query<{ user_id: string }>(this.pool, { ...DUE, values: [before, limit] });
    return rows.map((row) => row.user_id);
  }

  async forgetSeen(userIds: readonly Snowflake[], before: number): Promise<void> {
    if (userIds.length === 0) return;
    await query(this.pool, { ...FORGET, values: [userIds, before] });
  }

  async adoptUnseen(at: number, limit: number): Promise<Adoption> {
    const { table, after } = this.cursor;
    const { rows } = await query<{ found: number; last: string | null; adopted: number }>(this.pool, {
      ...(ADOPT[table] as (typeof ADOPT)[number]),
      values: [after, limit, at],
    });
    const { found = 0, last = null, adopted = 0 } = rows[0] ?? {};
    if (found === limit && last !== null) {
      this.cursor = { table, after: last };
      return { adopted, passEnded: false };
    }
    const next = table + 1;
    this.cursor = { table: next === USER_DATA_TABLES.length ? 0 : next, after: '' };
    return { adopted, passEnded: next === USER_DATA_TABLES.length };
  }
}
