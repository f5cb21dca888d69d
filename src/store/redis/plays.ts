import type { TopTrack, TrackEntry } from '../../model/history.js';
import type { NowPlaying } from '../../presence/model.js';

/**
 * Play counts of one user, in two keys:
 * - a sorted set ranking the tracks: score = play count, member = last played (zero-padded to a fixed
 *   width) `:` play key. Members of equal score sort by their bytes, so by last played: the set's order
 *   is `play_count, last_played`, the embedded store's index, and both top tracks (from the top) and
 *   eviction (from the bottom) are range reads instead of a sort of every track.
 * - a hash play key → last played (same width) followed by the track's JSON: its latest metadata, and
 *   what names the track's current member of the sorted set.
 */
export const PLAYED_AT_DIGITS = 15;

/** The hash value of a play: when, then what. */
export function playedValue(track: TrackEntry): string {
  const { ts, ...nowPlaying } = track;
  return String(ts).padStart(PLAYED_AT_DIGITS, '0') + JSON.stringify(nowPlaying);
}

/**
 * Lua functions over a ranking, its played-tracks hash and its play-days hash. `addPlays` adds plays to a
 * track, moving its member to the time of `played` and taking its metadata; `countDay` counts a play on
 * its UTC day, dropping the track's days before `oldest`; `capPlays` drops the least played, then least
 * recently played, tracks past `cap` (and their days), as the embedded store does.
 */
export const PLAY_FUNCTIONS = `
local function memberOf(play, played)
  return string.sub(played, 1, ${PLAYED_AT_DIGITS}) .. ':' .. play
end
local function addPlays(rank, tracks, play, plays, played)
  local previous = redis.call('HGET', tracks, play)
  if previous then
    local member = memberOf(play, previous)
    plays = plays + tonumber(redis.call('ZSCORE', rank, member))
    redis.call('ZREM', rank, member)
  end
  redis.call('ZADD', rank, plays, memberOf(play, played))
  redis.call('HSET', tracks, play, played)
end
local function countDay(days, play, day, oldest)
  local kept = {}
  local stored = redis.call('HGET', days, play)
  if stored then
    for counted, plays in pairs(cjson.decode(stored)) do
      if counted >= oldest then kept[counted] = plays end
    end
  end
  kept[day] = (kept[day] or 0) + 1
  redis.call('HSET', days, play, cjson.encode(kept))
end
local function capPlays(rank, tracks, days, cap)
  local excess = redis.call('ZCARD', rank) - cap
  if excess <= 0 then return end
  for _, member in ipairs(redis.call('ZRANGE', rank, 0, excess - 1)) do
    local play = string.sub(member, ${PLAYED_AT_DIGITS + 2})
    redis.call('HDEL', tracks, play)
    redis.call('HDEL', days, play)
  end
  redis.call('ZREMRANGEBYRANK', rank, 0, excess - 1)
end
`;

/**
 * One script, so a track evicted or forgotten between reading the ranking and its metadata cannot show
 * up half. KEYS: ranking, played tracks. ARGV: min plays, limit. Returns {played, count, …}.
 */
export const TOP_TRACKS = `
local ranked = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
local reply = {}
for i = 1, #ranked, 2 do
  table.insert(reply, redis.call('HGET', KEYS[2], string.sub(ranked[i], ${PLAYED_AT_DIGITS + 2})))
  table.insert(reply, ranked[i + 1])
end
return reply
`;

/**
 * Top tracks of the plays of day ARGV[3] and after, from each track's days: one script, as TOP_TRACKS.
 * KEYS: played tracks, play days. ARGV: min plays, limit, first day. Returns {played, count, …}, ordered
 * as TOP_TRACKS (a played value begins with its time).
 */
export const TOP_TRACKS_SINCE = `
local found = {}
local days = redis.call('HGETALL', KEYS[2])
for i = 1, #days, 2 do
  local plays = 0
  for day, count in pairs(cjson.decode(days[i + 1])) do
    if day >= ARGV[3] then plays = plays + count end
  end
  if plays >= tonumber(ARGV[1]) then
    local played = redis.call('HGET', KEYS[1], days[i])
    if played then table.insert(found, {played, plays}) end
  end
end
table.sort(found, function(a, b)
  if a[2] ~= b[2] then return a[2] > b[2] end
  return a[1] > b[1]
end)
local reply = {}
for i = 1, math.min(#found, tonumber(ARGV[2])) do
  table.insert(reply, found[i][1])
  table.insert(reply, found[i][2])
end
return reply
`;

export function topTracksFrom(reply: (string | number)[]): TopTrack[] {
  const tracks: TopTrack[] = [];
  for (let i = 0; i < reply.length; i += 2) {
    const played = reply[i] as string;
    tracks.push({
      ...(JSON.parse(played.slice(PLAYED_AT_DIGITS)) as NowPlaying),
      last_played: Number(played.slice(0, PLAYED_AT_DIGITS)),
      play_count: Number(reply[i + 1]),
    });
  }
  return tracks;
}
