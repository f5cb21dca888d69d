import type { Pool } from 'pg';
import {
  HISTORY_LIMIT,
  oldestDayKept,
  playKeyOf,
  type StatusEntry,
  type StoredStats,
  type TopTrack,
  type TrackEntry,
  utcDay,
} from '../../model/history.js';
import type { DiscordStatus, NowPlaying, Snowflake } from '../../presence/model.js';
import { afterForget } from '../forgotten.js';
import {
  type ForgetResult,
  HISTORY_BATCH_IDS_KEPT_MS,
  type HistoryStore,
  type HistoryWrite,
  type LatestHistory,
} from '../ports.js';
import { type ListsOf, WaitingLists, type WaitingListsOptions, withoutTs } from '../waiting-lists.js';
import { ADVISORY_LOCKS } from './locks.js';
import {
  type PostgresTimeouts,
  query,
  type Session,
  type TransactionOptions,
  transaction,
} from './queries.js';

type Limits = { history: number; trackedTracks: number };

/** How often a process forgets the ids past it. */
const BATCH_IDS_PRUNED_EVERY_MS = 3_600_000;

const SHARE_HISTORY = { name: 'history.share', text: 'SELECT pg_advisory_xact_lock_shared($1, $2)' };
const OWN_HISTORY = { name: 'history.own', text: 'SELECT pg_advisory_xact_lock($1, $2)' };
const FORGOTTEN = {
  name: 'history.forgotten',
  text: 'SELECT user_id, forgotten_at FROM history_forgotten WHERE user_id = ANY ($1::text[])',
};
/** Nothing inserted: a try of this batch committed already, and only its answer was lost. */
const CLAIM_BATCH = {
  name: 'history.batch',
  text: 'INSERT INTO history_batches (id, written_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING',
};
/** Rows another node's batch is pruning are left to it rather than waited for. */
const PRUNE_BATCHES = {
  name: 'history.batches-pruned',
  text: `DELETE FROM history_batches WHERE id IN (
           SELECT id FROM history_batches WHERE written_at < $1 FOR UPDATE SKIP LOCKED)`,
};
/**
 * A whole batch in one statement: the entries in the batch's order (the newest has the highest id), the
 * play counts (one row per track, `xmax = 0` telling a track counted for the first time, its plays of each
 * day ($17) added to those kept since day $18), and one stats row per user, which also counts the user's
 * tracks. Answers the users now counting more tracks than the cap ($16). $15 lists the users whose plays
 * of the day start over within the batch (it spans midnight).
 */
