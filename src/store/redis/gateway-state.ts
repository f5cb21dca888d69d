import type { Redis } from 'ioredis';
import type { GatewayStateStore, SavedGatewaySession, SavedGatewayState } from '../ports.js';
import type { RedisKeys } from './keys.js';

/**
 * A hash per ingest node (`gateway-state:{node}`), its fields sent and read as bytes: the presences are
 * binary. Every save writes every field, so one HSET replaces the whole state at once.
 */
export class RedisGatewayStateStore implements GatewayStateStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  /** Each node's key expires `keepForMs` after the moment its state was saved. */
  async save(node: string, state: SavedGatewayState, keepForMs: number): Promise<void> {
    const key = this.keys.gatewayState(node);
    // Relative, on this node's clock as `savedAt` is: Redis's own clock may differ.
    const leftMs = keepForMs - (Date.now() - state.savedAt);
    if (leftMs <= 0) {
      await this.redis.del(key);
      return;
    }
    const results = await this.redis
      .multi()
      .hset(
        key,
        'saved_at',
        state.savedAt,
        'sessions',
        JSON.stringify(state.sessions),
        'presences',
        state.presences,
      )
      .pexpire(key, leftMs)
      .exec();
    const failed = results?.find(([error]) => error !== null)?.[0];
    if (failed) throw failed;
  }

  async load(node: string): Promise<SavedGatewayState | null> {
    const fields = await this.redis.hgetallBuffer(this.keys.gatewayState(node));
    const { saved_at: savedAt, sessions, presences } = fields;
    if (savedAt === undefined || sessions === undefined || presences === undefined) return null;
    return {
      savedAt: Number(savedAt.toString()),
      sessions: JSON.parse(sessions.toString()) as SavedGatewaySession[],
      presences,
    };
  }

  async clear(node: string): Promise<void> {
    await this.redis.del(this.keys.gatewayState(node));
  }
}
