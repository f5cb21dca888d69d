import type { Database, Statement } from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { Adoption, RetentionStore } from '../ports.js';

/**
 * The tables holding what is kept about a user, each with an index that starts with `user_id`: adoption
 * walks them in id order. `kv_revisions` and `history_forgotten` are not data: they outlive an erasure.
 */
export const USER_DATA_TABLES = [
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

/**
 * Each user's last moment in a monitored guild (table `last_monitored`, indexed by the moment), written on
 * the event loop's connection: a batch of moments is one short transaction.
 */
export class SqliteRetentionStore implements RetentionStore {
  private readonly writeSeen: (moments: ReadonlyMap<Snowflake, number>) => void;
  private readonly selectDue: Statement<[number, number], string>;
  private readonly forget: (userIds: readonly Snowflake[], before: number) => void;
  private readonly holders: Statement<[string, number], string>[];
  private readonly adopt: (userIds: readonly string[], at: number) => number;
  /** Where adoption goes on from: a table of USER_DATA_TABLES, and the last id looked at in it. */
  private cursor = { table: 0, after: '' };

  constructor(db: Database) {
    const upsert = db.prepare<[string, number]>(
      `INSERT INTO last_monitored (user_id, seen_at) VALUES (?, ?)
       ON CONFLICT (user_id) DO UPDATE SET seen_at = excluded.seen_at WHERE excluded.seen_at > last_monitored.seen_at`,
    );
    this.writeSeen = db.transaction((moments: ReadonlyMap<Snowflake, number>) => {
      for (const [userId, at] of moments) upsert.run(userId, at);
    });
    this.selectDue = db
      .prepare('SELECT user_id FROM last_monitored WHERE seen_at < ? ORDER BY seen_at, user_id LIMIT ?')
      .pluck() as Statement<[number, number], string>;
    const remove = db.prepare<[string, number]>(
      'DELETE FROM last_monitored WHERE user_id = ? AND seen_at < ?',
    );
    this.forget = db.transaction((userIds: readonly Snowflake[], before: number) => {
      for (const userId of userIds) remove.run(userId, before);
    });
    this.holders = USER_DATA_TABLES.map(
      (table) =>
        db
          .prepare(`SELECT DISTINCT user_id FROM ${table} WHERE user_id > ? ORDER BY user_id LIMIT ?`)
          .pluck() as Statement<[string, number], string>,
    );
    const insert = db.prepare<[string, number]>(
      'INSERT INTO last_monitored (user_id, seen_at) VALUES (?, ?) ON CONFLICT (user_id) DO NOTHING',
    );
    this.adopt = db.transaction((userIds: readonly string[], at: number) => {
      let adopted = 0;
      for (const userId of userIds) adopted += insert.run(userId, at).changes;
      return adopted;
    });
  }

  async seen(moments: ReadonlyMap<Snowflake, number>): Promise<void> {
    if (moments.size > 0) this.writeSeen(moments);
  }

  async due(before: number, limit: number): Promise<Snowflake[]> {
    return this.selectDue.all(before, limit);
  }

  async forgetSeen(userIds: readonly Snowflake[], before: number): Promise<void> {
    if (userIds.length > 0) this.forget(userIds, before);
  }

  async adoptUnseen(at: number, limit: number): Promise<Adoption> {
    const { table, after } = this.cursor;
    const found = (this.holders[table] as Statement<[string, number], string>).all(after, limit);
    const adopted = this.adopt(found, at);
    if (found.length === limit) {
      this.cursor = { table, after: found[found.length - 1] as string };
      return { adopted, passEnded: false };
    }
    const next = table + 1;
    this.cursor = { table: next === USER_DATA_TABLES.length ? 0 : next, after: '' };
    return { adopted, passEnded: next === USER_DATA_TABLES.length };
  }
}
