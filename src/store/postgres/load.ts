import type { Snowflake } from '../../presence/model.js';
import { addCounts, noCounts, type StoreDump, type TransferCounts, type UserData } from '../transfer.js';
import type { PostgresStore } from './index.js';
import { ADVISORY_LOCKS } from './locks.js';
import { type Session, transaction } from './queries.js';

/** A batch of the copy writes a few hundred users' whole data in each statement. */
const COPY_TIMEOUT = { statementMs: 300_000, answerMarginMs: 10_000 };

const TARGET_ERASURES = {
  text: 'SELECT user_id, forgotten_at FROM history_forgotten WHERE user_id = ANY ($1::text[])',
};
/**
 * What the target holds of the users copied: their rows go, to be written again as the source has them.
 * $1: the users; $2: those whose history is copied; $3: the key hashes copied (a hash is unique); $4: the
 * webhooks copied; $5 and $6: the read tokens copied, by hash and by id (both unique). Answers the keys removed, so a key copied again keeps its time of creation.
 */
const CLEAR = {
  text: `WITH kv AS (DELETE FROM kv WHERE user_id = ANY ($1::text[])),
           webhooks_gone AS (DELETE FROM webhooks WHERE user_id = ANY ($1::text[]) OR id = ANY ($4::text[])),
           deliveries_gone AS (
             DELETE FROM webhook_deliveries WHERE webhook_id = ANY ($4::text[])
               OR webhook_id IN (SELECT id FROM webhooks WHERE user_id = ANY ($1::text[]))),
           queue_gone AS (
             DELETE FROM webhook_queue WHERE webhook_id = ANY ($4::text[])
               OR webhook_id IN (SELECT id FROM webhooks WHERE user_id = ANY ($1::text[]))),
           heads_gone AS (
             DELETE FROM webhook_heads WHERE webhook_id = ANY ($4::text[])
               OR webhook_id IN (SELECT id FROM webhooks WHERE user_id = ANY ($1::text[]))),
           revisions AS (DELETE FROM kv_revisions WHERE user_id = ANY ($1::text[])),
           privacy AS (DELETE FROM privacy_settings WHERE user_id = ANY ($1::text[])),
           read_tokens_gone AS (
             DELETE FROM read_tokens WHERE user_id = ANY ($1::text[]) OR token_hash = ANY ($5::bytea[])
               OR id = ANY ($6::text[])),
           profiles AS (DELETE FROM profiles WHERE user_id = ANY ($1::text[])),
           status AS (DELETE FROM status_history WHERE user_id = ANY ($2::text[])),
           tracks AS (DELETE FROM track_history WHERE user_id = ANY ($2::text[])),
           plays AS (DELETE FROM play_counts WHERE user_id = ANY ($2::text[])),
           stats AS (DELETE FROM user_stats WHERE user_id = ANY ($2::text[]))
         DELETE FROM api_keys WHERE user_id = ANY ($1::text[]) OR key_hash = ANY ($3::bytea[])
         RETURNING key_hash, created_at`,
};
/**
 * Every table's rows of a batch, each column one array; entries in their order, oldest first. Webhook
 * events waiting are due at the copy ($47): their retries start over.
 */
