import type { Database } from 'better-sqlite3';

/**
 * Versioned schema. Each entry moves the database from version `index` to `index + 1`; entries are
 * never edited once released, only appended, because databases in the field have run them already.
 */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE profiles (
     user_id      TEXT PRIMARY KEY,
     banner       TEXT,
     accent_color INTEGER,
     fetched_at   INTEGER NOT NULL
   ) STRICT`,
  `CREATE TABLE kv (
     user_id TEXT NOT NULL,
     key     TEXT NOT NULL,
     value   TEXT NOT NULL,
     PRIMARY KEY (user_id, key)
   ) STRICT, WITHOUT ROWID;
   CREATE TABLE kv_revisions (
     user_id  TEXT PRIMARY KEY,
     revision INTEGER NOT NULL
   ) STRICT;
   CREATE TABLE api_keys (
     user_id    TEXT PRIMARY KEY,
     key_hash   BLOB NOT NULL UNIQUE,
     created_at INTEGER NOT NULL
   ) STRICT`,
  `CREATE TABLE status_history (
     id      INTEGER PRIMARY KEY,
     user_id TEXT NOT NULL,
     status  TEXT NOT NULL,
     ts      INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX status_history_by_user ON status_history (user_id, id);
   CREATE TABLE track_history (
     id      INTEGER PRIMARY KEY,
     user_id TEXT NOT NULL,
     entry   TEXT NOT NULL
   ) STRICT;
   CREATE INDEX track_history_by_user ON track_history (user_id, id);
   CREATE TABLE play_counts (
     user_id     TEXT NOT NULL,
     track_key   TEXT NOT NULL,
     play_count  INTEGER NOT NULL,
     last_played INTEGER NOT NULL,
     track       TEXT NOT NULL,
     PRIMARY KEY (user_id, track_key)
   ) STRICT, WITHOUT ROWID;
   CREATE INDEX play_counts_ranked ON play_counts (user_id, play_count DESC, last_played DESC);
   CREATE TABLE user_stats (
     user_id   TEXT PRIMARY KEY,
     last_seen INTEGER,
     plays_day TEXT,
     plays     INTEGER NOT NULL DEFAULT 0
   ) STRICT`,
  // WITHOUT ROWID suits rows far smaller than a page, and a play count carries the track's JSON (some
  // 400 bytes): each new track split and rebalanced the clustered pages, so a play wrote 2.5 times the
  // pages it does with the rows in a rowid table and only the keys in its indexes.
  `ALTER TABLE play_counts RENAME TO play_counts_clustered;
   CREATE TABLE play_counts (
     user_id     TEXT NOT NULL,
     track_key   TEXT NOT NULL,
     play_count  INTEGER NOT NULL,
     last_played INTEGER NOT NULL,
     track       TEXT NOT NULL,
     UNIQUE (user_id, track_key)
   ) STRICT;
   INSERT INTO play_counts (user_id, track_key, play_count, last_played, track)
     SELECT user_id, track_key, play_count, last_played, track FROM play_counts_clustered;
   DROP TABLE play_counts_clustered;
   CREATE INDEX play_counts_ranked ON play_counts (user_id, play_count DESC, last_played DESC)`,
  // Each user's KV size (UTF-8 bytes of keys and values) beside the revision, so a write is checked
  // against the cap without reading the user's map; existing users' totals are counted once here.
  `ALTER TABLE kv_revisions ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
   INSERT INTO kv_revisions (user_id, revision, bytes)
     SELECT user_id, 0, sum(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))) FROM kv
     WHERE true GROUP BY user_id
     ON CONFLICT (user_id) DO UPDATE SET bytes = excluded.bytes`,
  // When each user last erased their history: a batch written later drops what was seen before it.
  `CREATE TABLE history_forgotten (
     user_id      TEXT PRIMARY KEY,
     forgotten_at INTEGER NOT NULL
   ) STRICT`,
  // Webhooks, their recent deliveries, and the events waiting for them (src/store/sqlite/webhook-queue.ts):
  // a queue row per event, and per webhook the state of the event at its head.
  `CREATE TABLE webhooks (
     id              TEXT PRIMARY KEY,
     user_id         TEXT NOT NULL,
     url             TEXT NOT NULL,
     events          TEXT NOT NULL,
     secret          TEXT NOT NULL,
     created_at      INTEGER NOT NULL,
     disabled_at     INTEGER,
     disabled_reason TEXT
   ) STRICT;
   CREATE INDEX webhooks_by_user ON webhooks (user_id, created_at);
   CREATE TABLE webhook_deliveries (
     seq         INTEGER PRIMARY KEY,
     webhook_id  TEXT NOT NULL,
     delivery_id TEXT NOT NULL,
     record      TEXT NOT NULL,
     UNIQUE (webhook_id, delivery_id)
   ) STRICT;
   CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq);
   CREATE TABLE webhook_queue (
     seq         INTEGER PRIMARY KEY,
     webhook_id  TEXT NOT NULL,
     delivery_id TEXT NOT NULL,
     type        TEXT NOT NULL,
     body        TEXT NOT NULL
   ) STRICT;
   CREATE INDEX webhook_queue_by_webhook ON webhook_queue (webhook_id, seq);
   CREATE TABLE webhook_heads (
     webhook_id       TEXT PRIMARY KEY,
     due_at           INTEGER,
     head_seq         INTEGER,
     attempts         INTEGER NOT NULL DEFAULT 0,
     first_attempt_at INTEGER,
     lease            TEXT,
     failures         INTEGER NOT NULL DEFAULT 0
   ) STRICT;
   CREATE INDEX webhook_heads_due ON webhook_heads (due_at) WHERE due_at IS NOT NULL`,
  `CREATE TABLE api_keys_pending (
     user_id    TEXT PRIMARY KEY,
     key_hash   BLOB NOT NULL UNIQUE,
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL
   ) STRICT`,
  // Each user's privacy settings: the fields they set, as one JSON object.
  `CREATE TABLE privacy_settings (
     user_id  TEXT PRIMARY KEY,
     settings TEXT NOT NULL
   ) STRICT`,
  // Each user's read tokens, by the SHA-256 of the token (docs/privacy.md): never the token itself.
  `CREATE TABLE read_tokens (
     id         TEXT PRIMARY KEY,
     user_id    TEXT NOT NULL,
     token_hash BLOB NOT NULL UNIQUE,
     label      TEXT,
     created_at INTEGER NOT NULL
   ) STRICT;
   CREATE INDEX read_tokens_by_user ON read_tokens (user_id, created_at, id)`,
  // Each user's last moment in a monitored guild, indexed by the moment: the retention sweep reads the
  // oldest first (src/account/retention.ts).
  `CREATE TABLE last_monitored (
     user_id TEXT PRIMARY KEY,
     seen_at INTEGER NOT NULL
   ) STRICT, WITHOUT ROWID;
   CREATE INDEX last_monitored_due ON last_monitored (seen_at, user_id)`,
  // Each ingest node's saved gateway state (src/store/sqlite/gateway-state.ts), replaced whole by each save.
  `CREATE TABLE gateway_state (
     node      TEXT PRIMARY KEY,
     saved_at  INTEGER NOT NULL,
     sessions  TEXT NOT NULL,
     presences BLOB NOT NULL
   ) STRICT`,
  // Each track's plays of its recent UTC days (a JSON object, day → plays), for top tracks by period.
  // Plays counted before have no day: they count in `all` alone.
  `ALTER TABLE play_counts ADD COLUMN days TEXT NOT NULL DEFAULT '{}'`,
];

/** Brings the database to the newest schema, each step in its own transaction. */
export function migrate(db: Database): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(
      `database schema version ${current} is newer than this build knows (${MIGRATIONS.length}); refusing to run`,
    );
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    const step = MIGRATIONS[version] as string;
    db.transaction(() => {
      db.exec(step);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
  return MIGRATIONS.length;
}
