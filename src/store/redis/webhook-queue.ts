import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { WebhookEvent } from '../../model/webhook.js';
import {
  type Claim,
  COLLAPSING_EVENTS,
  type EnqueueOutcome,
  MAX_QUEUED_EVENTS,
  type QueuedEvent,
  type WebhookQueue,
} from '../webhook-queue.js';

/**
 * A queue item is `type:delivery id`, so collapsing reads the list and not the bodies. KEYS: queue,
 * bodies, due set. ARGV: webhook id, item, body, collapse (1/0), type, now, most queued.
 */
const ENQUEUE = `
local collapsed, dropped = 0, 0
if ARGV[4] == '1' then
  local kind = ARGV[5] .. ':'
  for _, item in ipairs(redis.call('LRANGE', KEYS[1], 1, -1)) do
    if string.sub(item, 1, #kind) == kind then
      redis.call('LREM', KEYS[1], 1, item)
      redis.call('HDEL', KEYS[2], item)
      collapsed = collapsed + 1
    end
  end
end
while redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[7]) do
  local oldest = redis.call('LINDEX', KEYS[1], 1)
  if not oldest then break end
  redis.call('LREM', KEYS[1], 1, oldest)
  redis.call('HDEL', KEYS[2], oldest)
  dropped = dropped + 1
end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'NX', ARGV[6], ARGV[1])
return {collapsed, dropped}
`;

/**
 * Leasing a webhook moves its score in the due set past the lease: no node sees it due until the lease
 * runs out (its holder died) or its holder settles it. KEYS: due set. ARGV: now, limit, lease end, lease
 * prefix, key prefix, then the webhooks passed over.
 */
const CLAIM = `
local claims = {}
local limit = tonumber(ARGV[2])
local passing = {}
for i = 6, #ARGV do passing[ARGV[i]] = true end
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, limit + #ARGV - 5)
for i, id in ipairs(ids) do
  if #claims == limit then break end
  if not passing[id] then
    local tag = '{' .. id .. '}'
    local head = redis.call('LINDEX', ARGV[5] .. 'webhook-queue:' .. tag, 0)
    if not head then
      redis.call('ZREM', KEYS[1], id)
    else
      local state = ARGV[5] .. 'webhook-head:' .. tag
      if redis.call('HGET', state, 'item') ~= head then
        redis.call('HSET', state, 'item', head, 'attempts', 0, 'first', '')
      end
      local lease = ARGV[4] .. i
      redis.call('HSET', state, 'lease', lease)
      redis.call('ZADD', KEYS[1], ARGV[3], id)
      local tried = redis.call('HMGET', state, 'attempts', 'first')
      local body = redis.call('HGET', ARGV[5] .. 'webhook-events:' .. tag, head)
      claims[#claims + 1] = {id, head, body, tried[1], tried[2], lease}
    end
  end
end
return claims
`;

/** KEYS: queue, bodies, head state, due set. ARGV: webhook id, item, lease, delivered (1/0), now. */
const SETTLE = `
if redis.call('HGET', KEYS[3], 'lease') ~= ARGV[3] then return -1 end
redis.call('LREM', KEYS[1], 1, ARGV[2])
redis.call('HDEL', KEYS[2], ARGV[2])
local failures = 0
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[3], 'failures', 0)
else
  failures = redis.call('HINCRBY', KEYS[3], 'failures', 1)
end
redis.call('HSET', KEYS[3], 'item', '', 'attempts', 0, 'first', '', 'lease', '')
if redis.call('LLEN', KEYS[1]) > 0 then
  redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
else
  redis.call('ZREM', KEYS[4], ARGV[1])
end
return failures
`;

/** KEYS: head state, due set. ARGV: webhook id, lease, attempts, first attempt, due. */
const RETRY = `
if redis.call('HGET', KEYS[1], 'lease') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'attempts', ARGV[3], 'first', ARGV[4], 'lease', '')
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
return 1
`;

/** KEYS: head state, due set. ARGV: webhook id, lease, now. */
const RELEASE = `
if redis.call('HGET', KEYS[1], 'lease') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'lease', '')
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
`;