const APPEND = {
  name: 'history.append',
  text: `WITH status_in AS (
           INSERT INTO status_history (user_id, status, ts)
           SELECT user_id, status, ts FROM unnest($1::text[], $2::text[], $3::bigint[])
             WITH ORDINALITY AS s (user_id, status, ts, n) ORDER BY n
         ), track_in AS (
           INSERT INTO track_history (user_id, entry)
           SELECT user_id, entry FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS t (user_id, entry, n)
           ORDER BY n
         ), played AS (
           INSERT INTO play_counts AS p (user_id, track_key, play_count, last_played, track, days)
           SELECT * FROM unnest($6::text[], $7::bytea[], $8::integer[], $9::bigint[], $10::text[], $17::jsonb[])
           ON CONFLICT (user_id, track_key) DO UPDATE SET play_count = p.play_count + excluded.play_count,
             last_played = excluded.last_played, track = excluded.track,
             days = (SELECT coalesce(jsonb_object_agg(d.day, d.plays), '{}') FROM (
               SELECT day, sum(plays::integer) AS plays FROM (
                 SELECT * FROM jsonb_each_text(p.days) UNION ALL SELECT * FROM jsonb_each_text(excluded.days)
               ) AS e (day, plays) WHERE day >= $18 GROUP BY day) AS d)
           RETURNING user_id, xmax = 0 AS added
         ), grown AS (
           SELECT user_id, count(*) FILTER (WHERE added)::integer AS tracks FROM played GROUP BY user_id
         ), stats AS (
           INSERT INTO user_stats AS s (user_id, last_seen, plays_day, plays, tracks)
           SELECT i.user_id, i.last_seen, i.plays_day, i.plays, coalesce(g.tracks, 0)
           FROM unnest($11::text[], $12::bigint[], $13::text[], $14::integer[]) AS i (user_id, last_seen, plays_day, plays)
           LEFT JOIN grown g USING (user_id)
           ORDER BY i.user_id
           ON CONFLICT (user_id) DO UPDATE SET
             last_seen = greatest(s.last_seen, excluded.last_seen),
             plays_day = coalesce(excluded.plays_day, s.plays_day),
             plays = CASE
               WHEN excluded.plays_day IS NULL THEN s.plays
               WHEN s.plays_day = excluded.plays_day AND s.user_id <> ALL ($15::text[]) THEN s.plays + excluded.plays
               ELSE excluded.plays END,
             tracks = s.tracks + excluded.tracks
           RETURNING user_id, tracks
         )
         SELECT user_id FROM stats WHERE tracks > $16`,
};
/** Evicts the least played (then oldest) tracks past the cap ($2) of these users. */
const CAP_PLAYS = {
  name: 'history.cap',
  text: `WITH cut AS (
           SELECT c.user_id, c.track_key FROM unnest($1::text[]) AS u (user_id)
           CROSS JOIN LATERAL (
             SELECT user_id, track_key FROM play_counts WHERE user_id = u.user_id
             ORDER BY play_count DESC, last_played DESC OFFSET $2) AS c
         ), evicted AS (
           DELETE FROM play_counts p USING cut WHERE p.user_id = cut.user_id AND p.track_key = cut.track_key
         )
         UPDATE user_stats SET tracks = $2 WHERE user_id = ANY ($1::text[])`,
};
/** Keeps the newest $3 entries of these users' status lists ($1) and track lists ($2). */
const TRIM = {
  name: 'history.trim',
  text: `WITH status_cut AS (
           DELETE FROM status_history h USING (
             SELECT u.user_id, (SELECT id FROM status_history WHERE user_id = u.user_id
                                ORDER BY id DESC OFFSET $3 LIMIT 1) AS id
             FROM unnest($1::text[]) AS u (user_id)) AS c
           WHERE h.user_id = c.user_id AND h.id <= c.id
         )
         DELETE FROM track_history h USING (
           SELECT u.user_id, (SELECT id FROM track_history WHERE user_id = u.user_id
                              ORDER BY id DESC OFFSET $3 LIMIT 1) AS id
           FROM unnest($2::text[]) AS u (user_id)) AS c
         WHERE h.user_id = c.user_id AND h.id <= c.id`,
};
const FORGET = {
  name: 'history.forget',
  text: `WITH status AS (DELETE FROM status_history WHERE user_id = $1 RETURNING 1),
           tracks AS (DELETE FROM track_history WHERE user_id = $1 RETURNING 1),
           plays AS (DELETE FROM play_counts WHERE user_id = $1 RETURNING 1),
           stats AS (DELETE FROM user_stats WHERE user_id = $1),
           erased AS (
             INSERT INTO history_forgotten AS f (user_id, forgotten_at) VALUES ($1, $2)
             ON CONFLICT (user_id) DO UPDATE SET forgotten_at = greatest(f.forgotten_at, excluded.forgotten_at))
         SELECT (SELECT count(*) FROM status) AS status, (SELECT count(*) FROM tracks) AS tracks,
           (SELECT count(*) FROM plays) AS plays`,
};
const READ_STATUS = {
  name: 'history.status',
  text: 'SELECT status, ts FROM status_history WHERE user_id = $1 ORDER BY id DESC LIMIT $2',
};
const READ_TRACKS = {
  name: 'history.tracks',
  text: 'SELECT entry FROM track_history WHERE user_id = $1 ORDER BY id DESC LIMIT $2',
};
const LATEST = {
  name: 'history.latest',
  text: `SELECT u.user_id, s.status, s.ts, t.entry FROM unnest($1::text[]) AS u (user_id)
         LEFT JOIN LATERAL (
           SELECT status, ts FROM status_history WHERE user_id = u.user_id ORDER BY id DESC LIMIT 1) AS s ON true
         LEFT JOIN LATERAL (
           SELECT entry FROM track_history WHERE user_id = u.user_id ORDER BY id DESC LIMIT 1) AS t ON true
         WHERE s.status IS NOT NULL OR t.entry IS NOT NULL`,
};
/** Tracks counted up to the limit ($2): entries past it only wait to be trimmed. */
const STATS = {
  name: 'history.stats',
  text: `SELECT
           (SELECT status FROM status_history WHERE user_id = $1 ORDER BY id DESC LIMIT 1) AS last_status,
           (SELECT count(*) FROM (
              SELECT 1 FROM track_history WHERE user_id = $1 ORDER BY id DESC LIMIT $2) AS t) AS track_count,
           s.last_seen, s.plays_day, s.plays
         FROM (VALUES (1)) AS one LEFT JOIN user_stats s ON s.user_id = $1`,
};
const TOP_TRACKS = {
  name: 'history.top',
  text: `SELECT track, play_count, last_played FROM play_counts WHERE user_id = $1 AND play_count >= $2
         ORDER BY play_count DESC, last_played DESC LIMIT $3`,
};
const PLAY_DAYS = {
  name: 'history.play-days',
  text: `SELECT track_key, days FROM play_counts WHERE user_id = $1 AND days <> '{}'::jsonb`,
};
/** Counting the plays of day $4 and after. */
const TOP_TRACKS_SINCE = {
  name: 'history.top-since',
  text: `SELECT track, play_count, last_played FROM (
           SELECT track, last_played, (SELECT coalesce(sum(value::integer), 0) FROM jsonb_each_text(days)
                                       WHERE key >= $4)::integer AS play_count
           FROM play_counts WHERE user_id = $1) AS t
         WHERE play_count >= $2 ORDER BY play_count DESC, last_played DESC LIMIT $3`,
};

