import BetterSqlite3, { type Database } from 'better-sqlite3';
import { HISTORY_LIMIT } from '../../model/history.js';
import type { DiscordStatus, Snowflake } from '../../presence/model.js';
import type { PrivacyPatch } from '../../presence/privacy.js';
import { emptyUser, type StoreDump, type UserData } from '../transfer.js';
import type { QueuedEvent } from '../webhook-queue.js';
import { WEBHOOK_COLUMNS, type WebhookRow, webhookOf } from '../webhook-row.js';
import { MIGRATIONS } from './migrations.js';

/** Users read in one go: a few statements for each batch whatever its size. */
const DUMP_BATCH = 500;

/** Each table's rows of a batch of users, given as one JSON array. */
const IN_BATCH = 'user_id IN (SELECT value FROM json_each(?))';
/** The newest HISTORY_LIMIT entries of each user's list, oldest first: what readers see. */
const newest = (columns: string, table: string) =>
  `SELECT user_id, ${columns} FROM (
     SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY id DESC) AS n FROM ${table} WHERE ${IN_BATCH})
   WHERE n <= ${HISTORY_LIMIT} ORDER BY user_id, id`;

/**
 * Every user's data in the SQLite file at `path`, in batches, from one snapshot: the file is opened read
 * only and read in one transaction, so a service still writing it neither waits nor tears a user's data.
 * A file of an older schema is refused: the service migrates it at its next start.
 */
export async function* dumpSqlite(path: string): StoreDump {
  const db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version !== MIGRATIONS.length) {
      throw new Error(
        `${path} has schema version ${version}, this build ${MIGRATIONS.length}: ` +
          (version < MIGRATIONS.length
            ? 'start the service of this build on it once, then copy it'
            : 'copy it with a newer build'),
      );
    }
    db.exec('BEGIN');
    const users = db
      .prepare<[], string>(
        `SELECT user_id FROM kv_revisions UNION SELECT user_id FROM kv UNION SELECT user_id FROM api_keys
         UNION SELECT user_id FROM profiles UNION SELECT user_id FROM status_history
         UNION SELECT user_id FROM track_history UNION SELECT user_id FROM play_counts
         UNION SELECT user_id FROM user_stats UNION SELECT user_id FROM history_forgotten
         UNION SELECT user_id FROM webhooks UNION SELECT user_id FROM privacy_settings
         UNION SELECT user_id FROM read_tokens ORDER BY 1`,
      )
      .pluck()
      .all();
    const read = batchReader(db);
    for (let start = 0; start < users.length; start += DUMP_BATCH) {
      yield read(users.slice(start, start + DUMP_BATCH));
    }
    db.exec('COMMIT');
  } finally {
    db.close();
  }
}