const WRITE = {
  text: `WITH kv_in AS (
           INSERT INTO kv (user_id, key, value) SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[])
         ), revisions_in AS (
           INSERT INTO kv_revisions (user_id, revision, bytes, keys)
           SELECT * FROM unnest($4::text[], $5::bigint[], $6::bigint[], $7::integer[])
         ), keys_in AS (
           INSERT INTO api_keys (user_id, key_hash, created_at)
           SELECT * FROM unnest($8::text[], $9::bytea[], $10::bigint[])
         ), profiles_in AS (
           INSERT INTO profiles (user_id, banner, accent_color, fetched_at)
           SELECT * FROM unnest($11::text[], $12::text[], $13::integer[], $14::bigint[])
         ), status_in AS (
           INSERT INTO status_history (user_id, status, ts)
           SELECT user_id, status, ts FROM unnest($15::text[], $16::text[], $17::bigint[])
             WITH ORDINALITY AS s (user_id, status, ts, n) ORDER BY n
         ), tracks_in AS (
           INSERT INTO track_history (user_id, entry)
           SELECT user_id, entry FROM unnest($18::text[], $19::text[]) WITH ORDINALITY AS t (user_id, entry, n)
           ORDER BY n
         ), plays_in AS (
           INSERT INTO play_counts (user_id, track_key, play_count, last_played, track, days)
           SELECT * FROM unnest($20::text[], $21::bytea[], $22::integer[], $23::bigint[], $24::text[], $55::jsonb[])
         ), stats_in AS (
           INSERT INTO user_stats (user_id, last_seen, plays_day, plays, tracks)
           SELECT * FROM unnest($25::text[], $26::bigint[], $27::text[], $28::integer[], $29::integer[])
         ), webhooks_in AS (
           INSERT INTO webhooks (id, user_id, url, events, secret, created_at, disabled_at, disabled_reason)
           SELECT * FROM unnest($32::text[], $33::text[], $34::text[], $35::text[], $36::text[], $37::bigint[],
             $38::bigint[], $39::text[])
         ), deliveries_in AS (
           INSERT INTO webhook_deliveries (webhook_id, delivery_id, record)
           SELECT webhook_id, delivery_id, record FROM unnest($40::text[], $41::text[], $42::text[])
             WITH ORDINALITY AS d (webhook_id, delivery_id, record, n) ORDER BY n
         ), queue_in AS (
           INSERT INTO webhook_queue (webhook_id, delivery_id, type, body)
           SELECT webhook_id, delivery_id, type, body FROM unnest($43::text[], $44::text[], $45::text[], $46::text[])
             WITH ORDINALITY AS q (webhook_id, delivery_id, type, body, n) ORDER BY n
         ), heads_in AS (
           INSERT INTO webhook_heads (webhook_id, due_at) SELECT DISTINCT webhook_id, $47::bigint FROM unnest($43::text[]) AS q (webhook_id)
         ), privacy_in AS (
           INSERT INTO privacy_settings (user_id, settings)
           SELECT user_id, settings::jsonb FROM unnest($48::text[], $49::text[]) AS p (user_id, settings)
         ), read_tokens_in AS (
           INSERT INTO read_tokens (id, user_id, token_hash, label, created_at)
           SELECT * FROM unnest($50::text[], $51::text[], $52::bytea[], $53::text[], $54::bigint[])
         )
         INSERT INTO history_forgotten AS f (user_id, forgotten_at) SELECT * FROM unnest($30::text[], $31::bigint[])
         ON CONFLICT (user_id) DO UPDATE SET forgotten_at = greatest(f.forgotten_at, excluded.forgotten_at)`,
};

/**
 * Copies every user of `dump` into the PostgreSQL store, a batch of users per transaction. Each user
 * copied has in PostgreSQL what the source holds (what was there of them is replaced), so a copy run again
 * changes nothing, and one cut short is finished by running it again; users only in PostgreSQL are left
 * alone. Erasures only move forward: a user who erased their history in PostgreSQL after an earlier copy
 * keeps it erased, and the later moment of erasure of the two stays.
 */
export async function copyIntoPostgres(
  store: PostgresStore,
  dump: StoreDump,
  onBatch?: (total: TransferCounts) => void,
): Promise<TransferCounts> {
  const total = noCounts();
  for await (const users of dump) {
    if (users.length === 0) continue;
    addCounts(
      total,
      await transaction(store.pool, (session) => writeBatch(session, users), { timeout: COPY_TIMEOUT }),
    );
    onBatch?.(total);
  }
  return total;
}

/** Holds the history lock alone, as an erasure does: a node's batches wait, and see the copy whole. */
async function writeBatch(session: Session, users: readonly UserData[]): Promise<TransferCounts> {
  await session.query({ text: 'SELECT pg_advisory_xact_lock($1, $2)', values: [...ADVISORY_LOCKS.history] });
  const userIds = users.map((user) => user.userId);
  const { rows: erasures } = await session.query<{ user_id: string; forgotten_at: number }>({
    ...TARGET_ERASURES,
    values: [userIds],
  });
  const erasedThere = new Map(erasures.map((row) => [row.user_id, row.forgotten_at]));
  const counts = noCounts();
  const withHistory = new Set(
    users.filter((user) => {
      const there = erasedThere.get(user.userId);
      const kept = there === undefined || (user.forgottenAt !== null && user.forgottenAt >= there);
      if (!kept) counts.erasedSince++;
      return kept;
    }),
  );
  const hashes = users.flatMap((user) => (user.apiKey ? [user.apiKey.hash] : []));
  const webhookIds = users.flatMap((user) => user.webhooks.map(({ webhook }) => webhook.id));
  const tokens = users.flatMap((user) => user.readTokens);
  const { rows: removedKeys } = await session.query<{ key_hash: Buffer; created_at: number }>({
    ...CLEAR,
    values: [
      userIds,
      [...withHistory].map((user) => user.userId),
      hashes,
      webhookIds,
      tokens.map((token) => token.hash),
      tokens.map((token) => token.id),
    ],
  });
  const createdAt = new Map(removedKeys.map((row) => [row.key_hash.toString('hex'), row.created_at]));
  const rows = new CopyRows(Date.now(), createdAt);
  for (const user of users) rows.add(user, withHistory.has(user));
  await session.query({ ...WRITE, values: rows.values() });
  addCounts(counts, rows.counts);
  return counts;
}

