import type { Redis } from 'ioredis';
import type { DiscordStatus, Snowflake } from '../../presence/model.js';
import type { PublishedPresence } from '../../presence/registry/replica.js';
import type { PresenceSnapshot } from '../../presence/registry/snapshot.js';
import { execAll } from './exec.js';

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

/** A node's liveness while it restarts (see `release`). */
const HANDED_OVER = 'handed-over';

/**
 * KEYS: the node's liveness. ARGV: the instance letting go, how long to hold it for a successor (0: not).
 * Only what that instance holds is let go: one that expired meanwhile may be another's already.
 */
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], '${HANDED_OVER}', 'PX', ARGV[2])
else
  redis.call('DEL', KEYS[1])
end
return 1
`;

/**
 * KEYS: liveness key, ingest node set. ARGV: node, instance, ttl ms. 0 when another instance holds it; a
 * liveness held for a successor is anyone's.
 */
const CLAIM = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[2] and holder ~= '${HANDED_OVER}' then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`;

/**
 * KEYS: presence hash, user's nodes, node's users, monitored set, the user's KV held apart.
 * ARGV: user id, node, presence JSON (without the KV when it is held apart), KV revision, channel,
 * liveness prefix, status, KV offset, seen at, KV tag ('' when the KV is inside the JSON).
 * Returns the new version, 0 when nothing changed, NOT_OWNER when another node owns the user, NEEDS_KV
 * when the KV of that tag is not held apart yet.
 */
