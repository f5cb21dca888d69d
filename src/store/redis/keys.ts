import type { Snowflake } from '../../presence/model.js';

/**
 * Every key the Redis store writes, in one place. Per-user keys carry the id as a hash tag (`{id}`), so a
 * script touching several keys of one user stays within one slot.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** The layout version of the data under this prefix, for migrations. */
  version(): string {
    return `${this.prefix}store-version`;
  }

  kv(userId: Snowflake): string {
    return `${this.prefix}kv:{${userId}}`;
  }

  kvRevision(userId: Snowflake): string {
    return `${this.prefix}kv-revision:{${userId}}`;
  }

  /** UTF-8 bytes of the user's keys and values together, kept beside the hash by every write. */
  kvBytes(userId: Snowflake): string {
    return `${this.prefix}kv-bytes:{${userId}}`;
  }

  keyOwner(hashHex: string): string {
    return `${this.prefix}api-key:${hashHex}`;
  }

  userKey(userId: Snowflake): string {
    return `${this.prefix}user-api-key:{${userId}}`;
  }

  /** The hash of the user's key being handed over; it and its owner entry expire together. */
  pendingKey(userId: Snowflake): string {
    return `${this.prefix}pending-api-key:{${userId}}`;
  }

  profile(userId: Snowflake): string {
    return `${this.prefix}profile:{${userId}}`;
  }

  /** When the user's history was last erased: kept for good, so a late batch cannot write it back. */
  historyForgotten(userId: Snowflake): string {
    return `${this.prefix}history-forgotten:{${userId}}`;
  }

  /** A webhook's fields (hash), by its id. */
  webhook(id: string): string {
    return `${this.prefix}webhook:{${id}}`;
  }

  /** A webhook's recent deliveries, newest first (list of JSON records). */
  webhookDeliveries(id: string): string {
    return `${this.prefix}webhook-deliveries:{${id}}`;
  }

  /** A user's webhook ids, by when they were added (sorted set). */
  userWebhooks(userId: Snowflake): string {
    return `${this.prefix}user-webhooks:{${userId}}`;
  }

  /** Users with at least one webhook (set): where a node's directory starts. */
  webhookUsers(): string {
    return `${this.prefix}webhook-users`;
  }

  /** A user's privacy settings (hash): each setting they set, its value as JSON text. */
  privacy(userId: Snowflake): string {
    return `${this.prefix}privacy:{${userId}}`;
  }

  /** Users with any privacy setting (set): what a node reads at start, without scanning the keys. */
  privacyUsers(): string {
    return `${this.prefix}privacy-users`;
  }

  /** Each user's last moment in a monitored guild (sorted set, the moment as the score): see retention.ts. */
  lastMonitored(): string {
    return `${this.prefix}last-monitored`;
  }

  /** A user's read tokens (hash): id → JSON of the token's hash (hex), label and creation time. */
  readTokens(userId: Snowflake): string {
    return `${this.prefix}read-tokens:{${userId}}`;
  }

  /** Whose token has this hash (hex): `<user id> <token id>`, written and removed with the user's entry. */
  readTokenOwner(hashHex: string): string {
    return `${this.prefix}read-token:${hashHex}`;
  }

  /** A history batch written lately (see HISTORY_BATCH_IDS_KEPT_MS): the same batch again writes nothing. */
  historyBatch(batchId: string): string {
    return `${this.prefix}history-batch:{${batchId}}`;
  }

  /** Set only within the MULTI of a batch being written, for its scripts: see history.ts. */
  historyBatchWriting(): string {
    return `${this.prefix}history-batch-writing`;
  }

  /**
   * What an ingest node saved to resume its shards (hash): `saved_at`, `sessions` (JSON text) and
   * `presences` (the compressed bytes). No user's key: retention and dumps pass it by.
   */
  gatewayState(node: string): string {
    return `${this.prefix}gateway-state:{${node}}`;
  }

  /** Each counted track's plays of its recent UTC days (hash): play key → JSON object, day → plays. */
  playDays(userId: Snowflake): string {
    return `${this.prefix}play-days:{${userId}}`;
  }

  /** Status history, track history, play ranking (sorted set), played tracks (hash) and stats of one user. */
  history(userId: Snowflake): [string, string, string, string, string] {
    const tag = `{${userId}}`;
    return [
      `${this.prefix}status-history:${tag}`,
      `${this.prefix}track-history:${tag}`,
      `${this.prefix}play-rank:${tag}`,
      `${this.prefix}played-tracks:${tag}`,
      `${this.prefix}stats:${tag}`,
    ];
  }
}
