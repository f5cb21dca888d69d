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
  kvWrite(...args: (string | number)[]): Promise<(string | number)[]>;
  kvRead(kv: string, revision: string): Promise<(string | null)[]>;
}

export class RedisKvStore implements KvStore {
  private readonly redis: Redis & KvScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('kvWrite', { numberOfKeys: 2, lua: WRITE });
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
    return { kv: sorted(pairs(fields)), revision: Number(first) };
  }
}

/** A kvRead reply as the state it says. */
function stateOf([revision, ...fields]: (string | null)[]): KvState {
  return { kv: sorted(pairs(fields)), revision: Number(revision ?? 0) };
}

/** field, value, field, value… as pairs. */
function pairs(fields: readonly (string | number | null)[]): [string, string][] {
  const entries: [string, string][] = [];
  for (let i = 0; i < fields.length; i += 2) entries.push([String(fields[i]), String(fields[i + 1])]);
  return entries;
}

/** Ordered by key, as the embedded store answers; fromEntries keeps a key named __proto__ as data. */
function sorted(entries: [string, string][]): Record<string, string> {
  return Object.fromEntries(entries.sort(([a], [b]) => byCodePoint(a, b)));
}

/** First unit of a surrogate pair, and the units above the surrogates. */
const SURROGATES = 0xd800;
const ABOVE_SURROGATES = 0xe000;

/**
 * Code point order, which is UTF-8's byte order and so SQLite's. JavaScript's `<` compares UTF-16 units,
 * which puts a character beyond U+FFFF (a surrogate pair) before U+E000–U+FFFF; moving the surrogates
 * above those units gives code point order.
 */
function byCodePoint(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= ABOVE_SURROGATES) return unit - (ABOVE_SURROGATES - SURROGATES);
  if (unit >= SURROGATES) return unit + (0x10000 - ABOVE_SURROGATES);
  return unit;
}
