import type { Redis } from 'ioredis';
import type { KvChange, KvState } from '../../kv/rules.js';
import type { Snowflake } from '../../presence/model.js';
import type { KvLimitRefusal, KvStore } from '../ports.js';
import { execAll } from './exec.js';
import type { RedisKeys } from './keys.js';

/**
 * One script, so the limit is checked against what is stored at the moment of the write and the change
 * lands whole or not at all. KEYS: kv hash, revision. ARGV: max keys, number of sets, then set pairs,
 * then keys to delete. Returns {-1, would-have} when refused, else {revision, field, value, …}.
 */
const WRITE = `
local max, sets = tonumber(ARGV[1]), tonumber(ARGV[2])
local setting, deleting = {}, {}
for i = 0, sets - 1 do setting[ARGV[3 + i * 2]] = true end
-- A set, so a key named twice is counted once; a key also set keeps its new value.
for i = 3 + sets * 2, #ARGV do
  if not setting[ARGV[i]] then deleting[ARGV[i]] = true end
end
local count = redis.call('HLEN', KEYS[1])
for key in pairs(deleting) do
  if redis.call('HEXISTS', KEYS[1], key) == 1 then count = count - 1 end
end
for key in pairs(setting) do
  if redis.call('HEXISTS', KEYS[1], key) == 0 then count = count + 1 end
end
if count > max then return {-1, count} end
for key in pairs(deleting) do redis.call('HDEL', KEYS[1], key) end
for i = 0, sets - 1 do redis.call('HSET', KEYS[1], ARGV[3 + i * 2], ARGV[4 + i * 2]) end
local revision = redis.call('INCR', KEYS[2])
local reply = redis.call('HGETALL', KEYS[1])
table.insert(reply, 1, revision)
return reply
`;

interface KvScripts {
  kvWrite(...args: (string | number)[]): Promise<(string | number)[]>;
}

export class RedisKvStore implements KvStore {
  private readonly redis: Redis & KvScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('kvWrite', { numberOfKeys: 2, lua: WRITE });
    this.redis = redis as Redis & KvScripts;
  }

  async getKv(userId: Snowflake): Promise<KvState> {
    const [kv, revision] = (await execAll(
      this.redis.multi().hgetall(this.keys.kv(userId)).get(this.keys.kvRevision(userId)),
    )) as [Record<string, string>, string | null];
    return { kv: sorted(Object.entries(kv)), revision: Number(revision ?? 0) };
  }

  async getKvs(userIds: readonly Snowflake[]): Promise<Map<Snowflake, KvState>> {
    const found = new Map<Snowflake, KvState>();
    if (userIds.length === 0) return found;
    // One MULTI: every user's keys and revision from the same moment, in one round trip.
    const multi = this.redis.multi();
    for (const userId of userIds) multi.hgetall(this.keys.kv(userId)).get(this.keys.kvRevision(userId));
    const replies = await execAll(multi);
    for (const [index, userId] of userIds.entries()) {
      const kv = replies[index * 2] as Record<string, string>;
      const revision = Number((replies[index * 2 + 1] as string | null) ?? 0);
      const entries = Object.entries(kv);
      if (entries.length > 0 || revision > 0) found.set(userId, { kv: sorted(entries), revision });
    }
    return found;
  }

  async writeKv(userId: Snowflake, change: KvChange, maxKeys: number): Promise<KvState | KvLimitRefusal> {
    const sets = [...change.set].flat();
    const reply = await this.redis.kvWrite(
      this.keys.kv(userId),
      this.keys.kvRevision(userId),
      maxKeys,
      change.set.size,
      ...sets,
      ...change.delete,
    );
    const [first, ...fields] = reply;
    if (Number(first) === -1) return { refused: 'limit', wouldHave: Number(fields[0]) };
    const entries: [string, string][] = [];
    for (let i = 0; i < fields.length; i += 2) entries.push([String(fields[i]), String(fields[i + 1])]);
    return { kv: sorted(entries), revision: Number(first) };
  }
}

/** Ordered by key, as the embedded store answers; fromEntries keeps a key named __proto__ as data. */
function sorted(entries: [string, string][]): Record<string, string> {
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
