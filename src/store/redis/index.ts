import type { Redis } from 'ioredis';
import type { Store } from '../ports.js';
import { RedisApiKeyStore } from './api-keys.js';
import { RedisHistoryStore } from './history.js';
import { RedisKeys } from './keys.js';
import { RedisKvStore } from './kv.js';
import { RedisProfileStore } from './profiles.js';

/**
 * The store of a scale-out deployment, on the node's Redis connection. A write is acknowledged when Redis
 * answered it; whether it survives a crash of Redis is Redis's setting: with `appendonly yes` and
 * `appendfsync always` nothing acknowledged is lost, with `everysec` up to a second of writes may be.
 * Redis Cluster is not supported: some scripts touch keys of several users (the monitored set).
 */
export class RedisStore implements Store {
  readonly profiles: RedisProfileStore;
  readonly kv: RedisKvStore;
  readonly apiKeys: RedisApiKeyStore;
  readonly history: RedisHistoryStore;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    const keys = new RedisKeys(prefix);
    this.profiles = new RedisProfileStore(redis, keys);
    this.kv = new RedisKvStore(redis, keys);
    this.apiKeys = new RedisApiKeyStore(redis, keys);
    this.history = new RedisHistoryStore(redis, keys);
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  /** The connection is the node's, closed with the rest of its Redis link. */
  async close(): Promise<void> {}
}

export function openRedisStore(redis: Redis, prefix: string): RedisStore {
  return new RedisStore(redis, prefix);
}
