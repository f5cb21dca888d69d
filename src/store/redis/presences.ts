import type { Redis } from 'ioredis';
import type { DiscordStatus, Snowflake } from '../../presence/model.js';
import type { PublishedPresence } from '../../presence/replica.js';
import type { PresenceSnapshot } from '../../presence/snapshot.js';

/**
 * Ingest nodes are numbered by their lowest shard id. A user seen on several nodes (guilds on several
 * shards) is published by the lowest-numbered live one only, so one real change is one publication and
 * one history entry, however many shards carry it. A node whose liveness key expired (it crashed) owns
 * nothing, so the next one takes over at once. `alive` is the liveness keys' prefix.
 */
const MIN_NODE = `
local owner = nil
for _, member in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local n = tonumber(member)
  if (owner == nil or n < owner) and redis.call('EXISTS', alive .. member) == 1 then owner = n end
end
`;

/** KEYS: liveness key, ingest node set. ARGV: node, instance, ttl ms. 0 when another instance holds it. */
const CLAIM = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`;

/**
 * KEYS: presence hash, user's nodes, node's users, monitored set.
 * ARGV: user id, node, presence JSON, KV revision, channel, liveness prefix, status, KV offset, seen at.
 * Returns the new version, 0 when nothing changed, -1 when another node owns the user.
 */
const PUT = `
local alive = ARGV[6]
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
${MIN_NODE}
if owner ~= tonumber(ARGV[2]) then return -1 end
if redis.call('HGET', KEYS[1], 'json') == ARGV[3] then return 0 end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'kv', ARGV[4], 'status', ARGV[7], 'kvAt', ARGV[8])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('PUBLISH', ARGV[5], cjson.encode({userId = ARGV[1], version = version,
  kvRevision = tonumber(ARGV[4]), json = ARGV[3], status = ARGV[7], kvAt = tonumber(ARGV[8]),
  at = tonumber(ARGV[9])}))
return version
`;

/**
 * KEYS: as PUT. ARGV: user id, node, presence channel, handover channel, liveness prefix, seen at.
 * Returns LEFT_* below.
 */
const LEAVE = `
local alive = ARGV[5]
redis.call('SREM', KEYS[3], ARGV[1])
if redis.call('SREM', KEYS[2], ARGV[2]) == 0 then return 0 end
${MIN_NODE}
if owner == nil then
  local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[4], ARGV[1])
  redis.call('PUBLISH', ARGV[3], cjson.encode({userId = ARGV[1], version = version, kvRevision = 0,
    json = cjson.null, at = tonumber(ARGV[6])}))
  return 1
end
if owner > tonumber(ARGV[2]) then
  redis.call('PUBLISH', ARGV[4], cjson.encode({userId = ARGV[1], node = owner}))
  return 2