export class PostgresHistoryStore implements HistoryStore {
  private readonly waiting: WaitingLists;
  /** The last batch's: trimming at close has no batch of its own. */
  private limits: Limits | null = null;
  private batchIdsPrunedAt = Number.NEGATIVE_INFINITY;
  /** Batches, trims and erasures: longer than a request's statements. */
  private readonly batchTimeout: TransactionOptions<unknown>['timeout'];

  constructor(
    private readonly pool: Pool,
    timeouts: PostgresTimeouts,
    options?: WaitingListsOptions,
  ) {
    this.waiting = new WaitingLists(options);
    this.batchTimeout = { statementMs: timeouts.batchMs, answerMarginMs: timeouts.answerMarginMs };
  }

  /**
   * One transaction, a handful of statements whatever the batch's size. It holds the history lock shared,
   * so the moments of erasure it reads stay the latest until it commits. Its id is recorded in it: a try
   * whose first try is still running on the server waits for it, then writes only if it rolled back.
   */
  async appendHistory(batch: readonly HistoryWrite[], limits: Limits, batchId?: string): Promise<void> {
    if (batch.length === 0) return;
    this.limits = limits;
    const trimmed = await transaction(
      this.pool,
      async (client) => {
        const now = this.waiting.now();
        if (batchId !== undefined) {
          const { rowCount } = await client.query({ ...CLAIM_BATCH, values: [batchId, now] });
          if (rowCount === 0) return { status: [], tracks: [] };
          if (now - this.batchIdsPrunedAt >= BATCH_IDS_PRUNED_EVERY_MS) {
            await client.query({ ...PRUNE_BATCHES, values: [now - HISTORY_BATCH_IDS_KEPT_MS] });
            this.batchIdsPrunedAt = now;
          }
        }
        await client.query({ ...SHARE_HISTORY, values: [...ADVISORY_LOCKS.history] });
        const userIds = [...new Set(batch.map((write) => write.userId))];
        const { rows: erasures } = await client.query<{ user_id: string; forgotten_at: number }>({
          ...FORGOTTEN,
          values: [userIds],
        });
        const erasedAt = new Map(erasures.map((row) => [row.user_id, row.forgotten_at]));
        const rows = new BatchRows();
        for (const given of batch) {
          const erased = erasedAt.get(given.userId);
          const write = erased === undefined ? given : afterForget(given, erased);
          if (write === null) continue;
          rows.add(write);
          if (write.status) this.waiting.statusGrew(write.userId, now);
          if (write.track) this.waiting.tracksGrew(write.userId, now);
        }
        const { rows: pastCap } = await client.query<{ user_id: string }>({
          ...APPEND,
          values: rows.values(limits.trackedTracks),
        });
        if (pastCap.length > 0) {
          await client.query({
            ...CAP_PLAYS,
            values: [pastCap.map((row) => row.user_id), limits.trackedTracks],
          });
        }
        const due = this.waiting.due(now);
        await trim(client, due, limits);
        return due;
      },
      { timeout: this.batchTimeout },
    );
    this.waiting.trimmed(trimmed);
  }