function batchReader(db: Database): (userIds: Snowflake[]) => UserData[] {
  type Rows<T> = (T & { user_id: string })[];
  const statement = <T>(sql: string) => {
    const prepared = db.prepare<[string], T & { user_id: string }>(sql);
    return (ids: string): Rows<T> => prepared.all(ids);
  };
  const kv = statement<{ key: string; value: string }>(
    `SELECT user_id, key, value FROM kv WHERE ${IN_BATCH} ORDER BY user_id, key`,
  );
  const revisions = statement<{ revision: number }>(
    `SELECT user_id, revision FROM kv_revisions WHERE ${IN_BATCH}`,
  );
  const keys = statement<{ key_hash: Buffer; created_at: number }>(
    `SELECT user_id, key_hash, created_at FROM api_keys WHERE ${IN_BATCH}`,
  );
  const profiles = statement<{ banner: string | null; accent_color: number | null; fetched_at: number }>(
    `SELECT user_id, banner, accent_color, fetched_at FROM profiles WHERE ${IN_BATCH}`,
  );
  const status = statement<{ status: DiscordStatus; ts: number }>(newest('status, ts', 'status_history'));
  const tracks = statement<{ entry: string }>(newest('entry', 'track_history'));
  const plays = statement<{
    track_key: string;
    play_count: number;
    last_played: number;
    track: string;
    days: string;
  }>(`SELECT user_id, track_key, play_count, last_played, track, days FROM play_counts WHERE ${IN_BATCH}`);
  const stats = statement<{ last_seen: number | null; plays_day: string | null; plays: number }>(
    `SELECT user_id, last_seen, plays_day, plays FROM user_stats WHERE ${IN_BATCH}`,
  );
  const forgotten = statement<{ forgotten_at: number }>(
    `SELECT user_id, forgotten_at FROM history_forgotten WHERE ${IN_BATCH}`,
  );
  const webhooks = statement<WebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE ${IN_BATCH} ORDER BY user_id, created_at, id`,
  );
  const deliveries = statement<{ webhook_id: string; record: string }>(
    `SELECT w.user_id, d.webhook_id, d.record FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE w.${IN_BATCH} ORDER BY d.webhook_id, d.seq`,
  );
  const waiting = statement<{
    webhook_id: string;
    delivery_id: string;
    type: QueuedEvent['type'];
    body: string;
  }>(
    `SELECT w.user_id, q.webhook_id, q.delivery_id, q.type, q.body FROM webhook_queue q
     JOIN webhooks w ON w.id = q.webhook_id WHERE w.${IN_BATCH} ORDER BY q.webhook_id, q.seq`,
  );
  const privacy = statement<{ settings: string }>(
    `SELECT user_id, settings FROM privacy_settings WHERE ${IN_BATCH}`,
  );
  const readTokens = statement<{ id: string; token_hash: Buffer; label: string | null; created_at: number }>(
    `SELECT user_id, id, token_hash, label, created_at FROM read_tokens WHERE ${IN_BATCH}
     ORDER BY user_id, created_at, id`,
  );

  return (userIds) => {
    const ids = JSON.stringify(userIds);
    const data = new Map<Snowflake, UserData>(userIds.map((userId) => [userId, emptyUser(userId)]));
    const of = (row: { user_id: string }) => data.get(row.user_id) as UserData;
    for (const row of revisions(ids)) of(row).kv = { entries: [], revision: row.revision };
    for (const row of kv(ids)) {
      const user = of(row);
      user.kv ??= { entries: [], revision: 0 };
      user.kv.entries.push([row.key, row.value]);
    }
    for (const row of keys(ids)) of(row).apiKey = { hash: row.key_hash, createdAt: row.created_at };
    for (const row of profiles(ids)) {
      of(row).profile = {
        profile: { banner: row.banner, accent_color: row.accent_color },
        fetchedAt: row.fetched_at,
      };
    }
    for (const row of status(ids)) of(row).status.push({ status: row.status, ts: row.ts });
    for (const row of tracks(ids)) of(row).tracks.push(row.entry);
    for (const row of plays(ids)) {
      of(row).plays.push({
        key: row.track_key,
        count: row.play_count,
        lastPlayed: row.last_played,
        track: row.track,
        days: JSON.parse(row.days) as Record<string, number>,
      });
    }
    for (const row of stats(ids)) {
      of(row).stats = { lastSeen: row.last_seen, playsDay: row.plays_day, plays: row.plays };
    }
    for (const row of forgotten(ids)) of(row).forgottenAt = row.forgotten_at;
    const hooks = new Map<string, UserData['webhooks'][number]>();
    for (const row of webhooks(ids)) {
      const hook = { webhook: webhookOf(row), deliveries: [], waiting: [] };
      hooks.set(row.id, hook);
      of(row).webhooks.push(hook);
    }
    for (const row of deliveries(ids)) hooks.get(row.webhook_id)?.deliveries.push(row.record);
    for (const row of waiting(ids)) {
      hooks.get(row.webhook_id)?.waiting.push({ id: row.delivery_id, type: row.type, body: row.body });
    }
    for (const row of privacy(ids)) of(row).privacy = JSON.parse(row.settings) as PrivacyPatch;
    for (const row of readTokens(ids)) {
      of(row).readTokens.push({
        id: row.id,
        hash: row.token_hash,
        label: row.label,
        createdAt: row.created_at,
      });
    }
    return [...data.values()];
  };
}
