import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  oldestDayKept,
  playKeyOf,
  type StatusEntry,
  type StoredStats,
  type TopTrack,
  type TrackEntry,
  utcDay,
} from '../../model/history.js';
import type { DiscordStatus, Snowflake } from '../../presence/model.js';
import {
  type ForgetResult,
  HISTORY_BATCH_IDS_KEPT_MS,
  type HistoryStore,
  type HistoryWrite,
  type LatestHistory,
} from '../ports.js';
import { execAll } from './exec.js';
import type { RedisKeys } from './keys.js';
import { PLAY_FUNCTIONS, playedValue, TOP_TRACKS, TOP_TRACKS_SINCE, topTracksFrom } from './plays.js';

/**
 * First in a batch's MULTI: marks the batch (KEYS[1]) for ARGV[1] ms, and sets KEYS[2], which the MULTI's
 * last command deletes, only if no earlier run of it did: a try whose answer was lost, sent again by the
 * recorder or by the client on reconnecting, writes nothing.
 */
const MARK_BATCH = `
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then
  redis.call('SET', KEYS[2], '1')
else
  redis.call('DEL', KEYS[2])
end
`;

/**
 * One user's share of a batch. KEYS: status list, track list, play ranking, played tracks, stats hash,
 * moment of the last erasure, the batch's go-ahead (MARK_BATCH's KEYS[2]), play days. ARGV: list limit,
 * tracked-tracks cap, then per write 9 fields: status JSON, its ts, track JSON, its ts, track day, play
 * key, played value, last seen, the oldest day of plays kept (each '' when absent). What is stamped at or
 * before the last erasure is dropped (see forgotten.ts).
 */
const APPEND = `${PLAY_FUNCTIONS}
if redis.call('EXISTS', KEYS[7]) == 0 then return end
local limit, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
local erased = tonumber(redis.call('GET', KEYS[6]) or '')
local function kept(ts) return ts ~= '' and (not erased or tonumber(ts) > erased) end
for i = 3, #ARGV, 9 do
  local status, statusTs, track, trackTs = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local day, play, played, seen, oldest = ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8]
  if kept(statusTs) then redis.call('LPUSH', KEYS[1], status) end
  if kept(trackTs) then
    redis.call('LPUSH', KEYS[2], track)
    if redis.call('HGET', KEYS[5], 'plays_day') == day then
      redis.call('HINCRBY', KEYS[5], 'plays', 1)
    else
      redis.call('HSET', KEYS[5], 'plays_day', day, 'plays', 1)
    end
    if play ~= '' then
      addPlays(KEYS[3], KEYS[4], play, 1, played)
      countDay(KEYS[8], play, day, oldest)
    end
  end
  if kept(seen) then
    local known = tonumber(redis.call('HGET', KEYS[5], 'last_seen') or '0')
    if tonumber(seen) > known then redis.call('HSET', KEYS[5], 'last_seen', seen) end
  end
end
redis.call('LTRIM', KEYS[1], 0, limit - 1)
redis.call('LTRIM', KEYS[2], 0, limit - 1)
capPlays(KEYS[3], KEYS[4], KEYS[8], cap)
`;

/**
 * KEYS: the first six of APPEND's, and its play days. ARGV: the moment of this erasure, kept unless a later
 * one is. Returns the entries erased: status, tracks, play counts.
 */
const FORGET = `
local erased = {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('ZCARD', KEYS[3])}
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[7])
local before = tonumber(redis.call('GET', KEYS[6]) or '')
if not before or tonumber(ARGV[1]) > before then redis.call('SET', KEYS[6], ARGV[1]) end
return erased
`;

interface HistoryScripts {
  historyMarkBatch(...args: (string | number)[]): Promise<unknown>;
  historyAppend(...args: (string | number)[]): Promise<unknown>;
  historyForget(...args: string[]): Promise<[number, number, number]>;
  historyTopTracks(...args: (string | number)[]): Promise<string[]>;
  historyTopTracksSince(...args: (string | number)[]): Promise<(string | number)[]>;
}

/**
 * History in Redis: lists trimmed to the limit, play counts ranked in a sorted set (see plays.ts), stats
 * in a hash. A batch is one MULTI of one script call per user, so it lands whole, like the embedded
 * store's transaction. Reads of several keys go in one MULTI too, so they see one moment.
 */
