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

/**
 * The pending key and its owner entry expire together; a pending key the user had stops working.
 * KEYS: user's pending key, new key's owner. ARGV: new hash (hex), user id, expiry (epoch ms), key
 * prefix for the previous pending hash's owner.
 */
const ADD_PENDING = `
local old = redis.call('GET', KEYS[1])
if old then redis.call('DEL', ARGV[4] .. old) end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'PXAT', ARGV[3])
`;

/**
 * KEYS: user's pending key, its owner entry, user's live key. ARGV: hash (hex), user id, key prefix for
 * the live hash's owner. Returns 1 if activated.
 */
const ACTIVATE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
local old = redis.call('GET', KEYS[3])
if old then redis.call('DEL', ARGV[3] .. old) end
redis.call('SET', KEYS[3], ARGV[1])
redis.call('PERSIST', KEYS[2])
redis.call('DEL', KEYS[1])
return 1
`;

/** KEYS: user's pending key, its owner entry. ARGV: hash (hex). */
const DISCARD = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`;

/**
 * KEYS: the key's owner entry, that owner's live key, their pending key. ARGV: hash (hex), owner read
 * before. Returns 1 if revoked.
 */
const REVOKE = `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
return 1
`;

/**
 * Both of the user's keys and their owner entries, in one step, as the erasure in accounts.ts removes them.
 * KEYS: user's live key, their pending key. ARGV: user id, key prefix for a hash's owner. Returns how many
 * of the two were the user's working keys (an expired pending key Redis has forgotten already).
 */
const REVOKE_OF = `
local revoked = 0
for _, key in ipairs({KEYS[1], KEYS[2]}) do
  local hash = redis.call('GET', key)
  if hash then
    local owner = ARGV[2] .. hash
    if redis.call('GET', owner) == ARGV[1] then
      redis.call('DEL', owner)
      revoked = revoked + 1
    end
    redis.call('DEL', key)
  end
end
return revoked
`;

interface KeyScripts {
  apiKeyReplace(...args: string[]): Promise<unknown>;
  apiKeyAddPending(...args: string[]): Promise<unknown>;
  apiKeyActivate(...args: string[]): Promise<number>;
  apiKeyDiscard(...args: string[]): Promise<number>;
  apiKeyRevoke(...args: string[]): Promise<number>;
  apiKeyRevokeOf(...args: string[]): Promise<number>;
}

/**
 * Key hashes only: hash → owner for lookups, owner → hash so a new key revokes the old in one step. A
 * pending key's entries carry its expiry, so Redis itself forgets one its handover never finished.
 */
export class RedisApiKeyStore implements ApiKeyStore {
  private readonly redis: Redis & KeyScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('apiKeyReplace', { numberOfKeys: 2, lua: REPLACE });
    redis.defineCommand('apiKeyAddPending', { numberOfKeys: 2, lua: ADD_PENDING });
    redis.defineCommand('apiKeyActivate', { numberOfKeys: 3, lua: ACTIVATE });
    redis.defineCommand('apiKeyDiscard', { numberOfKeys: 2, lua: DISCARD });
    redis.defineCommand('apiKeyRevoke', { numberOfKeys: 3, lua: REVOKE });
    redis.defineCommand('apiKeyRevokeOf', { numberOfKeys: 2, lua: REVOKE_OF });
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

  async addPendingKey(userId: Snowflake, hash: Buffer, _createdAt: number, expiresAt: number): Promise<void> {
    const hex = hash.toString('hex');
    await this.redis.apiKeyAddPending(
      this.keys.pendingKey(userId),
      this.keys.keyOwner(hex),
      hex,
      userId,
      String(expiresAt),
      this.keys.keyOwner(''),
    );
  }

  /** Redis has forgotten a pending key once its expiry passed: `now` is not needed to tell. */
  async activateKey(userId: Snowflake, hash: Buffer, _now: number): Promise<boolean> {
    const hex = hash.toString('hex');
    const activated = await this.redis.apiKeyActivate(
      this.keys.pendingKey(userId),
      this.keys.keyOwner(hex),
      this.keys.userKey(userId),
      hex,
      userId,
      this.keys.keyOwner(''),
    );
    return activated === 1;
  }

  async discardPendingKey(userId: Snowflake, hash: Buffer): Promise<void> {
    const hex = hash.toString('hex');
    await this.redis.apiKeyDiscard(this.keys.pendingKey(userId), this.keys.keyOwner(hex), hex);
  }

  async revokeKey(hash: Buffer): Promise<boolean> {
    const hex = hash.toString('hex');
    const owner = await this.redis.get(this.keys.keyOwner(hex));
    if (owner === null) return false;
    // The script checks the owner again: the key may have been replaced since.
    const revoked = await this.redis.apiKeyRevoke(
      this.keys.keyOwner(hex),
      this.keys.userKey(owner),
      this.keys.pendingKey(owner),
      hex,
      owner,
    );
    return revoked === 1;
  }

  async revokeKeysOf(userId: Snowflake): Promise<number> {
    return this.redis.apiKeyRevokeOf(
      this.keys.userKey(userId),
      this.keys.pendingKey(userId),
      userId,
      this.keys.keyOwner(''),
    );
  }

  async findKey(hash: Buffer): Promise<{ userId: Snowflake; hash: Buffer } | undefined> {
    const userId = await this.redis.get(this.keys.keyOwner(hash.toString('hex')));
    return userId === null ? undefined : { userId, hash };
  }
}