end
return 3
`;

/** What `put` answers when another node publishes the user. */
export const NOT_OWNER = -1;

export type LeaveOutcome = 'not-here' | 'unmonitored' | 'handed-over' | 'still-elsewhere';
const LEAVE_OUTCOMES: readonly LeaveOutcome[] = ['not-here', 'unmonitored', 'handed-over', 'still-elsewhere'];

/** How many users one listing round trip reads. */
const LISTING_BATCH = 1_000;

interface PresenceScripts {
  presencePut(...args: (string | Buffer)[]): Promise<number>;
  presenceLeave(...args: string[]): Promise<number>;
  presenceClaim(...args: string[]): Promise<number>;
}

/**
 * The presences every node shares in Redis: one hash per monitored user (JSON, version, KV revision),
 * which ingest nodes see each user, and the channels that announce changes. Publication happens in the
 * same script as the write, so a node that reads the hash and then listens misses nothing it can't
 * recognise by version.
 */
export class RedisPresences {
  readonly channel: string;
  readonly handoverChannel: string;
  private readonly redis: Redis & PresenceScripts;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    channels: { presence: string; handover: string },
  ) {
    this.channel = channels.presence;
    this.handoverChannel = channels.handover;
    redis.defineCommand('presencePut', { numberOfKeys: 4, lua: PUT });
    redis.defineCommand('presenceLeave', { numberOfKeys: 4, lua: LEAVE });
    redis.defineCommand('presenceClaim', { numberOfKeys: 2, lua: CLAIM });
    this.redis = redis as Redis & PresenceScripts;
  }

  /**
   * This node sees the user with this presence. Returns the published version, 0 when the shared
   * presence is already this one, NOT_OWNER when another node owns the user.
   */
  put(
    node: number,
    userId: Snowflake,
    snapshot: PresenceSnapshot,
    kvRevision: number,
    at: number,
  ): Promise<number> {
    return this.redis.presencePut(
      ...this.keys(node, userId),
      userId,
      String(node),
      snapshot.jsonData(),
      String(kvRevision),
      this.channel,
      this.alivePrefix(),
      snapshot.status,
      String(snapshot.jsonKvAt),
      String(at),
    );
  }

  /** This node no longer sees the user, since `at`. */
  async leave(node: number, userId: Snowflake, at: number = Date.now()): Promise<LeaveOutcome> {
    const outcome = await this.redis.presenceLeave(
      ...this.keys(node, userId),
      userId,
      String(node),
      this.channel,
      this.handoverChannel,
      this.alivePrefix(),
      String(at),
    );
    return LEAVE_OUTCOMES[outcome] ?? 'not-here';
  }

  /**
   * Marks `node` as run by `instance` for `ttlMs`; false when another instance holds it (two nodes
   * configured with the same shards, or the previous holder has not expired yet). Renewed while running.
   */
  async claim(node: number, instance: string, ttlMs: number): Promise<boolean> {
    return (
      (await this.redis.presenceClaim(
        `${this.alivePrefix()}${node}`,
        this.ingestNodesKey(),
        String(node),
        instance,
        String(ttlMs),
      )) === 1
    );
  }

  /** Gives `node` up at once (a clean shutdown), if `instance` holds it. */
  async release(node: number, instance: string): Promise<void> {
    const key = `${this.alivePrefix()}${node}`;
    if ((await this.redis.get(key)) === instance) await this.redis.del(key);
  }

  /** Nodes that ran once and whose liveness expired: their users are for the live nodes to leave. */
  async deadNodes(): Promise<number[]> {
    const nodes = (await this.redis.smembers(this.ingestNodesKey())).map(Number);
    if (nodes.length === 0) return [];
    const alive = await this.redis.mget(...nodes.map((node) => `${this.alivePrefix()}${node}`));
    return nodes.filter((_, index) => alive[index] === null);
  }

  /** A dead node is forgotten once nothing of it is left. */
  async forgetNode(node: number): Promise<void> {
    if ((await this.redis.scard(this.nodeUsersKey(node))) === 0) {
      await this.redis.srem(this.ingestNodesKey(), String(node));
    }
  }

  /** The users this node said it sees: after a restart, those it no longer sees must be left. */
  async usersOf(node: number): Promise<Snowflake[]> {
    const users: Snowflake[] = [];
    const stream = this.redis.sscanStream(this.nodeUsersKey(node), { count: LISTING_BATCH });
    for await (const batch of stream) users.push(...(batch as string[]));
    return users;
  }

  /** Every monitored user's presence, read in batches. */
  async *list(): AsyncIterable<PublishedPresence> {
    const stream = this.redis.sscanStream(this.monitoredKey(), { count: LISTING_BATCH });
    for await (const batch of stream) {
      const ids = [...new Set(batch as string[])];
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.hmget(this.presenceKey(id), 'json', 'version', 'kv', 'status', 'kvAt');
      const replies = (await pipeline.exec()) ?? [];
      for (const [index, [error, reply]] of replies.entries()) {
        if (error) throw error;
        const [json, version, kv, status, kvAt] = reply as (string | null)[];
        // Removed between the scan and the read: its removal was published, or will be listed next time.
        if (json === null || json === undefined) continue;
        yield {
          userId: ids[index] as Snowflake,
          version: Number(version),
          kvRevision: Number(kv),
          json,
          // Written by an older node: the replica reads them from the JSON.
          ...(status && kvAt ? { status: status as DiscordStatus, kvAt: Number(kvAt) } : {}),
        };
      }
    }
  }

  private keys(node: number, userId: Snowflake): [string, string, string, string] {
    return [
      this.presenceKey(userId),
      `${this.prefix}presence-nodes:{${userId}}`,
      this.nodeUsersKey(node),
      this.monitoredKey(),
    ];
  }

  private presenceKey(userId: Snowflake): string {
    return `${this.prefix}presence:{${userId}}`;
  }

  private nodeUsersKey(node: number): string {
    return `${this.prefix}node-users:${node}`;
  }

  private alivePrefix(): string {
    return `${this.prefix}node-alive:`;
  }

  private ingestNodesKey(): string {
    return `${this.prefix}ingest-nodes`;
  }

  private monitoredKey(): string {
    return `${this.prefix}monitored`;
  }
}
