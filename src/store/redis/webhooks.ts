import type { Redis } from 'ioredis';
import type { DeliveryRecord, StoredWebhook, WebhookEvent } from '../../model/webhook.js';
import type { Snowflake } from '../../presence/model.js';
import type { WebhookStore } from '../ports.js';
import { execAll } from './exec.js';
import type { RedisKeys } from './keys.js';

/** KEYS: user's webhooks, the webhook, users with webhooks. ARGV: max, id, user, url, events, secret, created. */
const ADD = `
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[2], 'id', ARGV[2], 'user_id', ARGV[3], 'url', ARGV[4], 'events', ARGV[5],
  'secret', ARGV[6], 'created_at', ARGV[7], 'disabled_at', '', 'disabled_reason', '')
redis.call('ZADD', KEYS[1], ARGV[7], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
return 1
`;

/** KEYS: the webhook, its deliveries, users with webhooks. ARGV: user's webhooks key up to the id, id. */
const REMOVE = `
local user = redis.call('HGET', KEYS[1], 'user_id')
if not user then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
local owned = ARGV[1] .. user .. '}'
redis.call('ZREM', owned, ARGV[2])
if redis.call('ZCARD', owned) == 0 then redis.call('SREM', KEYS[3], user) end
return 1
`;

/** KEYS: the webhook. ARGV: at, reason. A webhook that is gone or disabled already is left as it is. */
const DISABLE = `
if redis.call('HGET', KEYS[1], 'disabled_at') ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'disabled_at', ARGV[1], 'disabled_reason', ARGV[2])
return 1
`;

/** KEYS: the webhook, its deliveries. ARGV: delivery id, record JSON, how many to keep. */
const RECORD = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local newest = redis.call('LINDEX', KEYS[2], 0)
if newest and cjson.decode(newest).id == ARGV[1] then
  redis.call('LSET', KEYS[2], 0, ARGV[2])
else
  redis.call('LPUSH', KEYS[2], ARGV[2])
  redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
end
return 1
`;

interface WebhookScripts {
  webhookAdd(...args: string[]): Promise<number>;
  webhookRemove(...args: string[]): Promise<number>;
  webhookDisable(...args: string[]): Promise<number>;
  webhookRecord(...args: string[]): Promise<number>;
}

export function webhookOf(fields: Record<string, string>): StoredWebhook | undefined {
  if (fields.id === undefined) return undefined;
  return {
    id: fields.id,
    userId: fields.user_id ?? '',
    url: fields.url ?? '',
    events: JSON.parse(fields.events ?? '[]') as WebhookEvent[],
    secret: fields.secret ?? '',
    createdAt: Number(fields.created_at),
    disabledAt: fields.disabled_at ? Number(fields.disabled_at) : null,
    disabledReason: fields.disabled_reason || null,
  };
}

/**
 * Webhooks by id (hashes), each user's ids by when they were added, and the set of users with any. The
 * limit per user is checked in the script that adds, so two nodes adding at once cannot pass it.
 */
export class RedisWebhookStore implements WebhookStore {
  private readonly redis: Redis & WebhookScripts;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    redis.defineCommand('webhookAdd', { numberOfKeys: 3, lua: ADD });
    redis.defineCommand('webhookRemove', { numberOfKeys: 3, lua: REMOVE });
    redis.defineCommand('webhookDisable', { numberOfKeys: 1, lua: DISABLE });
    redis.defineCommand('webhookRecord', { numberOfKeys: 2, lua: RECORD });
    this.redis = redis as Redis & WebhookScripts;
  }

  async addWebhook(webhook: StoredWebhook, maxPerUser: number): Promise<boolean> {
    const added = await this.redis.webhookAdd(
      this.keys.userWebhooks(webhook.userId),
      this.keys.webhook(webhook.id),
      this.keys.webhookUsers(),
      String(maxPerUser),
      webhook.id,
      webhook.userId,
      webhook.url,
      JSON.stringify(webhook.events),
      webhook.secret,
      String(webhook.createdAt),
    );
    return added === 1;
  }

  async webhooksOf(userId: Snowflake): Promise<StoredWebhook[]> {
    const ids = await this.redis.zrange(this.keys.userWebhooks(userId), 0, -1);
    return this.read(ids);
  }

  async webhook(id: string): Promise<StoredWebhook | undefined> {
    return webhookOf(await this.redis.hgetall(this.keys.webhook(id)));
  }

  async activeWebhooks(): Promise<StoredWebhook[]> {
    const users = await this.redis.smembers(this.keys.webhookUsers());
    if (users.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const userId of users) pipeline.zrange(this.keys.userWebhooks(userId), 0, -1);
    const ids = ((await execAll(pipeline)) as string[][]).flat();
    return (await this.read(ids)).filter((webhook) => webhook.disabledAt === null);
  }

  async removeWebhook(id: string): Promise<boolean> {
    const removed = await this.redis.webhookRemove(
      this.keys.webhook(id),
      this.keys.webhookDeliveries(id),
      this.keys.webhookUsers(),
      this.keys.userWebhooks('').slice(0, -1),
      id,
    );
    return removed === 1;
  }

  async disableWebhook(id: string, at: number, reason: string): Promise<boolean> {
    return (await this.redis.webhookDisable(this.keys.webhook(id), String(at), reason)) === 1;
  }

  async recordDelivery(webhookId: string, record: DeliveryRecord, keep: number): Promise<void> {
    await this.redis.webhookRecord(
      this.keys.webhook(webhookId),
      this.keys.webhookDeliveries(webhookId),
      record.id,
      JSON.stringify(record),
      String(keep),
    );
  }

  async deliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    const records = await this.redis.lrange(this.keys.webhookDeliveries(webhookId), 0, limit - 1);
    return records.map((record) => JSON.parse(record) as DeliveryRecord);
  }

  /** The webhooks of these ids that still exist, in their order, in one round trip. */
  private async read(ids: readonly string[]): Promise<StoredWebhook[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.keys.webhook(id));
    const found = (await execAll(pipeline)) as Record<string, string>[];
    return found.map(webhookOf).filter((webhook) => webhook !== undefined);
  }
}
