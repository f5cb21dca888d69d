import type { Redis } from 'ioredis';
import type { RedisKeys } from './keys.js';
import { PLAY_FUNCTIONS, PLAYED_AT_DIGITS } from './plays.js';

/**
 * 0.2.0 kept a user's play counts in three hashes (count, last played, track JSON by play key) and sorted
 * them all on every read. This moves one user's into the ranking of plays.ts. An older node may have
 * counted plays in the old keys after this build counted some in the new ones: both add up, the newer
 * play's metadata wins. KEYS: old counts, old last played, old tracks, ranking, played tracks.
 */
const RANK_USER_PLAYS = `${PLAY_FUNCTIONS}
local counts = redis.call('HGETALL', KEYS[1])
for i = 1, #counts, 2 do
  local play = counts[i]
  local last = tonumber(redis.call('HGET', KEYS[2], play))
  local played = string.format('%0${PLAYED_AT_DIGITS}.0f', last) .. redis.call('HGET', KEYS[3], play)
  local previous = redis.call('HGET', KEYS[5], play)
  if previous and tonumber(string.sub(previous, 1, ${PLAYED_AT_DIGITS})) > last then played = previous end
  addPlays(KEYS[4], KEYS[5], play, tonumber(counts[i + 1]), played)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
`;

/** Several nodes may migrate at once; the version only goes up. KEYS: version. ARGV: version reached. */
const RAISE_VERSION = `
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
`;

type Step = (redis: Redis, keys: RedisKeys) => Promise<void>;

/** 0.2.0's play-count keys of one user, in RANK_USER_PLAYS's order. */
function legacyPlayKeys(prefix: string, userId: string): string[] {
  return ['play-count', 'play-last', 'play-track'].map((name) => `${prefix}${name}:{${userId}}`);
}

async function rankPlays(redis: Redis, keys: RedisKeys): Promise<void> {
  const counts = `${keys.prefix}play-count:{`;
  for await (const batch of redis.scanStream({ match: `${counts}*}`, count: 1_000 })) {
    await Promise.all(
      (batch as string[]).map((key) => {
        const userId = key.slice(counts.length, -1);
        const [, , rank, played] = keys.history(userId);
        return redis.eval(RANK_USER_PLAYS, 5, ...legacyPlayKeys(keys.prefix, userId), rank, played);
      }),
    );
  }
}

/**
 * Versioned layout of the data under a prefix, as the embedded store's migrations: step `index` moves
 * the data from version `index` to `index + 1`. Steps are idempotent, since nodes starting together may
 * run the same one at once; they are never edited once released, only appended.
 */
export const MIGRATIONS: readonly Step[] = [rankPlays];

/** Brings the data under the prefix to the newest layout; refuses data written by a newer build. */
export async function migrateRedisStore(redis: Redis, keys: RedisKeys): Promise<void> {
  const stored = Number((await redis.get(keys.version())) ?? 0);
  if (stored > MIGRATIONS.length) {
    throw new Error(
      `Redis data under ${keys.prefix} has layout version ${stored}, newer than this build knows ` +
        `(${MIGRATIONS.length}); refusing to use it`,
    );
  }
  for (let version = stored; version < MIGRATIONS.length; version++) {
    await (MIGRATIONS[version] as Step)(redis, keys);
    await redis.eval(RAISE_VERSION, 1, keys.version(), version + 1);
  }
}
