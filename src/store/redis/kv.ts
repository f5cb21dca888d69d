import type { Redis } from 'ioredis';
import type { KvChange, KvLimits, KvState, Snowflake } from '../../presence/model.js';
import { byCodePoint } from '../../presence/registry/kv-order.js';
import type { KvLimitRefusal, KvStore, KvWritten } from '../ports.js';
import { execAll } from './exec.js';
import type { RedisKeys } from './keys.js';

/**
 * One script, so the limits are checked against what is stored at the moment of the write and the change
 * lands whole or not at all. KEYS: kv hash, revision, byte total. ARGV: max keys, max bytes, number of
 * sets, then set pairs, then keys to delete. Returns {'keys' or 'bytes', would-have} when refused,
 * {'same', revision} when nothing would change, else {'written', revision}.
 */
const WRITE = `
local max_keys, max_bytes, sets = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local before = tonumber(redis.call('GET', KEYS[3]))
if not before then
  -- Written by a build that kept no total: counted once from the hash, then kept.
  before = 0
  local fields = redis.call('HGETALL', KEYS[1])
  for i = 1, #fields do before = before + #fields[i] end
  redis.call('SET', KEYS[3], before)
end
local count, bytes = redis.call('HLEN', KEYS[1]), before
local setting, updates = {}, {}
for i = 0, sets - 1 do
  local key, value = ARGV[4 + i * 2], ARGV[5 + i * 2]
  setting[key] = true
  local stored = redis.call('HGET', KEYS[1], key)
  if stored ~= value then
    if stored then
      bytes = bytes - #stored
    else
      count, bytes = count + 1, bytes + #key
    end
    bytes = bytes + #value
    table.insert(updates, i)
  end
end
-- A set, so a key named twice is counted once; a key also set keeps its new value.
local deleting, removes = {}, {}
for i = 4 + sets * 2, #ARGV do
  local key = ARGV[i]
  if not setting[key] and not deleting[key] and redis.call('HEXISTS', KEYS[1], key) == 1 then
    deleting[key] = true
    count, bytes = count - 1, bytes - #key - redis.call('HSTRLEN', KEYS[1], key)
    table.insert(removes, key)
  end
end
if count > max_keys then return {'keys', count} end
if bytes > max_bytes and bytes > before then return {'bytes', bytes} end
if #updates == 0 and #removes == 0 then return {'same', tonumber(redis.call('GET', KEYS[2])) or 0} end
for _, key in ipairs(removes) do redis.call('HDEL', KEYS[1], key) end
for _, i in ipairs(updates) do redis.call('HSET', KEYS[1], ARGV[4 + i * 2], ARGV[5 + i * 2]) end
redis.call('SET', KEYS[3], bytes)
return {'written', redis.call('INCR', KEYS[2])}
`;

/**
 * A user's keys and revision from the same moment. KEYS: kv hash, revision. Returns {revision or false,
 * field, value, …}.
 */
const READ = `
local reply = redis.call('HGETALL', KEYS[1])
table.insert(reply, 1, redis.call('GET', KEYS[2]))
return reply
`;

interface KvScripts {
  /** The arguments go as one array, which ioredis flattens: never spread into a call, whatever their number. */
  kvWrite(
    kv: string,
    revision: string,
    bytes: string,
    argv: (string | number)[],
  ): Promise<(string | number)[]>;
  kvRead(kv: string, revision: string): Promise<(string | null)[]>;
}

export class RedisKvStore implements KvStore {
  private readonly redis: Redis & KvScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('kvWrite', { numberOfKeys: 3, lua: WRITE });
    redis.defineCommand('kvRead', { numberOfKeys: 2, lua: READ });
    this.redis = redis as Redis & KvScripts;
  }

  async getKv(userId: Snowflake): Promise<KvState> {
    return stateOf(await this.redis.kvRead(this.keys.kv(userId), this.keys.kvRevision(userId)));
  }

  async getKvs(userIds: readonly Snowflake[]): Promise<Map<Snowflake, KvState>> {
    const found = new Map<Snowflake, KvState>();
    if (userIds.length === 0) return found;
    // One round trip, a script per user: each user's keys and revision agree, and Redis serves others
    // between users rather than waiting for all of them.
    const pipeline = this.redis.pipeline();
    const reading = pipeline as unknown as { kvRead(kv: string, revision: string): unknown };
    for (const userId of userIds) reading.kvRead(this.keys.kv(userId), this.keys.kvRevision(userId));
    const replies = (await execAll(pipeline)) as (string | null)[][];
    for (const [index, userId] of userIds.entries()) {
      const state = stateOf(replies[index] as (string | null)[]);
      if (Object.keys(state.kv).length > 0 || state.revision > 0) found.set(userId, state);
    }
    return found;
  }

  async writeKv(userId: Snowflake, change: KvChange, limits: KvLimits): Promise<KvWritten | KvLimitRefusal> {
    const argv: (string | number)[] = [limits.maxKeys, limits.maxBytes, change.set.size];
    for (const [key, value] of change.set) argv.push(key, value);
    for (const key of change.delete) argv.push(key);
    const [outcome, figure] = await this.redis.kvWrite(
      this.keys.kv(userId),
      this.keys.kvRevision(userId),
      this.keys.kvBytes(userId),
      argv,
    );
    if (outcome === 'keys' || outcome === 'bytes') return { refused: outcome, wouldHave: Number(figure) };
    return { revision: Number(figure), changed: outcome === 'written' };
  }
}

/** A kvRead reply as the state it says. */
function stateOf([revision, ...fields]: (string | null)[]): KvState {
  return { kv: sorted(pairs(fields)), revision: Number(revision ?? 0) };
}

/** field, value, field, value… as pairs. */
export function pairs(fields: readonly (string | number | null)[]): [string, string][] {
  const entries: [string, string][] = [];
  for (let i = 0; i < fields.length; i += 2) entries.push([String(fields[i]), String(fields[i + 1])]);
  return entries;
}

/** Ordered by key, as the embedded store answers; fromEntries keeps a key named __proto__ as data. */
function sorted(entries: [string, string][]): Record<string, string> {
  return Object.fromEntries(entries.sort(([a], [b]) => byCodePoint(a, b)));
}
