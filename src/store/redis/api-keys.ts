import type { Redis } from 'ioredis';
import type { Snowflake } from '../../presence/model.js';
import type { ApiKeyStore } from '../ports.js';
import type { RedisKeys } from './keys.js';

/** KEYS: user's key, new key's owner. ARGV: new hash (hex), user id, key prefix for the old hash's owner. */
const REPLACE = `
local old = redis.call('GET', KEYS[1])
if old then redis.call('DEL', ARGV[3] .. old) end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
`;

/** KEYS: the key's owner entry, that owner's key. ARGV: hash (hex), owner read before. Returns 1 if revoked. */
const REVOKE = `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
`;

interface KeyScripts {
  apiKeyReplace(...args: string[]): Promise<unknown>;
  apiKeyRevoke(...args: string[]): Promise<number>;
}

/** Key hashes only: hash → owner for lookups, owner → hash so a new key revokes the old in one step. */
export class RedisApiKeyStore implements ApiKeyStore {
  private readonly redis: Redis & KeyScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('apiKeyReplace', { numberOfKeys: 2, lua: REPLACE });
    redis.defineCommand('apiKeyRevoke', { numberOfKeys: 2, lua: REVOKE });
    this.redis = redis as Redis & KeyScripts;
  }

  async replaceKey(userId: Snowflake, hash: Buffer, _createdAt: number): Promise<void> {
    const hex = hash.toString('hex');
    await this.redis.apiKeyReplace(
      this.keys.userKey(userId),
      this.keys.keyOwner(hex),
      hex,
      userId,
      this.keys.keyOwner(''),
    );
  }

  async revokeKey(hash: Buffer): Promise<boolean> {
    const hex = hash.toString('hex');
    const owner = await this.redis.get(this.keys.keyOwner(hex));
    if (owner === null) return false;
    // The script checks the owner again: the key may have been replaced since.
    return (
      (await this.redis.apiKeyRevoke(this.keys.keyOwner(hex), this.keys.userKey(owner), hex, owner)) === 1
    );
  }

  async findKey(hash: Buffer): Promise<{ userId: Snowflake; hash: Buffer } | undefined> {
    const userId = await this.redis.get(this.keys.keyOwner(hash.toString('hex')));
    return userId === null ? undefined : { userId, hash };
  }
}