export class RedisHistoryStore implements HistoryStore {
  private readonly redis: Redis & HistoryScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
    /** Settles when the data under the prefix has this build's layout. */
    private readonly migrated: Promise<void>,
  ) {
    redis.defineCommand('historyMarkBatch', { numberOfKeys: 2, lua: MARK_BATCH });
    redis.defineCommand('historyAppend', { numberOfKeys: 8, lua: APPEND });
    redis.defineCommand('historyForget', { numberOfKeys: 7, lua: FORGET });
    redis.defineCommand('historyTopTracks', { numberOfKeys: 2, lua: TOP_TRACKS });
    redis.defineCommand('historyTopTracksSince', { numberOfKeys: 2, lua: TOP_TRACKS_SINCE });
    this.redis = redis as Redis & HistoryScripts;
  }

  /** One MULTI, which writes nothing if a run of it with this id got as far as Redis before. */
  async appendHistory(
    batch: readonly HistoryWrite[],
    limits: { history: number; trackedTracks: number },
    batchId: string = randomUUID(),
  ): Promise<void> {
    if (batch.length === 0) return;
    await this.migrated;
    const byUser = new Map<Snowflake, string[]>();
    for (const write of batch) {
      let args = byUser.get(write.userId);
      if (!args) {
        args = [];
        byUser.set(write.userId, args);
      }
      args.push(...appendFields(write));
    }
    const writing = this.keys.historyBatchWriting();
    const multi = this.redis.multi();
    const scripts = multi as unknown as HistoryScripts;
    scripts.historyMarkBatch(this.keys.historyBatch(batchId), writing, HISTORY_BATCH_IDS_KEPT_MS);
    for (const [userId, args] of byUser) {
      scripts.historyAppend(
        ...this.keys.history(userId),
        this.keys.historyForgotten(userId),
        writing,
        this.keys.playDays(userId),
        limits.history,
        limits.trackedTracks,
        ...args,
      );
    }
    multi.del(writing);
    await execAll(multi);
  }

  async history(userId: Snowflake, limit: number): Promise<{ status: StatusEntry[]; tracks: TrackEntry[] }> {
    const [statusKey, tracksKey] = this.keys.history(userId);
    const [status, tracks] = (await execAll(
      this.redis
        .multi()
        .lrange(statusKey, 0, limit - 1)
        .lrange(tracksKey, 0, limit - 1),
    )) as [string[], string[]];
    return {
      status: status.map((entry) => JSON.parse(entry) as StatusEntry),
      tracks: tracks.map((entry) => JSON.parse(entry) as TrackEntry),
    };
  }

  async latest(userIds: readonly Snowflake[]): Promise<Map<Snowflake, LatestHistory>> {
    const found = new Map<Snowflake, LatestHistory>();
    if (userIds.length === 0) return found;
    const multi = this.redis.multi();
    for (const userId of userIds) {
      const [statusKey, tracksKey] = this.keys.history(userId);
      multi.lindex(statusKey, 0).lindex(tracksKey, 0);
    }
    const replies = (await execAll(multi)) as (string | null)[];
    userIds.forEach((userId, index) => {
      const status = replies[index * 2] ?? null;
      const track = replies[index * 2 + 1] ?? null;
      if (status === null && track === null) return;
      found.set(userId, {
        status: status === null ? null : (JSON.parse(status) as StatusEntry),
        track: track === null ? null : (JSON.parse(track) as TrackEntry),
      });
    });
    return found;
  }

  async stats(userId: Snowflake): Promise<StoredStats> {
    const [statusKey, tracksKey, , , statsKey] = this.keys.history(userId);
    const [last, count, stats] = (await execAll(
      this.redis.multi().lindex(statusKey, 0).llen(tracksKey).hgetall(statsKey),
    )) as [string | null, number, Record<string, string>];
    return {
      lastStatus: last === null ? null : (JSON.parse(last) as { status: DiscordStatus }).status,
      lastSeen: stats.last_seen === undefined ? null : Number(stats.last_seen),
      trackHistoryCount: count,
      playsDay: stats.plays_day ?? null,
      plays: Number(stats.plays ?? 0),
    };
  }

  async topTracks(userId: Snowflake, minPlays: number, limit: number, since?: string): Promise<TopTrack[]> {
    await this.migrated;
    const [, , rankKey, playedKey] = this.keys.history(userId);
    return topTracksFrom(
      since === undefined
        ? await this.redis.historyTopTracks(rankKey, playedKey, minPlays, limit)
        : await this.redis.historyTopTracksSince(
            playedKey,
            this.keys.playDays(userId),
            minPlays,
            limit,
            since,
          ),
    );
  }

  async playDays(userId: Snowflake): Promise<Map<string, Record<string, number>>> {
    const kept = await this.redis.hgetall(this.keys.playDays(userId));
    return new Map(
      Object.entries(kept).map(([key, days]) => [key, JSON.parse(days) as Record<string, number>]),
    );
  }

  async forget(userId: Snowflake, at: number): Promise<ForgetResult> {
    await this.migrated;
    const [statusEntries, trackEntries, playCounts] = await this.redis.historyForget(
      ...this.keys.history(userId),
      this.keys.historyForgotten(userId),
      this.keys.playDays(userId),
      String(at),
    );
    return { statusEntries, trackEntries, playCounts };
  }
}

/** One write as APPEND's nine fields. */
function appendFields(write: HistoryWrite): string[] {
  const { status, track } = write;
  const key = track !== null && write.countsPlay ? playKeyOf(track) : null;
  return [
    status ? JSON.stringify(status) : '',
    status ? String(status.ts) : '',
    track ? JSON.stringify(track) : '',
    track ? String(track.ts) : '',
    track ? utcDay(track.ts) : '',
    key ?? '',
    key !== null && track !== null ? playedValue(track) : '',
    write.lastSeen === null ? '' : String(write.lastSeen),
    key !== null && track !== null ? oldestDayKept(track.ts) : '',
  ];
}
