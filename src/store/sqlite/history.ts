import type { Database } from 'better-sqlite3';
import {
  playKey,
  type StatusEntry,
  type StoredStats,
  type TopTrack,
  type TrackEntry,
  utcDay,
} from '../../presence/history.js';
import type { DiscordStatus, NowPlaying, Snowflake } from '../../presence/model.js';
import type { ForgetResult, HistoryStore, HistoryWrite } from '../ports.js';

type Limits = { history: number; trackedTracks: number };

export class SqliteHistoryStore implements HistoryStore {
  private readonly append: (batch: readonly HistoryWrite[], limits: Limits) => void;
  private readonly erase: (userId: Snowflake) => ForgetResult;

  constructor(private readonly db: Database) {
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
    const countPlay = db.prepare(
      `INSERT INTO play_counts (user_id, track_key, play_count, last_played, track) VALUES (?, ?, 1, ?, ?)
       ON CONFLICT (user_id, track_key) DO UPDATE SET play_count = play_count + 1,
         last_played = excluded.last_played, track = excluded.track`,
    );
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
    const setLastSeen = db.prepare(
      `INSERT INTO user_stats (user_id, last_seen) VALUES (?, ?)
       ON CONFLICT (user_id) DO UPDATE SET last_seen = max(coalesce(last_seen, 0), excluded.last_seen)`,
    );

    this.append = db.transaction((batch: readonly HistoryWrite[], limits: Limits) => {
      const touched = new Set<Snowflake>();
      for (const write of batch) {
        const { userId } = write;
        touched.add(userId);
        if (write.status) insertStatus.run(userId, write.status.status, write.status.ts);
        if (write.track) {
          insertTrack.run(userId, JSON.stringify(write.track));
          bumpDay.run(userId, utcDay(write.track.ts));
          if (write.countsPlay && write.track.track_id !== null) {
            const { ts, ...track } = write.track;
            countPlay.run(userId, playKey(track.source, track.track_id as string), ts, JSON.stringify(track));
          }
        }
        if (write.lastSeen !== null) setLastSeen.run(userId, write.lastSeen);
      }
      for (const userId of touched) {
        trimStatus.run(userId, userId, limits.history);
        trimTracks.run(userId, userId, limits.history);
        trimPlays.run(userId, userId, limits.trackedTracks);
      }
    });

    const forgetStatement = (table: string) => db.prepare(`DELETE FROM ${table} WHERE user_id = ?`);
    const forgetStatus = forgetStatement('status_history');
    const forgetTracks = forgetStatement('track_history');
    const forgetPlays = forgetStatement('play_counts');
    const forgetStats = forgetStatement('user_stats');
    this.erase = db.transaction((userId: Snowflake) => {
      const result = {
        statusEntries: forgetStatus.run(userId).changes,
        trackEntries: forgetTracks.run(userId).changes,
        playCounts: forgetPlays.run(userId).changes,
      };
      forgetStats.run(userId);
      return result;
    });
  }

  async appendHistory(batch: readonly HistoryWrite[], limits: Limits): Promise<void> {
    if (batch.length > 0) this.append(batch, limits);
  }

  async history(userId: Snowflake, limit: number): Promise<{ status: StatusEntry[]; tracks: TrackEntry[] }> {
    const status = this.db
      .prepare('SELECT status, ts FROM status_history WHERE user_id = ? ORDER BY id DESC LIMIT ?')
      .all(userId, limit) as { status: DiscordStatus; ts: number }[];
    const tracks = this.db
      .prepare('SELECT entry FROM track_history WHERE user_id = ? ORDER BY id DESC LIMIT ?')
      .all(userId, limit) as { entry: string }[];
    return {
      status: status.map((row) => ({ status: row.status, ts: row.ts })),
      tracks: tracks.map((row) => JSON.parse(row.entry) as TrackEntry),
    };
  }

  async stats(userId: Snowflake): Promise<StoredStats> {
    const last = this.db
      .prepare('SELECT status FROM status_history WHERE user_id = ? ORDER BY id DESC LIMIT 1')
      .get(userId) as { status: DiscordStatus } | undefined;
    const count = this.db
      .prepare('SELECT count(*) AS n FROM track_history WHERE user_id = ?')
      .get(userId) as {
      n: number;
    };
    const stats = this.db
      .prepare('SELECT last_seen, plays_day, plays FROM user_stats WHERE user_id = ?')
      .get(userId) as { last_seen: number | null; plays_day: string | null; plays: number } | undefined;
    return {
      lastStatus: last?.status ?? null,
      lastSeen: stats?.last_seen ?? null,
      trackHistoryCount: count.n,
      playsDay: stats?.plays_day ?? null,
      plays: stats?.plays ?? 0,
    };
  }

  async topTracks(userId: Snowflake, minPlays: number, limit: number): Promise<TopTrack[]> {
    const rows = this.db
      .prepare(
        `SELECT track, play_count, last_played FROM play_counts WHERE user_id = ? AND play_count >= ?
         ORDER BY play_count DESC, last_played DESC LIMIT ?`,
      )
      .all(userId, minPlays, limit) as { track: string; play_count: number; last_played: number }[];
    return rows.map((row) => ({
      ...(JSON.parse(row.track) as NowPlaying),
      last_played: row.last_played,
      play_count: row.play_count,
    }));
  }

  async forget(userId: Snowflake): Promise<ForgetResult> {
    return this.erase(userId);
  }
}
