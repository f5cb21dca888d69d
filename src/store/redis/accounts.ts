import type { Redis } from 'ioredis';
import type { Snowflake } from '../../presence/model.js';
import type { AccountDetails, AccountStore, Erasure } from '../ports.js';
import type { RedisKeys } from './keys.js';

/**
 * One script, so the erasure lands whole. KEYS: status list, track list, play ranking, played tracks,
 * stats, moment of the last erasure (history.ts's FORGET), KV hash, its revision, its byte total, the
 * user's key, their pending key, profile, their webhooks, users with webhooks, privacy settings, users
 * with settings, their read tokens, their play days. ARGV: the moment, the user id, the key prefixes of a key hash's
 * owner, of a webhook and of its deliveries (each followed by the id and `}`), and of a read token
 * hash's owner. Returns {{status, tracks, plays, revision, keys, privacy, profile, read tokens}, KV key
 * names, webhook ids}.
 */
const ERASE = `
local erased = {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('ZCARD', KEYS[3])}
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[18])
local before = tonumber(redis.call('GET', KEYS[6]) or '')
if not before or tonumber(ARGV[1]) > before then redis.call('SET', KEYS[6], ARGV[1]) end
local names = redis.call('HKEYS', KEYS[7])
local revision = tonumber(redis.call('GET', KEYS[8]) or '0')
if #names > 0 then
  redis.call('DEL', KEYS[7])
  redis.call('SET', KEYS[9], 0)
  -- The revision moves on with no keys left: an erasure is the KV's last write so far.
  revision = redis.call('INCR', KEYS[8])
end
local keys = 0
for _, key in ipairs({KEYS[10], KEYS[11]}) do
  local hash = redis.call('GET', key)
  if hash then
    local owner = ARGV[3] .. hash
    if redis.call('GET', owner) == ARGV[2] then redis.call('DEL', owner) end
    redis.call('DEL', key)
    keys = keys + 1
  end
end
local webhooks = redis.call('ZRANGE', KEYS[13], 0, -1)
for _, id in ipairs(webhooks) do
  redis.call('DEL', ARGV[4] .. id .. '}', ARGV[5] .. id .. '}')
end
redis.call('DEL', KEYS[13])
redis.call('SREM', KEYS[14], ARGV[2])
local privacy = redis.call('DEL', KEYS[15])
redis.call('SREM', KEYS[16], ARGV[2])
local profile = redis.call('DEL', KEYS[12])
local tokens = 0
for _, stored in ipairs(redis.call('HVALS', KEYS[17])) do
  redis.call('DEL', ARGV[6] .. cjson.decode(stored).hash)
  tokens = tokens + 1
end
redis.call('DEL', KEYS[17])
table.insert(erased, revision)
table.insert(erased, keys)
table.insert(erased, privacy)
table.insert(erased, profile)
table.insert(erased, tokens)
return {erased, names, webhooks}
`;

interface AccountScripts {
  accountErase(...args: string[]): Promise<[number[], string[], string[]]>;
}

/** Everything about one user, erased by one script; Redis keeps no key creation times. */
export class RedisAccountStore implements AccountStore {
  private readonly redis: Redis & AccountScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
    /** Settles when the data under the prefix has this build's layout (history, plays). */
    private readonly migrated: Promise<void>,
  ) {
    redis.defineCommand('accountErase', { numberOfKeys: 18, lua: ERASE });
    this.redis = redis as Redis & AccountScripts;
  }

  async erase(userId: Snowflake, at: number): Promise<Erasure> {
    await this.migrated;
    const { keys } = this;
    const [counts, names, webhookIds] = await this.redis.accountErase(
      ...keys.history(userId),
      keys.historyForgotten(userId),
      keys.kv(userId),
      keys.kvRevision(userId),
      keys.kvBytes(userId),
      keys.userKey(userId),
      keys.pendingKey(userId),
      keys.profile(userId),
      keys.userWebhooks(userId),
      keys.webhookUsers(),
      keys.privacy(userId),
      keys.privacyUsers(),
      keys.readTokens(userId),
      keys.playDays(userId),
      String(at),
      userId,
      keys.keyOwner(''),
      keys.webhook('').slice(0, -1),
      keys.webhookDeliveries('').slice(0, -1),
      keys.readTokenOwner(''),
    );
    const [statusEntries = 0, trackEntries = 0, playCounts = 0, kvRevision = 0, apiKeys = 0] = counts;
    return {
      statusEntries,
      trackEntries,
      playCounts,
      kvKeys: [...names].sort(),
      kvRevision,
      apiKeys,
      readTokens: counts[7] ?? 0,
      webhookIds,
      privacySettings: (counts[5] ?? 0) > 0,
      profile: (counts[6] ?? 0) > 0,
    };
  }

  async details(userId: Snowflake): Promise<AccountDetails> {
    const [hash, erasedAt] = await this.redis.mget(
      this.keys.userKey(userId),
      this.keys.historyForgotten(userId),
    );
    return {
      key: hash == null ? null : { createdAt: null },
      historyErasedAt: erasedAt == null ? null : Number(erasedAt),
    };
  }
}
