import type { Redis } from 'ioredis';
import type { Store } from '../ports.js';
import { RedisAccountStore } from './accounts.js';
import { RedisApiKeyStore } from './api-keys.js';
import { RedisGatewayStateStore } from './gateway-state.js';
import { RedisHistoryStore } from './history.js';
import { RedisKeys } from './keys.js';
import { RedisKvStore } from './kv.js';
import { migrateRedisStore } from './migrations.js';
import { RedisPrivacyStore } from './privacy.js';
import { RedisProfileStore } from './profiles.js';
import { RedisReadTokenStore } from './read-tokens.js';
import { RedisRetentionStore } from './retention.js';
import { RedisWebhookStore } from './webhooks.js';

/**
 * The store of a scale-out deployment, on the node's Redis connection.
 *
 * Durability: a write is acknowledged only once Redis has answered it, but whether it survives a crash of
 * Redis is Redis's setting. With `appendonly yes` and `appendfsync everysec` (Redis's default fsync
 * policy) up to about a second of acknowledged writes can be lost; `appendfsync always` loses none at the
 * cost of an fsync per write; without AOF, everything since the last RDB snapshot.
 *
 * Redis Cluster is not supported: some scripts touch keys of several users (the monitored set, a batch
 * of history). Per-user keys carry `{userId}` hash tags all the same, so one user's script stays in a slot.
 */
export class RedisStore implements Store {
  readonly profiles: RedisProfileStore;
  readonly kv: RedisKvStore;
  readonly apiKeys: RedisApiKeyStore;
  readonly history: RedisHistoryStore;
  readonly webhooks: RedisWebhookStore;
  readonly privacy: RedisPrivacyStore;
  readonly readTokens: RedisReadTokenStore;
  readonly accounts: RedisAccountStore;
  readonly retention: RedisRetentionStore;
  readonly gatewayState: RedisGatewayStateStore;
  private readonly migrated: Promise<void>;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    const keys = new RedisKeys(prefix);
    this.migrated = migrateRedisStore(redis, keys);
    // Observed by every history call and by ping (so readiness fails); not a crash of the process.
    this.migrated.catch(() => {});
    this.profiles = new RedisProfileStore(redis, keys);
    this.kv = new RedisKvStore(redis, keys);
    this.apiKeys = new RedisApiKeyStore(redis, keys);
    this.history = new RedisHistoryStore(redis, keys, this.migrated);
    this.webhooks = new RedisWebhookStore(redis, keys);
    this.privacy = new RedisPrivacyStore(redis, keys);
    this.readTokens = new RedisReadTokenStore(redis, keys);
    this.accounts = new RedisAccountStore(redis, keys, this.migrated);
    this.retention = new RedisRetentionStore(redis, keys);
    this.gatewayState = new RedisGatewayStateStore(redis, keys);
  }

  async ping(): Promise<boolean> {
    try {
      await this.migrated;
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  /** The connection is the node's, closed with the rest of its Redis link. */
  async close(): Promise<void> {}
}

/**
 * The store under `prefix` on the node's command connection. It migrates data written by older builds
 * in the background; history calls wait for that, the rest does not depend on it.
 */
export function openRedisStore(redis: Redis, prefix: string): RedisStore {
  return new RedisStore(redis, prefix);
}