  /** Trims every list that waits: the store calls it before closing its pool. */
  async trimWaitingLists(): Promise<void> {
    const { limits } = this;
    if (limits === null) return;
    await transaction(this.pool, (session) => trim(session, this.waiting.all(), limits), {
      timeout: this.batchTimeout,
    });
    this.waiting.clear();
  }

  async history(userId: Snowflake, limit: number): Promise<{ status: StatusEntry[]; tracks: TrackEntry[] }> {
    const [status, tracks] = await Promise.all([
      query<{ status: DiscordStatus; ts: number }>(this.pool, { ...READ_STATUS, values: [userId, limit] }),
      query<{ entry: string }>(this.pool, { ...READ_TRACKS, values: [userId, limit] }),
    ]);
    return {
      status: status.rows.map((row) => ({ status: row.status, ts: row.ts })),
      tracks: tracks.rows.map((row) => JSON.parse(row.entry) as TrackEntry),
    };
  }

  async latest(userIds: readonly Snowflake[]): Promise<Map<Snowflake, LatestHistory>> {
    const found = new Map<Snowflake, LatestHistory>();
    if (userIds.length === 0) return found;
    const { rows } = await query<{
      user_id: string;
      status: DiscordStatus | null;
      ts: number | null;
      entry: string | null;
    }>(this.pool, { ...LATEST, values: [[...new Set(userIds)]] });
    for (const row of rows) {
      found.set(row.user_id, {
        status: row.status === null ? null : { status: row.status, ts: row.ts as number },
        track: row.entry === null ? null : (JSON.parse(row.entry) as TrackEntry),
      });
    }
    return found;
  }

  async stats(userId: Snowflake): Promise<StoredStats> {
    const { rows } = await query<{
      last_status: DiscordStatus | null;
      track_count: number;
      last_seen: number | null;
      plays_day: string | null;
      plays: number | null;
    }>(this.pool, { ...STATS, values: [userId, HISTORY_LIMIT] });
    const row = rows[0];
    return {
      lastStatus: row?.last_status ?? null,
      lastSeen: row?.last_seen ?? null,
      trackHistoryCount: row?.track_count ?? 0,
      playsDay: row?.plays_day ?? null,
      plays: row?.plays ?? 0,
    };
  }

  async topTracks(userId: Snowflake, minPlays: number, limit: number, since?: string): Promise<TopTrack[]> {
    const { rows } = await query<{ track: string; play_count: number; last_played: number }>(
      this.pool,
      since === undefined
        ? { ...TOP_TRACKS, values: [userId, minPlays, limit] }
        : { ...TOP_TRACKS_SINCE, values: [userId, minPlays, limit, since] },
    );
    return rows.map((row) => ({
      ...(JSON.parse(row.track) as NowPlaying),
      last_played: row.last_played,
      play_count: row.play_count,
    }));
  }

  async playDays(userId: Snowflake): Promise<Map<string, Record<string, number>>> {
    const { rows } = await query<{ track_key: Buffer; days: Record<string, number> }>(this.pool, {
      ...PLAY_DAYS,
      values: [userId],
    });
    return new Map(rows.map((row) => [row.track_key.toString('utf8'), row.days]));
  }

  async forget(userId: Snowflake, at: number): Promise<ForgetResult> {
    return transaction(this.pool, (client) => forgetHistory(client, userId, at), {
      timeout: this.batchTimeout,
    });
  }
}

/**
 * Erases the user's history in the session's transaction, holding the history lock alone: batches in
 * flight land first, and later ones read this erasure.
 */
export async function forgetHistory(client: Session, userId: Snowflake, at: number): Promise<ForgetResult> {
  await client.query({ ...OWN_HISTORY, values: [...ADVISORY_LOCKS.history] });
  const { rows } = await client.query<{ status: number; tracks: number; plays: number }>({
    ...FORGET,
    values: [userId, at],
  });
  const row = rows[0] as { status: number; tracks: number; plays: number };
  // Counted as read: entries past the limit were only waiting to be trimmed.
  return {
    statusEntries: Math.min(row.status, HISTORY_LIMIT),
    trackEntries: Math.min(row.tracks, HISTORY_LIMIT),
    playCounts: row.plays,
  };
}