interface QueueScripts {
  webhookEnqueue(...args: string[]): Promise<[number, number]>;
  webhookClaim(...args: string[]): Promise<[string, string, string | null, string, string, string][]>;
  webhookSettle(...args: string[]): Promise<number>;
  webhookRetry(...args: string[]): Promise<number>;
  webhookRelease(...args: string[]): Promise<number>;
}

/**
 * The queue every node of a scale-out deployment shares: per webhook a list of its events in order, their
 * bodies, and the state of the head (attempts, the lease, events given up in a row); one sorted set of the
 * webhooks with an event due. An event is settled only once its delivery has finished, so a node that dies
 * mid-delivery leaves it to the next node once its lease has run out.
 */
export class RedisWebhookQueue implements WebhookQueue {
  private readonly redis: Redis & QueueScripts;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    redis.defineCommand('webhookEnqueue', { numberOfKeys: 3, lua: ENQUEUE });
    redis.defineCommand('webhookClaim', { numberOfKeys: 1, lua: CLAIM });
    redis.defineCommand('webhookSettle', { numberOfKeys: 4, lua: SETTLE });
    redis.defineCommand('webhookRetry', { numberOfKeys: 2, lua: RETRY });
    redis.defineCommand('webhookRelease', { numberOfKeys: 2, lua: RELEASE });
    this.redis = redis as Redis & QueueScripts;
  }

  async enqueue(webhookId: string, event: QueuedEvent, now: number): Promise<EnqueueOutcome> {
    const [collapsed, dropped] = await this.redis.webhookEnqueue(
      this.key('webhook-queue', webhookId),
      this.key('webhook-events', webhookId),
      this.due(),
      webhookId,
      `${event.type}:${event.id}`,
      event.body,
      COLLAPSING_EVENTS.has(event.type) ? '1' : '0',
      event.type,
      String(now),
      String(MAX_QUEUED_EVENTS),
    );
    return { collapsed, dropped };
  }

  async claim(
    now: number,
    limit: number,
    leaseMs: number,
    passing: readonly string[] = [],
  ): Promise<Claim[]> {
    const claimed = await this.redis.webhookClaim(
      this.due(),
      String(now),
      String(limit),
      String(now + leaseMs),
      `${randomUUID()}:`,
      this.prefix,
      ...passing,
    );
    return claimed.map(([webhookId, item, body, attempts, first, lease]) => {
      const split = item.indexOf(':');
      return {
        webhookId,
        event: { type: item.slice(0, split) as WebhookEvent, id: item.slice(split + 1), body: body ?? '' },
        attempts: Number(attempts),
        firstAttemptAt: first ? Number(first) : null,
        lease,
      };
    });
  }

  async settle(claim: Claim, delivered: boolean, now: number): Promise<number | null> {
    const failures = await this.redis.webhookSettle(
      this.key('webhook-queue', claim.webhookId),
      this.key('webhook-events', claim.webhookId),
      this.key('webhook-head', claim.webhookId),
      this.due(),
      claim.webhookId,
      `${claim.event.type}:${claim.event.id}`,
      claim.lease,
      delivered ? '1' : '0',
      String(now),
    );
    return failures < 0 ? null : failures;
  }

  async release(claim: Claim, now: number): Promise<boolean> {
    const released = await this.redis.webhookRelease(
      this.key('webhook-head', claim.webhookId),
      this.due(),
      claim.webhookId,
      claim.lease,
      String(now),
    );
    return released === 1;
  }

  async retryLater(claim: Claim, attempts: number, firstAttemptAt: number, dueAt: number): Promise<boolean> {
    const retried = await this.redis.webhookRetry(
      this.key('webhook-head', claim.webhookId),
      this.due(),
      claim.webhookId,
      claim.lease,
      String(attempts),
      String(firstAttemptAt),
      String(dueAt),
    );
    return retried === 1;
  }

  async drop(webhookId: string): Promise<void> {
    await this.redis
      .multi()
      .del(
        this.key('webhook-queue', webhookId),
        this.key('webhook-events', webhookId),
        this.key('webhook-head', webhookId),
      )
      .zrem(this.due(), webhookId)
      .exec();
  }

  /** The keys of one webhook share its id as a hash tag; CLAIM builds them the same way. */
  private key(name: string, webhookId: string): string {
    return `${this.prefix}${name}:{${webhookId}}`;
  }

  private due(): string {
    return `${this.prefix}webhook-due`;
  }
}