/** A batch as the arrays WRITE takes, and what it writes counted. */
class CopyRows {
  readonly counts = noCounts();
  private readonly kv = { users: [] as Snowflake[], keys: [] as string[], values: [] as Buffer[] };
  private readonly revisions = {
    users: [] as Snowflake[],
    revisions: [] as number[],
    bytes: [] as number[],
    keys: [] as number[],
  };
  private readonly apiKeys = { users: [] as Snowflake[], hashes: [] as Buffer[], createdAt: [] as number[] };
  private readonly profiles = {
    users: [] as Snowflake[],
    banners: [] as (string | null)[],
    colors: [] as (number | null)[],
    fetchedAt: [] as number[],
  };
  private readonly status = { users: [] as Snowflake[], statuses: [] as string[], ts: [] as number[] };
  private readonly tracks = { users: [] as Snowflake[], entries: [] as string[] };
  private readonly plays = {
    users: [] as Snowflake[],
    keys: [] as Buffer[],
    counts: [] as number[],
    lastPlayed: [] as number[],
    tracks: [] as string[],
    days: [] as string[],
  };
  private readonly stats = {
    users: [] as Snowflake[],
    lastSeen: [] as (number | null)[],
    days: [] as (string | null)[],
    plays: [] as number[],
    tracks: [] as number[],
  };
  private readonly erasures = { users: [] as Snowflake[], at: [] as number[] };
  private readonly webhooks = {
    ids: [] as string[],
    users: [] as Snowflake[],
    urls: [] as string[],
    events: [] as string[],
    secrets: [] as string[],
    createdAt: [] as number[],
    disabledAt: [] as (number | null)[],
    reasons: [] as (string | null)[],
  };
  private readonly deliveries = { webhooks: [] as string[], ids: [] as string[], records: [] as string[] };
  private readonly waiting = {
    webhooks: [] as string[],
    ids: [] as string[],
    types: [] as string[],
    bodies: [] as string[],
  };
  /** Each user's settings as JSON text. */
  private readonly privacy = { users: [] as Snowflake[], settings: [] as string[] };
  private readonly readTokens = {
    ids: [] as string[],
    users: [] as Snowflake[],
    hashes: [] as Buffer[],
    labels: [] as (string | null)[],
    createdAt: [] as number[],
  };

  constructor(
    private readonly now: number,
    /** When each key hash (hex) removed from the target was made. */
    private readonly createdAt: Map<string, number>,
  ) {}

