import type { Redis } from 'ioredis';
import type { Snowflake } from '../../presence/model.js';
import type { Adoption, RetentionStore } from '../ports.js';
import type { RedisKeys } from './keys.js';

/** Users one script carries. */
const SCRIPT_BATCH = 1_000;

/** KEYS: the moments (sorted set). ARGV: user id, moment, user id, moment… A later moment kept stays. */
const SEEN = `
for i = 1, #ARGV, 2 do
  local kept = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if not kept or tonumber(kept) < tonumber(ARGV[i + 1]) then redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i]) end
end
`;

/** KEYS: the moments. ARGV: the moment before which a user's is dropped, then the user ids. */
const FORGET = `
local before = tonumber(ARGV[1])
for i = 2, #ARGV do
  local kept = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if kept and tonumber(kept) < before then redis.call('ZREM', KEYS[1], ARGV[i]) end
end
`;

interface RetentionScripts {
  retentionSeen(key: string, ...args: string[]): Promise<unknown>;
  retentionForget(key: string, ...args: string[]): Promise<unknown>;
}

/** Stands for an id in a key's name, to split the name around it. */
const MARK = '\u0000';

/**
 * Each user's last moment in a monitored guild: one sorted set under the prefix (`last-monitored`), the
 * moment as the score, so the users due are a range of it. Adoption scans the prefix's keys for users with
 * data, a bounded step of the scan per call, its cursor kept here.
 */
export class RedisRetentionStore implements RetentionStore {
  private readonly redis: Redis & RetentionScripts;
  /** The user a key of data belongs to; null for any other key (live state, what outlives an erasure). */
  private readonly holderOf: (key: string) => Snowflake | null;
  private cursor = '0';

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('retentionSeen', { numberOfKeys: 1, lua: SEEN });
    redis.defineCommand('retentionForget', { numberOfKeys: 1, lua: FORGET });
    this.redis = redis as Redis & RetentionScripts;
    const shapes = [
      keys.kv(MARK),
      keys.userKey(MARK),
      keys.pendingKey(MARK),
      keys.readTokens(MARK),
      keys.profile(MARK),
      keys.userWebhooks(MARK),
      keys.privacy(MARK),
      ...keys.history(MARK),
      keys.playDays(MARK),
    ].map((shape) => shape.split(MARK) as [string, string]);
    this.holderOf = (key) => {
      for (const [before, after] of shapes) {
        if (!key.startsWith(before) || !key.endsWith(after)) continue;
        const userId = key.slice(before.length, key.length - after.length);
        if (/^\d+$/.test(userId)) return userId;
      }
      return null;
    };
  }

  async seen(moments: ReadonlyMap<Snowflake, number>): Promise<void> {
    const args = [...moments].flatMap(([userId, at]) => [userId, String(at)]);
    for (let start = 0; start < args.length; start += 2 * SCRIPT_BATCH) {
      await this.redis.retentionSeen(
        this.keys.lastMonitored(),
        ...args.slice(start, start + 2 * SCRIPT_BATCH),
      );
    }
  }

  async due(before: number, limit: number): Promise<Snowflake[]> {
    return this.redis.zrangebyscore(this.keys.lastMonitored(), '-inf', `(${before}`, 'LIMIT', 0, limit);
  }

  async forgetSeen(userIds: readonly Snowflake[], before: number): Promise<void> {
    for (let start = 0; start < userIds.length; start += SCRIPT_BATCH) {
      await this.redis.retentionForget(
        this.keys.lastMonitored(),
        String(before),
        ...userIds.slice(start, start + SCRIPT_BATCH),
      );
    }
  }

  /** `limit` is the scan's COUNT: about how many keys of the prefix one call looks at. */
  async adoptUnseen(at: number, limit: number): Promise<Adoption> {
    const [next, found] = await this.redis.scan(this.cursor, 'MATCH', `${this.keys.prefix}*`, 'COUNT', limit);
    this.cursor = next;
    const holders = new Set<Snowflake>();
    for (const key of found) {
      const userId = this.holderOf(key);
      if (userId !== null) holders.add(userId);
    }
    let adopted = 0;
    if (holders.size > 0) {
      const members = [...holders].flatMap((userId) => [at, userId]);
      adopted = await this.redis.zadd(this.keys.lastMonitored(), 'NX', ...members);
    }
    return { adopted, passEnded: next === '0' };
  }
}
