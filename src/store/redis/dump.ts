import type { Redis } from 'ioredis';
import { HISTORY_LIMIT, type StatusEntry } from '../../model/history.js';
import type { Snowflake } from '../../presence/model.js';
import { byCodePoint } from '../../presence/registry/kv-order.js';
import type { StoredProfile } from '../ports.js';
import { emptyUser, type StoreDump, type StoredPlay, type UserData } from '../transfer.js';
import { execAll } from './exec.js';
import { RedisKeys } from './keys.js';
import { pairs } from './kv.js';
import { MIGRATIONS } from './migrations.js';
import { PLAYED_AT_DIGITS } from './plays.js';
import { privacyOf } from './privacy.js';
import { readTokensIn } from './read-tokens.js';
import { webhookOf } from './webhooks.js';

/** Users read in one round trip. */
const DUMP_BATCH = 200;

/**
 * One user's keys, read in one script so that they agree with each other. KEYS: kv hash, revision, the
 * user's key, profile, last erasure, status list, track list, play ranking, played tracks, stats, the
 * user's webhooks, privacy settings, read tokens, play days. ARGV: the key owners' prefix, the user id, the list limit, then a
 * webhook's key and its deliveries' key, each as what comes before and after the webhook's id. The key's
 * hash only if its owner entry names the user, as a lookup would find it.
 */
const READ_USER = `
local hex = redis.call('GET', KEYS[3])
if hex and redis.call('GET', ARGV[1] .. hex) ~= ARGV[2] then hex = false end
local limit = tonumber(ARGV[3])
local webhooks = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[11], 0, -1)) do
  table.insert(webhooks, {
    redis.call('HGETALL', ARGV[4] .. id .. ARGV[5]), redis.call('LRANGE', ARGV[6] .. id .. ARGV[7], 0, -1)
  })
end
return {
  redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[2]), hex, redis.call('GET', KEYS[4]),
  redis.call('GET', KEYS[5]), redis.call('LRANGE', KEYS[6], 0, limit - 1),
  redis.call('LRANGE', KEYS[7], 0, limit - 1), redis.call('ZRANGE', KEYS[8], 0, -1, 'WITHSCORES'),
  redis.call('HGETALL', KEYS[9]), redis.call('HGETALL', KEYS[10]), webhooks, redis.call('HGETALL', KEYS[12]),
  redis.call('HGETALL', KEYS[13]), redis.call('HGETALL', KEYS[14])
}
`;

type UserReply = [
  string[],
  string | null,
  string | null,
  string | null,
  string | null,
  string[],
  string[],
  string[],
  string[],
  string[],
  [string[], string[]][],
  string[],
  string[],
  string[],
];

/**
 * Every user's data under `prefix`, in batches: the users are found by a scan of the prefix's keys, then
 * read a script each. The data must have this build's layout (a service of this build migrates it at start).
 */
export async function* dumpRedis(redis: Redis, prefix: string): StoreDump {
  const keys = new RedisKeys(prefix);
  const version = await redis.get(keys.version());
  if (version === null)
    throw new Error(`no Presently store under the prefix "${prefix}": is --prefix right?`);
  if (Number(version) !== MIGRATIONS.length) {
    throw new Error(
      `the data under "${prefix}" has layout version ${version}, this build ${MIGRATIONS.length}: ` +
        (Number(version) < MIGRATIONS.length
          ? 'start the service of this build on it once, then copy it'
          : 'copy it with a newer build'),
    );
  }
  const userOf = userOfKey(keys);
  const webhookKeys = [...around(keys.webhook(MARK)), ...around(keys.webhookDeliveries(MARK))];
  const users = new Set<Snowflake>();
  for await (const batch of redis.scanStream({ match: `${prefix}*`, count: 1_000 })) {
    for (const key of batch as string[]) {
      const userId = userOf(key);
      if (userId !== null) users.add(userId);
    }
  }
  const sorted = [...users].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
  for (let start = 0; start < sorted.length; start += DUMP_BATCH) {
    const batch = sorted.slice(start, start + DUMP_BATCH);
    const pipeline = redis.pipeline();
    for (const userId of batch) {
      pipeline.eval(
        READ_USER,
        14,
        keys.kv(userId),
        keys.kvRevision(userId),
        keys.userKey(userId),
        keys.profile(userId),
        keys.historyForgotten(userId),
        ...keys.history(userId),
        keys.userWebhooks(userId),
        keys.privacy(userId),
        keys.readTokens(userId),
        keys.playDays(userId),
        keys.keyOwner(''),
        userId,
        HISTORY_LIMIT,
        ...webhookKeys,
      );
    }
    const replies = (await execAll(pipeline)) as UserReply[];
    yield batch.map((userId, index) => userData(userId, replies[index] as UserReply));
  }
}