  add(user: UserData, withHistory: boolean): void {
    const { userId } = user;
    this.counts.users++;
    if (user.kv) {
      let bytes = 0;
      for (const [key, value] of user.kv.entries) {
        const stored = Buffer.from(value, 'utf8');
        bytes += Buffer.byteLength(key) + stored.length;
        this.kv.users.push(userId);
        this.kv.keys.push(key);
        this.kv.values.push(stored);
      }
      this.revisions.users.push(userId);
      this.revisions.revisions.push(user.kv.revision);
      this.revisions.bytes.push(bytes);
      this.revisions.keys.push(user.kv.entries.length);
      this.counts.kvUsers++;
      this.counts.kvKeys += user.kv.entries.length;
    }
    if (user.apiKey) {
      const { hash } = user.apiKey;
      this.apiKeys.users.push(userId);
      this.apiKeys.hashes.push(hash);
      this.apiKeys.createdAt.push(
        user.apiKey.createdAt ?? this.createdAt.get(hash.toString('hex')) ?? this.now,
      );
      this.counts.apiKeys++;
    }
    if (user.profile) {
      this.profiles.users.push(userId);
      this.profiles.banners.push(user.profile.profile.banner);
      this.profiles.colors.push(user.profile.profile.accent_color);
      this.profiles.fetchedAt.push(user.profile.fetchedAt);
      this.counts.profiles++;
    }
    if (user.forgottenAt !== null) {
      this.erasures.users.push(userId);
      this.erasures.at.push(user.forgottenAt);
      this.counts.forgetMarkers++;
    }
    for (const { webhook, deliveries, waiting } of user.webhooks) {
      this.webhooks.ids.push(webhook.id);
      this.webhooks.users.push(userId);
      this.webhooks.urls.push(webhook.url);
      this.webhooks.events.push(JSON.stringify(webhook.events));
      this.webhooks.secrets.push(webhook.secret);
      this.webhooks.createdAt.push(webhook.createdAt);
      this.webhooks.disabledAt.push(webhook.disabledAt);
      this.webhooks.reasons.push(webhook.disabledReason);
      for (const record of deliveries) {
        this.deliveries.webhooks.push(webhook.id);
        this.deliveries.ids.push((JSON.parse(record) as { id: string }).id);
        this.deliveries.records.push(record);
      }
      for (const event of waiting) {
        this.waiting.webhooks.push(webhook.id);
        this.waiting.ids.push(event.id);
        this.waiting.types.push(event.type);
        this.waiting.bodies.push(event.body);
      }
      this.counts.webhooks++;
      this.counts.webhookDeliveries += deliveries.length;
      this.counts.webhookEvents += waiting.length;
    }
    if (user.privacy) {
      this.privacy.users.push(userId);
      this.privacy.settings.push(JSON.stringify(user.privacy));
      this.counts.privacySettings++;
    }
    for (const token of user.readTokens) {
      this.readTokens.ids.push(token.id);
      this.readTokens.users.push(userId);
      this.readTokens.hashes.push(token.hash);
      this.readTokens.labels.push(token.label);
      this.readTokens.createdAt.push(token.createdAt);
      this.counts.readTokens++;
    }
    if (withHistory) this.addHistory(user);
  }

  private addHistory(user: UserData): void {
    const { userId } = user;
    for (const entry of user.status) {
      this.status.users.push(userId);
      this.status.statuses.push(entry.status);
      this.status.ts.push(entry.ts);
    }
    for (const entry of user.tracks) {
      this.tracks.users.push(userId);
      this.tracks.entries.push(entry);
    }
    for (const play of user.plays) {
      this.plays.users.push(userId);
      this.plays.keys.push(Buffer.from(play.key, 'utf8'));
      this.plays.counts.push(play.count);
      this.plays.lastPlayed.push(play.lastPlayed);
      this.plays.tracks.push(play.track);
      this.plays.days.push(JSON.stringify(play.days));
    }
    this.counts.statusEntries += user.status.length;
    this.counts.trackEntries += user.tracks.length;
    this.counts.playCounts += user.plays.length;
    // The stats row counts the user's tracks, which the cap on them is checked against.
    if (user.stats || user.plays.length > 0) {
      this.stats.users.push(userId);
      this.stats.lastSeen.push(user.stats?.lastSeen ?? null);
      this.stats.days.push(user.stats?.playsDay ?? null);
      this.stats.plays.push(user.stats?.plays ?? 0);
      this.stats.tracks.push(user.plays.length);
      this.counts.stats++;
    }
  }

  /** WRITE's parameters. */
  values(): unknown[] {
    const { kv, revisions, apiKeys, profiles, status, tracks, plays, stats, erasures, webhooks, deliveries } =
      this;
    const { waiting, privacy, readTokens } = this;
    return [
      ...[kv.users, kv.keys, kv.values],
      ...[revisions.users, revisions.revisions, revisions.bytes, revisions.keys],
      ...[apiKeys.users, apiKeys.hashes, apiKeys.createdAt],
      ...[profiles.users, profiles.banners, profiles.colors, profiles.fetchedAt],
      ...[status.users, status.statuses, status.ts],
      ...[tracks.users, tracks.entries],
      ...[plays.users, plays.keys, plays.counts, plays.lastPlayed, plays.tracks],
      ...[stats.users, stats.lastSeen, stats.days, stats.plays, stats.tracks],
      ...[erasures.users, erasures.at],
      ...[webhooks.ids, webhooks.users, webhooks.urls, webhooks.events, webhooks.secrets, webhooks.createdAt],
      ...[webhooks.disabledAt, webhooks.reasons],
      ...[deliveries.webhooks, deliveries.ids, deliveries.records],
      ...[waiting.webhooks, waiting.ids, waiting.types, waiting.bodies, this.now],
      ...[privacy.users, privacy.settings],
      ...[readTokens.ids, readTokens.users, readTokens.hashes, readTokens.labels, readTokens.createdAt],
      plays.days,
    ];
  }
}