const PUT = `
local alive, tag = ARGV[6], ARGV[10]
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
${MIN_NODE}
local held = redis.call('HGET', KEYS[1], 'kvTag') or ''
if owner ~= tonumber(ARGV[2]) then
  -- A KV this node stored apart just before learning it is not the owner is nobody's.
  if tag ~= '' and tag ~= held then redis.call('HDEL', KEYS[5], tag) end
  return -1
end
if tag ~= '' and redis.call('HEXISTS', KEYS[5], tag) == 0 then return -2 end
if held == tag and redis.call('HGET', KEYS[1], 'json') == ARGV[3] then return 0 end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'kv', ARGV[4], 'status', ARGV[7], 'kvAt', ARGV[8], 'kvTag', tag)
if tag ~= held then
  for _, stale in ipairs(redis.call('HKEYS', KEYS[5])) do
    if stale ~= tag then redis.call('HDEL', KEYS[5], stale) end
  end
end
redis.call('SADD', KEYS[4], ARGV[1])
local message = {userId = ARGV[1], version = version, kvRevision = tonumber(ARGV[4]), json = ARGV[3],
  status = ARGV[7], kvAt = tonumber(ARGV[8]), at = tonumber(ARGV[9])}
if tag ~= '' then message.kvTag = tag end
redis.call('PUBLISH', ARGV[5], cjson.encode(message))
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
  redis.call('DEL', KEYS[1], KEYS[5])
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
/** What the script answers when the KV it is told of is not held apart yet: it is stored, then put again. */
const NEEDS_KV = -2;

/**
 * A KV whose JSON is at least this long travels apart from the presence: stored once per KV write, read
 * once by each API node, while the presence's other changes publish only the rest of its JSON.
 */
export const KV_APART_BYTES = 4 * 1024;

export type LeaveOutcome = 'not-here' | 'unmonitored' | 'handed-over' | 'still-elsewhere';
const LEAVE_OUTCOMES: readonly LeaveOutcome[] = ['not-here', 'unmonitored', 'handed-over', 'still-elsewhere'];

/** How many users one listing round trip reads. */
const LISTING_BATCH = 1_000;

/** A presence hash's fields, as `publishedOf` reads them. */
const PRESENCE_FIELDS = ['json', 'version', 'kv', 'status', 'kvAt', 'kvTag'] as const;

/** A presence hash's fields as the publication they stand for; null when the user is not there. */
function publishedOf(userId: Snowflake, reply: readonly (string | null)[]): PublishedPresence | null {
  const [json, version, kv, status, kvAt, kvTag] = reply;
  if (json === null || json === undefined) return null;
  return {
    userId,
    version: Number(version),
    kvRevision: Number(kv),
    json,
    // Written by an older node: the replica reads them from the JSON.
    ...(status && kvAt ? { status: status as DiscordStatus, kvAt: Number(kvAt) } : {}),
    ...(kvTag ? { kvTag } : {}),
  };
}

/**
 * What names a KV's JSON held apart: its revision, and its length, which tells the escaped text of an
 * ASCII body from the UTF-8 of a large one (the same bytes when there is nothing to escape).
 */
function kvTagOf(kvRevision: number, kvJson: string | Buffer): string {
  return `${kvRevision}:${kvJson.length}`;
}

/** The presence's JSON with its KV's JSON taken out: the KV is last, so the closing brace is all that follows. */
function withoutKv(snapshot: PresenceSnapshot): string | Buffer {
  const json = snapshot.jsonData();
  const at = snapshot.jsonKvAt;
  return typeof json === 'string'
    ? `${json.slice(0, at)}}`
    : Buffer.concat([json.subarray(0, at), CLOSING_BRACE]);
}

const CLOSING_BRACE = Buffer.from('}');

interface PresenceScripts {
  presencePut(...args: (string | Buffer)[]): Promise<number>;
  presenceLeave(...args: string[]): Promise<number>;
  presenceClaim(...args: string[]): Promise<number>;
  presenceRelease(...args: string[]): Promise<number>;
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
    redis.defineCommand('presencePut', { numberOfKeys: 5, lua: PUT });
    redis.defineCommand('presenceLeave', { numberOfKeys: 5, lua: LEAVE });
    redis.defineCommand('presenceClaim', { numberOfKeys: 2, lua: CLAIM });
    redis.defineCommand('presenceRelease', { numberOfKeys: 1, lua: RELEASE });
    this.redis = redis as Redis & PresenceScripts;
  }

  /**
   * This node sees the user with this presence. Returns the published version, 0 when the shared
   * presence is already this one, NOT_OWNER when another node owns the user. A large KV is stored apart
   * the first time the owner puts it (a plain write, beside a script that never sees it); the presence's
   * JSON then goes without it, with the KV's tag.
   */
  async put(
    node: number,
    userId: Snowflake,
    snapshot: PresenceSnapshot,
    kvRevision: number,
    at: number,
  ): Promise<number> {
    const keys = this.keys(node, userId);
    const kvJson = snapshot.kvJson();
    const apart = kvJson.length >= KV_APART_BYTES;
    const tag = apart ? kvTagOf(kvRevision, kvJson) : '';
    const args = [
      ...keys,
      userId,
      String(node),
      apart ? withoutKv(snapshot) : snapshot.jsonData(),
      String(kvRevision),
      this.channel,
      this.alivePrefix(),
      snapshot.status,
      String(snapshot.jsonKvAt),
      String(at),
      tag,
    ];
    const version = await this.redis.presencePut(...args);
    if (version !== NEEDS_KV) return version;
    // Stored and put in one transaction: no reader sees the presence name a KV that is not there yet.
    const multi = this.redis.multi().hset(keys[4], tag, kvJson);
    (multi as unknown as PresenceScripts).presencePut(...args);
    const [, again] = (await execAll(multi)) as [number, number];
    return again;
  }

  /**
   * The KV JSON held apart for each user under the tag asked for, in order: null where it is no longer
   * held (a newer KV replaced it, or the user is gone).
   */
  async kvJsons(wanted: readonly (readonly [Snowflake, string])[]): Promise<(string | null)[]> {
    if (wanted.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const [userId, tag] of wanted) pipeline.hget(this.kvApartKey(userId), tag);
    return (await execAll(pipeline)) as (string | null)[];
  }

  /** One user's shared presence as stored now, null when nobody monitors them. */
  async read(userId: Snowflake): Promise<PublishedPresence | null> {
    const reply = await this.redis.hmget(this.presenceKey(userId), ...PRESENCE_FIELDS);
    return publishedOf(userId, reply);
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

  /**
   * Gives `node` up (a clean shutdown), if `instance` holds it: at once, or with `holdMs` kept for the
   * process that restarts it, which may claim it at once while every other node still takes it for
   * alive, so its users are not handed over meanwhile.
   */
  async release(node: number, instance: string, holdMs = 0): Promise<void> {
    await this.redis.presenceRelease(`${this.alivePrefix()}${node}`, instance, String(holdMs));
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
      for (const id of ids) pipeline.hmget(this.presenceKey(id), ...PRESENCE_FIELDS);
      const replies = await execAll(pipeline);
      for (const [index, reply] of replies.entries()) {
        // Removed between the scan and the read: its removal was published, or will be listed next time.
        const published = publishedOf(ids[index] as Snowflake, reply as (string | null)[]);
        if (published) yield published;
      }
    }
  }

  private keys(node: number, userId: Snowflake): [string, string, string, string, string] {
    return [
      this.presenceKey(userId),
      `${this.prefix}presence-nodes:{${userId}}`,
      this.nodeUsersKey(node),
      this.monitoredKey(),
      this.kvApartKey(userId),
    ];
  }

  /** The user's KV JSON held apart, by tag: one field, but for a moment while a newer one replaces it. */
  private kvApartKey(userId: Snowflake): string {
    return `${this.prefix}presence-kv:{${userId}}`;
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