/** Stands for an id in a key's name, to split the name around it. */
const MARK = '\u0000';

/** A key's name as what comes before and after the id in it. */
function around(shape: string): [string, string] {
  return shape.split(MARK) as [string, string];
}

/** The user a key of the store belongs to, from the names RedisKeys gives; null for any other key. */
function userOfKey(keys: RedisKeys): (key: string) => Snowflake | null {
  const shapes = [
    keys.kv(MARK),
    keys.kvRevision(MARK),
    keys.kvBytes(MARK),
    keys.userKey(MARK),
    keys.profile(MARK),
    keys.historyForgotten(MARK),
    ...keys.history(MARK),
    keys.userWebhooks(MARK),
    keys.privacy(MARK),
    keys.readTokens(MARK),
    keys.playDays(MARK),
  ].map(around);
  return (key) => {
    for (const [before, after] of shapes) {
      if (!key.startsWith(before) || !key.endsWith(after)) continue;
      const userId = key.slice(before.length, key.length - after.length);
      if (/^\d+$/.test(userId)) return userId;
    }
    return null;
  };
}

function userData(userId: Snowflake, reply: UserReply): UserData {
  const [kv, revision, hex, profile, forgotten, status, tracks, ranking, played, stats, webhooks, privacy] =
    reply;
  const tokens = reply[12];
  const days = new Map(pairs(reply[13]));
  const user = emptyUser(userId);
  if (kv.length > 0 || revision !== null) {
    user.kv = { entries: pairs(kv).sort(([a], [b]) => byCodePoint(a, b)), revision: Number(revision ?? 0) };
  }
  if (hex !== null) user.apiKey = { hash: Buffer.from(hex, 'hex'), createdAt: null };
  if (profile !== null) user.profile = JSON.parse(profile) as StoredProfile;
  if (forgotten !== null) user.forgottenAt = Number(forgotten);
  user.status = status.reverse().map((entry) => {
    const { status: value, ts } = JSON.parse(entry) as StatusEntry;
    return { status: value, ts };
  });
  user.tracks = tracks.reverse();
  user.plays = plays(pairs(ranking), new Map(pairs(played)), days);
  for (const [fields, deliveries] of webhooks) {
    const webhook = webhookOf(Object.fromEntries(pairs(fields)));
    // Events waiting stay in Redis's queue, where nodes on Redis and PostgreSQL deliver them from.
    if (webhook) user.webhooks.push({ webhook, deliveries: deliveries.reverse(), waiting: [] });
  }
  if (privacy.length > 0) user.privacy = privacyOf(Object.fromEntries(pairs(privacy)));
  user.readTokens = readTokensIn(Object.fromEntries(pairs(tokens)));
  if (stats.length > 0) {
    const fields = new Map(pairs(stats));
    const lastSeen = fields.get('last_seen');
    user.stats = {
      lastSeen: lastSeen === undefined ? null : Number(lastSeen),
      playsDay: fields.get('plays_day') ?? null,
      plays: Number(fields.get('plays') ?? 0),
    };
  }
  return user;
}

/**
 * The ranking's members (last played `:` play key) with their counts, each play's latest metadata and its
 * plays of each recent day.
 */
function plays(
  ranking: [string, string][],
  played: Map<string, string>,
  days: Map<string, string>,
): StoredPlay[] {
  const found: StoredPlay[] = [];
  for (const [member, score] of ranking) {
    const key = member.slice(PLAYED_AT_DIGITS + 1);
    const value = played.get(key);
    if (value === undefined) continue;
    found.push({
      key,
      count: Number(score),
      lastPlayed: Number(value.slice(0, PLAYED_AT_DIGITS)),
      track: value.slice(PLAYED_AT_DIGITS),
      days: JSON.parse(days.get(key) ?? '{}') as Record<string, number>,
    });
  }
  return found;
}
