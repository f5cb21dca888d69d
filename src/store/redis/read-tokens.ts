import type { Redis } from 'ioredis';
import type { Snowflake } from '../../presence/model.js';
import type { ReadTokenListing, ReadTokenStore, StoredReadToken } from '../ports.js';
import type { RedisKeys } from './keys.js';

/** KEYS: the user's tokens, the new token's owner entry. ARGV: max, id, the token as JSON, owner value. */
const ADD = `
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('SET', KEYS[2], ARGV[4])
return 1
`;

/** KEYS: the user's tokens. ARGV: the id, the owner entries' prefix. */
const REMOVE = `
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then return 0 end
redis.call('DEL', ARGV[2] .. cjson.decode(stored).hash)
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`;

interface TokenScripts {
  readTokenAdd(...args: string[]): Promise<number>;
  readTokenRemove(...args: string[]): Promise<number>;
}

/** A token as kept in the user's hash: what a script reads (`hash`) and a list shows. */
interface Kept {
  hash: string;
  label: string | null;
  created_at: number;
}

/**
 * Each user's tokens in a hash of their own, and each token's owner by its hash, for lookups; a script
 * writes and removes both together, and checks the limit as it adds, so two nodes adding at once cannot
 * pass it.
 */
export class RedisReadTokenStore implements ReadTokenStore {
  private readonly redis: Redis & TokenScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('readTokenAdd', { numberOfKeys: 2, lua: ADD });
    redis.defineCommand('readTokenRemove', { numberOfKeys: 1, lua: REMOVE });
    this.redis = redis as Redis & TokenScripts;
  }

  async addReadToken(token: StoredReadToken, maxPerUser: number): Promise<boolean> {
    const hex = token.hash.toString('hex');
    const kept: Kept = { hash: hex, label: token.label, created_at: token.createdAt };
    const added = await this.redis.readTokenAdd(
      this.keys.readTokens(token.userId),
      this.keys.readTokenOwner(hex),
      String(maxPerUser),
      token.id,
      JSON.stringify(kept),
      `${token.userId} ${token.id}`,
    );
    return added === 1;
  }

  async readTokensOf(userId: Snowflake): Promise<ReadTokenListing[]> {
    return readTokensIn(await this.redis.hgetall(this.keys.readTokens(userId))).map(
      ({ id, label, createdAt }) => ({ id, label, createdAt }),
    );
  }

  async removeReadToken(userId: Snowflake, id: string): Promise<boolean> {
    const removed = await this.redis.readTokenRemove(
      this.keys.readTokens(userId),
      id,
      this.keys.readTokenOwner(''),
    );
    return removed === 1;
  }

  async findReadToken(hash: Buffer): Promise<{ userId: Snowflake; id: string; hash: Buffer } | undefined> {
    const owner = await this.redis.get(this.keys.readTokenOwner(hash.toString('hex')));
    if (owner === null) return undefined;
    const [userId = '', id = ''] = owner.split(' ');
    return { userId, id, hash };
  }
}

/** A user's tokens hash (id → JSON) as tokens, oldest first. */
export function readTokensIn(
  fields: Record<string, string>,
): { id: string; hash: Buffer; label: string | null; createdAt: number }[] {
  return Object.entries(fields)
    .map(([id, json]) => {
      const kept = JSON.parse(json) as Kept;
      return { id, hash: Buffer.from(kept.hash, 'hex'), label: kept.label, createdAt: kept.created_at };
    })
    .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
