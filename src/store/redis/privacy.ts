import type { Redis } from 'ioredis';
import type { Snowflake } from '../../presence/model.js';
import type { PrivacyPatch } from '../../presence/privacy.js';
import type { PrivacyStore } from '../ports.js';
import { namedSettings } from '../privacy-patch.js';
import { execAll } from './exec.js';
import type { RedisKeys } from './keys.js';

/** Users whose settings are read in one round trip by `allPrivacy`. */
const READ_BATCH = 1_000;

/** A user's settings from their hash: each field a setting, each value its JSON text. */
export function privacyOf(fields: Record<string, string>): PrivacyPatch {
  return Object.fromEntries(
    Object.entries(fields).map(([field, value]) => [field, JSON.parse(value) as unknown]),
  ) as PrivacyPatch;
}

/**
 * A hash per user, a field per setting, and the set of users with any. A patch is one HSET of the fields
 * it names, so patches of one user on several nodes at once never undo each other's fields; the hash,
 * the set and the read of what is kept go in one MULTI.
 */
export class RedisPrivacyStore implements PrivacyStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  async getPrivacy(userId: Snowflake): Promise<PrivacyPatch | undefined> {
    const fields = await this.redis.hgetall(this.keys.privacy(userId));
    return Object.keys(fields).length === 0 ? undefined : privacyOf(fields);
  }

  async allPrivacy(): Promise<Map<Snowflake, PrivacyPatch>> {
    const users = await this.redis.smembers(this.keys.privacyUsers());
    const found = new Map<Snowflake, PrivacyPatch>();
    for (let start = 0; start < users.length; start += READ_BATCH) {
      const batch = users.slice(start, start + READ_BATCH);
      const pipeline = this.redis.pipeline();
      for (const userId of batch) pipeline.hgetall(this.keys.privacy(userId));
      const replies = (await execAll(pipeline)) as Record<string, string>[];
      batch.forEach((userId, index) => {
        const fields = replies[index] as Record<string, string>;
        if (Object.keys(fields).length > 0) found.set(userId, privacyOf(fields));
      });
    }
    return found;
  }

  async patchPrivacy(userId: Snowflake, patch: PrivacyPatch): Promise<PrivacyPatch> {
    const named = namedSettings(patch);
    // Nothing named writes nothing: a user who never set anything still has no entry.
    if (named.length === 0) return (await this.getPrivacy(userId)) ?? {};
    const key = this.keys.privacy(userId);
    const fields = Object.fromEntries(named.map(([field, value]) => [field, JSON.stringify(value)]));
    const replies = await execAll(
      this.redis.multi().hset(key, fields).sadd(this.keys.privacyUsers(), userId).hgetall(key),
    );
    return privacyOf(replies[2] as Record<string, string>);
  }

  async deletePrivacy(userId: Snowflake): Promise<void> {
    await execAll(this.redis.multi().del(this.keys.privacy(userId)).srem(this.keys.privacyUsers(), userId));
  }
}
