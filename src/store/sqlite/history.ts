import type { Database, Statement } from 'better-sqlite3';
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
import type { ForgetResult, HistoryStore, HistoryWrite, LatestHistory } from '../ports.js';
import { type ListsOf, WaitingLists, type WaitingListsOptions, withoutTs } from '../waiting-lists.js';

type Limits = { history: number; trackedTracks: number };

export class SqliteHistoryStore implements HistoryStore {
  private readonly append: (batch: readonly HistoryWrite[], limits: Limits) => ListsOf;
  private readonly trimAll: (limits: Limits) => void;
  /** `forget`, run in the caller's transaction when there is one (an erasure of everything, accounts.ts). */
  readonly erase: (userId: Snowflake, at: number) => ForgetResult;
  private readonly waiting: WaitingLists;
  /** The last batch's: trimming at close has no batch of its own. */
  private limits: Limits | null = null;

  /** Prepared once: the recorder reads every newly seen user's last entries, so these run per user. */
  private readonly reads: Record<
    | 'status'
    | 'tracks'
    | 'lastStatus'
    | 'trackCount'
    | 'stats'
    | 'topTracks'
    | 'topTracksSince'
    | 'playDays'
    | 'latestStatus'
    | 'latestTracks',
    Statement
  >;

  constructor(db: Database, options: WaitingListsOptions = {}) {
    this.waiting = new WaitingLists(options);
    this.reads = {
      status: db.prepare('SELECT status, ts FROM status_history WHERE user_id = ? ORDER BY id DESC LIMIT ?'),
      tracks: db.prepare('SELECT entry FROM track_history WHERE user_id = ? ORDER BY id DESC LIMIT ?'),
      lastStatus: db.prepare('SELECT status FROM status_history WHERE user_id = ? ORDER BY id DESC LIMIT 1'),
      // Up to the limit: entries past it only wait to be trimmed.
      trackCount: db.prepare(
        'SELECT count(*) AS n FROM (SELECT 1 FROM track_history WHERE user_id = ? ORDER BY id DESC LIMIT ?)',
      ),
      stats: db.prepare('SELECT last_seen, plays_day, plays FROM user_stats WHERE user_id = ?'),
      // The users come as one JSON array: one statement for any number of them.
      latestStatus: db.prepare(
        `SELECT user_id, status, ts FROM status_history WHERE id IN (
           SELECT max(id) FROM status_history WHERE user_id IN (SELECT value FROM json_each(?)) GROUP BY user_id)`,
      ),
      latestTracks: db.prepare(
        `SELECT user_id, entry FROM track_history WHERE id IN (
           SELECT max(id) FROM track_history WHERE user_id IN (SELECT value FROM json_each(?)) GROUP BY user_id)`,
      ),
      topTracks: db.prepare(
        `SELECT track, play_count, last_played FROM play_counts WHERE user_id = ? AND play_count >= ?
         ORDER BY play_count DESC, last_played DESC LIMIT ?`,
      ),
      playDays: db.prepare("SELECT track_key, days FROM play_counts WHERE user_id = ? AND days <> '{}'"),
      topTracksSince: db.prepare(
        `SELECT track, play_count, last_played FROM (
           SELECT track, last_played,
             (SELECT coalesce(sum(value), 0) FROM json_each(days) WHERE key >= @since) AS play_count
           FROM play_counts WHERE user_id = @userId)
         WHERE play_count >= @minPlays ORDER BY play_count DESC, last_played DESC LIMIT @limit`,
      ),
    };
    const insertStatus = db.prepare('INSERT INTO status_history (user_id, status, ts) VALUES (?, ?, ?)');
    const trimStatus = db.prepare(
      `DELETE FROM status_history WHERE user_id = ? AND id <= (
         SELECT id FROM status_history WHERE user_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    );
    const insertTrack = db.prepare('INSERT INTO track_history (user_id, entry) VALUES (?, ?)');
    const trimTracks = db.prepare(
      `DELETE FROM track_history WHERE user_id = ? AND id <= (
         SELECT id FROM track_history WHERE user_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    );
    // The play's day counts one more; days past PLAY_DAYS_KEPT go.
    const countPlay = db.prepare(
      `INSERT INTO play_counts (user_id, track_key, play_count, last_played, track, days)
       VALUES (@userId, @key, 1, @ts, @track, json_object(@day, 1))
       ON CONFLICT (user_id, track_key) DO UPDATE SET play_count = play_count + 1,
         last_played = excluded.last_played, track = excluded.track,
         days = json_set(
           (SELECT json_group_object(key, value) FROM json_each(play_counts.days) WHERE key >= @oldest),
           '$."' || @day || '"', coalesce(json_extract(play_counts.days, '$."' || @day || '"'), 0) + 1)`,
    );
    // Few users come near the cap, and looking for a row past it costs far less than the delete.
    const pastCap = db.prepare('SELECT 1 FROM play_counts WHERE user_id = ? LIMIT 1 OFFSET ?').pluck();
    const trimPlays = db.prepare(
      `DELETE FROM play_counts WHERE user_id = ? AND track_key IN (
         SELECT track_key FROM play_counts WHERE user_id = ?
         ORDER BY play_count DESC, last_played DESC LIMIT -1 OFFSET ?)`,
    );
    const bumpDay = db.prepare(
      `INSERT INTO user_stats (user_id, plays_day, plays) VALUES (?, ?, 1)
       ON CONFLICT (user_id) DO UPDATE SET
         plays = CASE WHEN plays_day = excluded.plays_day THEN plays + 1 ELSE 1 END,
         plays_day = excluded.plays_day`,
    );
    const forgottenAt = db
      .prepare<[string], number>('SELECT forgotten_at FROM history_forgotten WHERE user_id = ?')
      .pluck();
    const setLastSeen = db.prepare(
      `INSERT INTO user_stats (user_id, last_seen) VALUES (?, ?)
       ON CONFLICT (user_id) DO UPDATE SET last_seen = max(coalesce(last_seen, 0), excluded.last_seen)`,
    );

    const trim = (status: readonly Snowflake[], tracks: readonly Snowflake[], limits: Limits): void => {
      for (const userId of status) trimStatus.run(userId, userId, limits.history);
      for (const userId of tracks) trimTracks.run(userId, userId, limits.history);
    };
    this.trimAll = db.transaction((limits: Limits) => {
      const waiting = this.waiting.all();
      trim(waiting.status, waiting.tracks, limits);
    });

    this.append = db.transaction((batch: readonly HistoryWrite[], limits: Limits): ListsOf => {
      const now = this.waiting.now();
      // Play counts do not wait to be trimmed: a track evicted then played again counts from one.
      const played = new Set<Snowflake>();
      // When each user's history was last erased (null: never), read once per user and batch.
      const erasedAt = new Map<Snowflake, number | null>();
      for (const given of batch) {
        const { userId } = given;
        let erased = erasedAt.get(userId);
        if (erased === undefined) {
          erased = forgottenAt.get(userId) ?? null;
          erasedAt.set(userId, erased);
        }
        const write = erased === null ? given : afterForget(given, erased);
        if (write === null) continue;
        if (write.status) {
          insertStatus.run(userId, write.status.status, write.status.ts);
          this.waiting.statusGrew(userId, now);
        }
        const { track } = write;
        if (track) {
          const entry = JSON.stringify(track);
          insertTrack.run(userId, entry);
          this.waiting.tracksGrew(userId, now);
          bumpDay.run(userId, utcDay(track.ts));
          const key = write.countsPlay ? playKeyOf(track) : null;
          if (key !== null) {
            countPlay.run({
              userId,
              key,
              ts: track.ts,
              track: withoutTs(entry, track),
              day: utcDay(track.ts),
              oldest: oldestDayKept(track.ts),
            });
            played.add(userId);
          }
        }
        if (write.lastSeen !== null) setLastSeen.run(userId, write.lastSeen);
      }
      for (const userId of played) {
        if (pastCap.get(userId, limits.trackedTracks) !== undefined) {
          trimPlays.run(userId, userId, limits.trackedTracks);
        }
      }
      const trimmed = this.waiting.due(now);
      trim(trimmed.status, trimmed.tracks, limits);
      return trimmed;
    });

    const forgetStatement = (table: string) => db.prepare(`DELETE FROM ${table} WHERE user_id = ?`);
    const forgetStatus = forgetStatement('status_history');
    const forgetTracks = forgetStatement('track_history');
    const forgetPlays = forgetStatement('play_counts');
    const forgetStats = forgetStatement('user_stats');
    const rememberForget = db.prepare(
      `INSERT INTO history_forgotten (user_id, forgotten_at) VALUES (?, ?)
       ON CONFLICT (user_id) DO UPDATE SET forgotten_at = max(forgotten_at, excluded.forgotten_at)`,
    );
    this.erase = db.transaction((userId: Snowflake, at: number) => {
      // Counted as read: entries past the limit were only waiting to be trimmed.
      const result = {
        statusEntries: Math.min(forgetStatus.run(userId).changes, HISTORY_LIMIT),
        trackEntries: Math.min(forgetTracks.run(userId).changes, HISTORY_LIMIT),
        playCounts: forgetPlays.run(userId).changes,
      };
      forgetStats.run(userId);
      rememberForget.run(userId, at);
      return result;
    });
  }

  async appendHistory(batch: readonly HistoryWrite[], limits: Limits): Promise<void> {
    if (batch.length === 0) return;
    this.limits = limits;
    this.waiting.trimmed(this.append(batch, limits));
  }

  /** Trims every list that waits: the store calls it before closing the database. */
  trimWaitingLists(): void {
    if (this.limits === null) return;
    this.trimAll(this.limits);
    this.waiting.clear();
  }

  async history(userId: Snowflake, limit: number): Promise<{ status: StatusEntry[]; tracks: TrackEntry[] }> {
    const status = this.reads.status.all(userId, limit) as { status: DiscordStatus; ts: number }[];
    const tracks = this.reads.tracks.all(userId, limit) as { entry: string }[];
    return {
      status: status.map((row) => ({ status: row.status, ts: row.ts })),
      tracks: tracks.map((row) => JSON.parse(row.entry) as TrackEntry),
    };
  }

  async latest(userIds: readonly Snowflake[]): Promise<Map<Snowflake, LatestHistory>> {
    const found = new Map<Snowflake, LatestHistory>();
    if (userIds.length === 0) return found;
    const ids = JSON.stringify(userIds);
    for (const row of this.reads.latestStatus.all(ids) as {
      user_id: string;
      status: DiscordStatus;
      ts: number;
    }[]) {
      found.set(row.user_id, { status: { status: row.status, ts: row.ts }, track: null });
    }
    for (const row of this.reads.latestTracks.all(ids) as { user_id: string; entry: string }[]) {
      const track = JSON.parse(row.entry) as TrackEntry;
      const known = found.get(row.user_id);
      if (known) known.track = track;
      else found.set(row.user_id, { status: null, track });
    }
    return found;
  }

  async stats(userId: Snowflake): Promise<StoredStats> {
    const last = this.reads.lastStatus.get(userId) as { status: DiscordStatus } | undefined;
    const count = this.reads.trackCount.get(userId, HISTORY_LIMIT) as { n: number };
    const stats = this.reads.stats.get(userId) as
      | { last_seen: number | null; plays_day: string | null; plays: number }
      | undefined;
    return {
      lastStatus: last?.status ?? null,
      lastSeen: stats?.last_seen ?? null,
      trackHistoryCount: count.n,
      playsDay: stats?.plays_day ?? null,
      plays: stats?.plays ?? 0,
    };
  }

  async topTracks(userId: Snowflake, minPlays: number, limit: number, since?: string): Promise<TopTrack[]> {
    const rows = (
      since === undefined
        ? this.reads.topTracks.all(userId, minPlays, limit)
        : this.reads.topTracksSince.all({ userId, minPlays, limit, since })
    ) as {
      track: string;
      play_count: number;
      last_played: number;
    }[];
    return rows.map((row) => ({
      ...(JSON.parse(row.track) as NowPlaying),
      last_played: row.last_played,
      play_count: row.play_count,
    }));
  }

  async playDays(userId: Snowflake): Promise<Map<string, Record<string, number>>> {
    const rows = this.reads.playDays.all(userId) as { track_key: string; days: string }[];
    return new Map(rows.map((row) => [row.track_key, JSON.parse(row.days) as Record<string, number>]));
  }

  async forget(userId: Snowflake, at: number): Promise<ForgetResult> {
    return this.erase(userId, at);
  }
}