async function trim(client: Session, lists: ListsOf, limits: Limits): Promise<void> {
  if (lists.status.length === 0 && lists.tracks.length === 0) return;
  await client.query({ ...TRIM, values: [lists.status, lists.tracks, limits.history] });
}

/** A play counted in a batch: how often (in all, and each UTC day), and the latest play's time and metadata. */
interface Played {
  userId: Snowflake;
  key: string;
  count: number;
  lastPlayed: number;
  track: string;
  days: Record<string, number>;
}

/** One user's stats as a batch leaves them: the day's plays it counted, and the latest last_seen. */
interface StatsRow {
  lastSeen: number | null;
  day: string | null;
  plays: number;
  /** The day changed within the batch: its count replaces what is stored, whatever day that was. */
  restarted: boolean;
}

/** A batch as the arrays APPEND takes, each column one array. */
class BatchRows {
  private readonly status = { users: [] as string[], statuses: [] as string[], ts: [] as number[] };
  private readonly tracks = { users: [] as string[], entries: [] as string[] };
  private readonly plays = new Map<string, Played>();
  private readonly stats = new Map<Snowflake, StatsRow>();

  add(write: HistoryWrite): void {
    const { userId } = write;
    if (write.status) {
      this.status.users.push(userId);
      this.status.statuses.push(write.status.status);
      this.status.ts.push(write.status.ts);
    }
    const { track } = write;
    if (track) {
      const stats = this.statsOf(userId);
      const entry = JSON.stringify(track);
      this.tracks.users.push(userId);
      this.tracks.entries.push(entry);
      const day = utcDay(track.ts);
      if (stats.day === day) stats.plays++;
      else {
        stats.restarted ||= stats.day !== null;
        stats.day = day;
        stats.plays = 1;
      }
      const key = write.countsPlay ? playKeyOf(track) : null;
      if (key !== null) this.countPlay(userId, key, track.ts, withoutTs(entry, track));
    }
    if (write.lastSeen !== null) {
      const stats = this.statsOf(userId);
      stats.lastSeen = Math.max(stats.lastSeen ?? write.lastSeen, write.lastSeen);
    }
  }

  /** APPEND's parameters, with the cap on tracks counted per user. */
  values(trackedTracks: number): unknown[] {
    // In key order, so that concurrent batches lock the rows they share in the same order.
    const plays = [...this.plays.values()].sort(
      (a, b) => compare(a.userId, b.userId) || compare(a.key, b.key),
    );
    const stats = [...this.stats].sort(([a], [b]) => compare(a, b));
    return [
      this.status.users,
      this.status.statuses,
      this.status.ts,
      this.tracks.users,
      this.tracks.entries,
      plays.map((played) => played.userId),
      plays.map((played) => Buffer.from(played.key, 'utf8')),
      plays.map((played) => played.count),
      plays.map((played) => played.lastPlayed),
      plays.map((played) => played.track),
      stats.map(([userId]) => userId),
      stats.map(([, row]) => row.lastSeen),
      stats.map(([, row]) => row.day),
      stats.map(([, row]) => row.plays),
      stats.filter(([, row]) => row.restarted).map(([userId]) => userId),
      trackedTracks,
      plays.map((played) => JSON.stringify(played.days)),
      oldestDayKept(Math.max(0, ...plays.map((played) => played.lastPlayed))),
    ];
  }

  private countPlay(userId: Snowflake, key: string, ts: number, track: string): void {
    const id = `${userId}:${key}`;
    const day = utcDay(ts);
    const played = this.plays.get(id);
    if (played) {
      played.count++;
      played.lastPlayed = ts;
      played.track = track;
      played.days[day] = (played.days[day] ?? 0) + 1;
    } else this.plays.set(id, { userId, key, count: 1, lastPlayed: ts, track, days: { [day]: 1 } });
  }

  private statsOf(userId: Snowflake): StatsRow {
    let stats = this.stats.get(userId);
    if (!stats) {
      stats = { lastSeen: null, day: null, plays: 0, restarted: false };
      this.stats.set(userId, stats);
    }
    return stats;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
