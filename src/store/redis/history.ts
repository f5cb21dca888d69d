import type { Redis } from 'ioredis';
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
import type { RedisKeys } from './keys.js';

/**
 * One user's share of a batch. KEYS: status list, track list, play count / last played / track hashes,
 * stats hash. ARGV: list limit, tracked-tracks cap, then per write 7 fields: status JSON, track JSON,
 * track day, play key, play ts, last seen, played track JSON (each '' when absent).
 * Eviction past the cap removes the least played, then least recently played, track, as the embedded
 * store does.
 */
const APPEND = `
local limit, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 3, #ARGV, 7 do
  local status, track, day, play, ts, seen = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  if status ~= '' then redis.call('LPUSH', KEYS[1], status) end
  if track ~= '' then
    redis.call('LPUSH', KEYS[2], track)
    if redis.call('HGET', KEYS[6], 'plays_day') == day then
      redis.call('HINCRBY', KEYS[6], 'plays', 1)
    else
      redis.call('HSET', KEYS[6], 'plays_day', day, 'plays', 1)
    end
  end
  if play ~= '' then
    redis.call('HINCRBY', KEYS[3], play, 1)
    redis.call('HSET', KEYS[4], play, ts)
    redis.call('HSET', KEYS[5], play, ARGV[i + 6])
  end
  if seen ~= '' then
    local known = tonumber(redis.call('HGET', KEYS[6], 'last_seen') or '0')
    if tonumber(seen) > known then redis.call('HSET', KEYS[6], 'last_seen', seen) end
  end
end
redis.call('LTRIM', KEYS[1], 0, limit - 1)
redis.call('LTRIM', KEYS[2], 0, limit - 1)
while redis.call('HLEN', KEYS[3]) > cap do
  local counts = redis.call('HGETALL', KEYS[3])
  local victim, victimCount, victimLast = nil, nil, nil
  for j = 1, #counts, 2 do
    local count = tonumber(counts[j + 1])
    local last = tonumber(redis.call('HGET', KEYS[4], counts[j]))
    if victim == nil or count < victimCount or (count == victimCount and last < victimLast) then
      victim, victimCount, victimLast = counts[j], count, last
    end
  end
  redis.call('HDEL', KEYS[3], victim)
  redis.call('HDEL', KEYS[4], victim)
  redis.call('HDEL', KEYS[5], victim)
end
`;

/** KEYS: as APPEND. Returns the entries erased: status, tracks, play counts. */
const FORGET = `
local erased = {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('HLEN', KEYS[3])}
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
return erased
`;

interface HistoryScripts {
  historyAppend(...args: (string | number)[]): Promise<unknown>;
  historyForget(...args: string[]): Promise<[number, number, number]>;
}

/**
 * History in Redis: lists trimmed to the limit, play counts in hashes by track, stats in a hash. A batch
 * is one MULTI of one script call per user, so it lands whole, like the embedded store's transaction.
 */
export class RedisHistoryStore implements HistoryStore {
  private readonly redis: Redis & HistoryScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('historyAppend', { numberOfKeys: 6, lua: APPEND });
    redis.defineCommand('historyForget', { numberOfKeys: 6, lua: FORGET });
    this.redis = redis as Redis & HistoryScripts;
  }

  async appendHistory(
    batch: readonly HistoryWrite[],
    limits: { history: number; trackedTracks: number },
  ): Promise<void> {
    if (batch.length === 0) return;
    const byUser = new Map<Snowflake, string[]>();
    for (const write of batch) {
      let args = byUser.get(write.userId);
      if (!args) {
        args = [];
        byUser.set(write.userId, args);
      }
      args.push(...appendFields(write));
    }
    const multi = this.redis.multi();
    for (const [userId, args] of byUser) {
      (multi as unknown as HistoryScripts).historyAppend(
        ...this.keys.history(userId),
        limits.history,
        limits.trackedTracks,
        ...args,
      );
    }
    const replies = (await multi.exec()) ?? [];
    for (const [error] of replies) if (error) throw error;
  }

  async history(userId: Snowflake, limit: number): Promise<{ status: StatusEntry[]; tracks: TrackEntry[] }> {
    const [statusKey, tracksKey] = this.keys.history(userId);
    const [status, tracks] = await Promise.all([
      this.redis.lrange(statusKey, 0, limit - 1),
      this.redis.lrange(tracksKey, 0, limit - 1),
    ]);
    return {
      status: status.map((entry) => JSON.parse(entry) as StatusEntry),
      tracks: tracks.map((entry) => JSON.parse(entry) as TrackEntry),
    };
  }

  async stats(userId: Snowflake): Promise<StoredStats> {
    const [statusKey, tracksKey, , , , statsKey] = this.keys.history(userId);
    const [last, count, stats] = await Promise.all([
      this.redis.lindex(statusKey, 0),
      this.redis.llen(tracksKey),
      this.redis.hgetall(statsKey),
    ]);
    return {
      lastStatus: last === null ? null : (JSON.parse(last) as { status: DiscordStatus }).status,
      lastSeen: stats.last_seen === undefined ? null : Number(stats.last_seen),
      trackHistoryCount: count,
      playsDay: stats.plays_day ?? null,
      plays: Number(stats.plays ?? 0),
    };
  }

  async topTracks(userId: Snowflake, minPlays: number, limit: number): Promise<TopTrack[]> {
    const [, , countKey, lastKey, trackKey] = this.keys.history(userId);
    const [counts, lasts] = await Promise.all([this.redis.hgetall(countKey), this.redis.hgetall(lastKey)]);
    const chosen = Object.entries(counts)
      .map(([key, count]) => ({ key, count: Number(count), last: Number(lasts[key] ?? 0) }))
      .filter((play) => play.count >= minPlays)
      .sort((a, b) => b.count - a.count || b.last - a.last)
      .slice(0, limit);
    if (chosen.length === 0) return [];
    const tracks = await this.redis.hmget(trackKey, ...chosen.map((play) => play.key));
    return chosen.map((play, index) => ({
      ...(JSON.parse(tracks[index] as string) as NowPlaying),
      last_played: play.last,
      play_count: play.count,
    }));
  }

  async forget(userId: Snowflake): Promise<ForgetResult> {
    const [statusEntries, trackEntries, playCounts] = await this.redis.historyForget(
      ...this.keys.history(userId),
    );
    return { statusEntries, trackEntries, playCounts };
  }
}

/** One write as APPEND's seven fields. */
function appendFields(write: HistoryWrite): string[] {
  const { track } = write;
  let play = '';
  let played = '';
  if (track && write.countsPlay && track.track_id !== null) {
    const { ts: _ts, ...nowPlaying } = track;
    play = playKey(nowPlaying.source, track.track_id);
    played = JSON.stringify(nowPlaying);
  }
  return [
    write.status ? JSON.stringify(write.status) : '',
    track ? JSON.stringify(track) : '',
    track ? utcDay(track.ts) : '',
    play,
    track && play !== '' ? String(track.ts) : '',
    write.lastSeen === null ? '' : String(write.lastSeen),
    played,
  ];
}
