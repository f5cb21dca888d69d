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

  async save(node: string, state: SavedGatewayState): Promise<void> {
    await this.redis.hset(
      this.keys.gatewayState(node),
      'saved_at',
      state.savedAt,
      'sessions',
      JSON.stringify(state.sessions),
      'presences',
      state.presences,
    );
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
