import type { Redis } from 'ioredis';
import type { Snowflake } from '../../presence/model.js';
import type { ProfileStore, StoredProfile } from '../ports.js';
import type { RedisKeys } from './keys.js';

export class RedisProfileStore implements ProfileStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  async getProfiles(userIds: readonly Snowflake[]): Promise<Map<Snowflake, StoredProfile>> {
    const found = new Map<Snowflake, StoredProfile>();
    if (userIds.length === 0) return found;
    const stored = await this.redis.mget(userIds.map((userId) => this.keys.profile(userId)));
    for (const [index, userId] of userIds.entries()) {
      const json = stored[index];
      if (json != null) found.set(userId, JSON.parse(json) as StoredProfile);
    }
    return found;
  }

  async putProfiles(profiles: ReadonlyMap<Snowflake, StoredProfile>): Promise<void> {
    if (profiles.size === 0) return;
    const pairs: string[] = [];
    for (const [userId, stored] of profiles) pairs.push(this.keys.profile(userId), JSON.stringify(stored));
    await this.redis.mset(pairs);
  }
}
