import type { Pool } from 'pg';
import { ADVISORY_LOCKS } from './locks.js';

/**
 * Versioned schema. Each entry moves the database from version `index` to `index + 1`; entries are
 * never edited once released, only appended, because databases in the field have run them already.
 *
 * JSON (track entries, played tracks) is kept as text, as written: `jsonb` would reorder its keys and
 * refuses U+0000, which a track title may hold. KV values and play keys (made of a title when a track
 * has no id) are UTF-8 bytes for the same U+0000. KV keys sort by code point ("C": UTF-8 bytes in order),
 * as in every store.
 */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE profiles (
     user_id      TEXT PRIMARY KEY,
     banner       TEXT,
     accent_color INTEGER,
     fetched_at   BIGINT NOT NULL
   );
   CREATE TABLE kv (
     user_id TEXT NOT NULL,
     key     TEXT COLLATE "C" NOT NULL,
     value   BYTEA NOT NULL,
     PRIMARY KEY (user_id, key)
   );
   CREATE TABLE kv_revisions (
     user_id  TEXT PRIMARY KEY,
     revision BIGINT NOT NULL,
     bytes    BIGINT NOT NULL,
     keys     INTEGER NOT NULL
   );
   CREATE TABLE api_keys (
     user_id    TEXT PRIMARY KEY,
     key_hash   BYTEA NOT NULL UNIQUE,
     created_at BIGINT NOT NULL
   );
   CREATE TABLE status_history (
     id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     user_id TEXT NOT NULL,
     status  TEXT NOT NULL,
     ts      BIGINT NOT NULL
   );
   CREATE INDEX status_history_by_user ON status_history (user_id, id);
   CREATE TABLE track_history (
     id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     user_id TEXT NOT NULL,
     entry   TEXT NOT NULL
   );
   CREATE INDEX track_history_by_user ON track_history (user_id, id);
   CREATE TABLE play_counts (
     user_id     TEXT NOT NULL,
     track_key   BYTEA NOT NULL,
     play_count  INTEGER NOT NULL,
     last_played BIGINT NOT NULL,
     track       TEXT NOT NULL,
     PRIMARY KEY (user_id, track_key)
   );
   CREATE INDEX play_counts_ranked ON play_counts (user_id, play_count DESC, last_played DESC);
   CREATE TABLE user_stats (
     user_id   TEXT PRIMARY KEY,
     last_seen BIGINT,
     plays_day TEXT,
     plays     INTEGER NOT NULL DEFAULT 0,
     tracks    INTEGER NOT NULL DEFAULT 0
   );
   CREATE TABLE history_forgotten (
     user_id      TEXT PRIMARY KEY,
     forgotten_at BIGINT NOT NULL
   )`,
  // Webhooks and their recent deliveries (a delivery's record is JSON text, as written).
  `CREATE TABLE webhooks (
     id              TEXT PRIMARY KEY,
     user_id         TEXT NOT NULL,
     url             TEXT NOT NULL,
     events          TEXT NOT NULL,
     secret          TEXT NOT NULL,
     created_at      BIGINT NOT NULL,
     disabled_at     BIGINT,
     disabled_reason TEXT
   );
   CREATE INDEX webhooks_by_user ON webhooks (user_id, created_at, id);
   CREATE TABLE webhook_deliveries (
     seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     webhook_id  TEXT NOT NULL,
     delivery_id TEXT NOT NULL,
     record      TEXT NOT NULL,
     UNIQUE (webhook_id, delivery_id)
   );
   CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq)`,
  // The history batches written lately, by id: a batch tried again after a lost answer is not written twice.
  `CREATE TABLE history_batches (
     id         TEXT PRIMARY KEY,
     written_at BIGINT NOT NULL
   );
   CREATE INDEX history_batches_by_time ON history_batches (written_at)`,
  // The webhook queue of a process on PostgreSQL alone: each webhook's events in order, and its head's state.
  `CREATE TABLE webhook_queue (
     seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     webhook_id  TEXT NOT NULL,
     delivery_id TEXT NOT NULL,
     type        TEXT NOT NULL,
     body        TEXT NOT NULL
   );
   CREATE INDEX webhook_queue_by_webhook ON webhook_queue (webhook_id, seq);
   CREATE TABLE webhook_heads (
     webhook_id       TEXT PRIMARY KEY,
     due_at           BIGINT,
     head_seq         BIGINT,
     attempts         INTEGER NOT NULL DEFAULT 0,
     first_attempt_at BIGINT,
     lease            TEXT,
     failures         INTEGER NOT NULL DEFAULT 0
   );
   CREATE INDEX webhook_heads_due ON webhook_heads (due_at, webhook_id) WHERE due_at IS NOT NULL`,
  `CREATE TABLE api_keys_pending (
     user_id    TEXT PRIMARY KEY,
     key_hash   BYTEA NOT NULL UNIQUE,
     created_at BIGINT NOT NULL,
     expires_at BIGINT NOT NULL
   )`,
  // Each user's privacy settings, the fields they set: jsonb, unlike the JSON above, so that a patch merges
  // into what is kept in one statement (`||`); the values are names, flags, ids and times, never U+0000.
  `CREATE TABLE privacy_settings (
     user_id  TEXT PRIMARY KEY,
     settings JSONB NOT NULL
   )`,
  // Each user's read tokens, by the SHA-256 of the token (docs/privacy.md): never the token itself.
  `CREATE TABLE read_tokens (
     id         TEXT PRIMARY KEY,
     user_id    TEXT NOT NULL,
     token_hash BYTEA NOT NULL UNIQUE,
     label      TEXT,
     created_at BIGINT NOT NULL
   );
   CREATE INDEX read_tokens_by_user ON read_tokens (user_id, created_at, id)`,
  // Each user's last moment in a monitored guild, indexed by the moment: the retention sweep reads the
  // oldest first (src/account/retention.ts).
  `CREATE TABLE last_monitored (
     user_id TEXT PRIMARY KEY,
     seen_at BIGINT NOT NULL
   );
   CREATE INDEX last_monitored_due ON last_monitored (seen_at, user_id)`,
  // Each ingest node's saved gateway state (src/store/postgres/gateway-state.ts), replaced whole by each
  // save. The presences come compressed already: kept out of line without compressing them again.
  `CREATE TABLE gateway_state (
     node      TEXT PRIMARY KEY,
     saved_at  BIGINT NOT NULL,
     sessions  TEXT NOT NULL,
     presences BYTEA NOT NULL
   );
   ALTER TABLE gateway_state ALTER COLUMN presences SET STORAGE EXTERNAL`,
  // Each track's plays of its recent UTC days (day → plays), for top tracks by period: jsonb, merged in the
  // statement that counts a play; days and numbers only. Plays counted before have no day: they count in
  // `all` alone.
  `ALTER TABLE play_counts ADD COLUMN days JSONB NOT NULL DEFAULT '{}'`,
];

/**
 * Brings the database to the newest schema, each step in its own transaction. Nodes starting together
 * take turns under an advisory lock: the first migrates, the others find the work done.
 */
export async function migrate(pool: Pool, steps: readonly string[] = MIGRATIONS): Promise<number> {
  const client = await pool.connect();
  let lost: Error | undefined;
  // A connection dropped between statements is an event, which unheard would end the process.
  const dropped = (error: Error) => {
    lost = error;
  };
  client.on('error', dropped);
  try {
    await client.query('SELECT pg_advisory_lock($1, $2)', [...ADVISORY_LOCKS.migrations]);
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS presently_schema (
           version    INTEGER PRIMARY KEY,
           applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )`,
      );
      const { rows } = await client.query<{ version: number }>(
        'SELECT coalesce(max(version), 0) AS version FROM presently_schema',
      );
      const current = rows[0]?.version ?? 0;
      if (current > steps.length) {
        throw new Error(
          `database schema version ${current} is newer than this build knows (${steps.length}); refusing to run`,
        );
      }
      for (let version = current; version < steps.length; version++) {
        await client.query('BEGIN');
        try {
          await client.query(steps[version] as string);
          await client.query('INSERT INTO presently_schema (version) VALUES ($1)', [version + 1]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
      return steps.length;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [...ADVISORY_LOCKS.migrations]);
    }
  } catch (error) {
    // The session's lock goes with its connection.
    lost = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.off('error', dropped);
    client.release(lost);
  }
}
