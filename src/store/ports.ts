import type { StatusEntry, StoredStats, TopTrack, TrackEntry } from '../model/history.js';
import type { DeliveryRecord, StoredWebhook } from '../model/webhook.js';
import type { KvChange, KvLimits, KvState, Profile, Snowflake } from '../presence/model.js';
import type { PrivacyPatch } from '../presence/privacy.js';

/** A profile as the store keeps it: what `GET /users/:id` said, and when. */
export interface StoredProfile {
  profile: Profile;
  fetchedAt: number;
}

export interface ProfileStore {
  /**
   * The stored profiles of these users in one round trip (those with none are left out): a member
   * listing brings users by the thousand, and a look-up each cost more than the rest of their start-up.
   */
  getProfiles(userIds: readonly Snowflake[]): Promise<Map<Snowflake, StoredProfile>>;
  /** Stores several at once: profiles arrive one by one, and are written a second's worth at a time. */
  putProfiles(profiles: ReadonlyMap<Snowflake, StoredProfile>): Promise<void>;
}

/** A limit refused the write; nothing was written. */
export interface KvLimitRefusal {
  refused: 'keys' | 'bytes';
  /** How many keys, or bytes, the write would have left. */
  wouldHave: number;
}

/**
 * An accepted write: the revision it left, and whether it changed anything (a write of the values stored
 * already, or of deletes of absent keys, leaves the revision as it was). The KV is not read back: whoever
 * holds it applies the change.
 */
export interface KvWritten {
  revision: number;
  changed: boolean;
}

export interface KvStore {
  getKv(userId: Snowflake): Promise<KvState>;
  /**
   * The KV of several users in one round trip, as `getKv` would give each; users who never wrote KV (no
   * keys and revision 0) are left out. What start-up reads for each member listing's users.
   */
  getKvs(userIds: readonly Snowflake[]): Promise<Map<Snowflake, KvState>>;
  /**
   * Applies a change atomically: all of it, or nothing when the result would hold more than `maxKeys`
   * keys, or more than `maxBytes` (UTF-8 bytes of keys and values) and more than before: a user already
   * past it keeps their data and may shrink it. Counted in the size of the change, not of the KV. A key
   * listed in both `set` and `delete` is set; one deleted twice counts once. Resolves once the store has
   * acknowledged the write; how much survives a crash is the adapter's (see its index.ts).
   */
  writeKv(userId: Snowflake, change: KvChange, limits: KvLimits): Promise<KvWritten | KvLimitRefusal>;
}

export interface ApiKeyStore {
  /** Makes `hash` the user's only key: the previous one stops working in the same write. */
  replaceKey(userId: Snowflake, hash: Buffer, createdAt: number): Promise<void>;
  /**
   * Keeps `hash` as the user's pending key until `expiresAt`: it works beside their live key, which stays
   * as it is, until it is activated, discarded or expires. It replaces a pending key the user had.
   */
  addPendingKey(userId: Snowflake, hash: Buffer, createdAt: number, expiresAt: number): Promise<void>;
  /**
   * Makes the user's pending key `hash` their only key, the live one stopping in the same write; false
   * when it is pending no more (expired by `now`, revoked, or replaced by another).
   */
  activateKey(userId: Snowflake, hash: Buffer, now: number): Promise<boolean>;
  /** Forgets the user's pending key `hash`, if it still is. */
  discardPendingKey(userId: Snowflake, hash: Buffer): Promise<void>;
  /** Revokes the key with this hash, live or pending; false when neither has it. */
  revokeKey(hash: Buffer): Promise<boolean>;
  /**
   * Revokes the user's keys, live and pending; how many there were (0 or more). A pending key past its
   * expiry goes too, uncounted: it worked no more.
   */
  revokeKeysOf(userId: Snowflake): Promise<number>;
  /** The owner of the key with this hash, if it is live, or pending and not expired at `now`. */
  findKey(hash: Buffer, now?: number): Promise<{ userId: Snowflake; hash: Buffer } | undefined>;
}

/** One user's share of a history batch: what the rules decided to write. */
export interface HistoryWrite {
  userId: Snowflake;
  status: StatusEntry | null;
  track: TrackEntry | null;
  countsPlay: boolean;
  lastSeen: number | null;
}

/**
 * How long a store on a server remembers the id of a history batch it wrote: a batch is tried again within
 * it, however long an outage lasts short of that.
 */
export const HISTORY_BATCH_IDS_KEPT_MS = 86_400_000;

export interface LatestHistory {
  status: StatusEntry | null;
  track: TrackEntry | null;
}

export interface ForgetResult {
  statusEntries: number;
  trackEntries: number;
  playCounts: number;
}

export interface HistoryStore {
  /**
   * Writes a batch in one transaction. Each list reads as its most recent `limit` entries from then on; an
   * adapter may delete the older ones later. Of a user whose history was erased, only what is stamped
   * after the erasure is written (see forgotten.ts), decided in the same transaction.
   *
   * `batchId` names the batch, the same each time it is tried again. A store on a server, whose commit a
   * crash can keep while its answer is lost, writes nothing for an id written in HISTORY_BATCH_IDS_KEPT_MS;
   * the embedded store, whose commit is known when the call returns, has no use for it.
   */
  appendHistory(
    batch: readonly HistoryWrite[],
    limits: { history: number; trackedTracks: number },
    batchId?: string,
  ): Promise<void>;
  /** Newest first. */
  history(userId: Snowflake, limit: number): Promise<{ status: StatusEntry[]; tracks: TrackEntry[] }>;
  /**
   * The newest status and track entry of each user, in one round trip: what the recorder needs of every
   * user it starts seeing, and a server's member listing brings thousands at once. Users with neither
   * are left out.
   */
  latest(userIds: readonly Snowflake[]): Promise<Map<Snowflake, LatestHistory>>;
  stats(userId: Snowflake): Promise<StoredStats>;
  /**
   * Tracks with at least `minPlays` plays: play_count desc, then last_played desc. With `since` (a UTC day
   * as `utcDay` writes it, at most PLAY_DAYS_KEPT days back), only the plays of that day and after count,
   * `play_count` among them.
   */
  topTracks(userId: Snowflake, minPlays: number, limit: number, since?: string): Promise<TopTrack[]>;
  /**
   * Each counted track's plays of its recent UTC days as kept (day → plays), by play key; tracks with
   * none are left out. What an export of the user's data carries beside their top tracks.
   */
  playDays(userId: Snowflake): Promise<Map<string, Record<string, number>>>;
  /**
   * Erases both lists, play counts and the stats counters; KV and keys stay. Remembers `at`, the moment of
   * the erasure, for good: a batch written later (by any node) drops the user's entries stamped at or
   * before it.
   */
  forget(userId: Snowflake, at: number): Promise<ForgetResult>;
}

export interface WebhookStore {
  /** Adds the webhook unless its owner has `maxPerUser` already: false then, and nothing is written. */
  addWebhook(webhook: StoredWebhook, maxPerUser: number): Promise<boolean>;
  /** The user's webhooks, oldest first, disabled ones included. */
  webhooksOf(userId: Snowflake): Promise<StoredWebhook[]>;
  webhook(id: string): Promise<StoredWebhook | undefined>;
  /** Every webhook still delivering: what a node needs to know at start to tell which changes to queue. */
  activeWebhooks(): Promise<StoredWebhook[]>;
  /** Removes it and its deliveries; false when there was none. */
  removeWebhook(id: string): Promise<boolean>;
  /** Stops it for good; true only for the call that disabled it, so its owner is told once. */
  disableWebhook(id: string, at: number, reason: string): Promise<boolean>;
  /**
   * Records an attempt at a delivery: a delivery not recorded yet goes first, an attempt at the newest
   * (a retry) replaces it; the newest `keep` are kept. Nothing is recorded for a webhook that is gone.
   */
  recordDelivery(webhookId: string, record: DeliveryRecord, keep: number): Promise<void>;
  /** The newest first. */
  deliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]>;
}

/**
 * Each user's privacy settings, as the fields they set (a user who set none has no entry). A patch
 * replaces the fields it names and keeps the others, atomically, whichever node writes at once.
 */
export interface PrivacyStore {
  /** The fields the user set; undefined when none. */
  getPrivacy(userId: Snowflake): Promise<PrivacyPatch | undefined>;
  /** Every user who set any, read when a node starts. */
  allPrivacy(): Promise<Map<Snowflake, PrivacyPatch>>;
  /** Merges `patch` into what is kept and answers what is kept then. */
  patchPrivacy(userId: Snowflake, patch: PrivacyPatch): Promise<PrivacyPatch>;
  /** Forgets every setting of the user. */
  deletePrivacy(userId: Snowflake): Promise<void>;
}

/** A read token as the store keeps it: its hash, never the token. */
export interface StoredReadToken {
  /** `rt_…`: names the token in lists and removals. */
  id: string;
  userId: Snowflake;
  hash: Buffer;
  label: string | null;
  createdAt: number;
}

/** A token as a list shows it: neither the token nor its hash. */
export type ReadTokenListing = Pick<StoredReadToken, 'id' | 'label' | 'createdAt'>;

/** Each user's read tokens (docs/privacy.md): what reads them while they are private, besides their key. */
export interface ReadTokenStore {
  /** Adds the token unless its owner has `maxPerUser` already: false then, and nothing is written. */
  addReadToken(token: StoredReadToken, maxPerUser: number): Promise<boolean>;
  /** The user's tokens, oldest first. */
  readTokensOf(userId: Snowflake): Promise<ReadTokenListing[]>;
  /** Removes the user's token of this id; false when they have none of it (another user's included). */
  removeReadToken(userId: Snowflake, id: string): Promise<boolean>;
  /** The token with this hash, if it still exists. */
  findReadToken(hash: Buffer): Promise<{ userId: Snowflake; id: string; hash: Buffer } | undefined>;
}

/** What an erasure of everything kept about a user took away. */
export interface Erasure extends ForgetResult {
  /** The names of the KV keys erased: nodes holding the KV drop them. */
  kvKeys: string[];
  /**
   * The KV's revision once erased (0 for a user who never wrote KV). An erasure is a KV write: the
   * revision moves on rather than back, so nodes holding the old KV take the erasure, and later writes, in
   * order.
   */
  kvRevision: number;
  /** Keys erased, live and pending. */
  apiKeys: number;
  /** Read tokens erased. */
  readTokens: number;
  /** The webhooks erased: events for them queued outside this store are to be dropped too. */
  webhookIds: string[];
  /** Whether the user had privacy settings, and a stored profile. */
  privacySettings: boolean;
  profile: boolean;
}

/** What is kept about a user beside their data: their key's age and their last erasure. */
export interface AccountDetails {
  /** The live key's creation time (null from a store that keeps none: Redis); null without a live key. */
  key: { createdAt: number | null } | null;
  /** When the user last erased their history (or everything); null if never. */
  historyErasedAt: number | null;
}

export interface AccountStore {
  /**
   * Erases everything kept about the user in one transaction: KV (only the revision counter stays, moved
   * on), keys live and pending, read tokens, webhooks with their deliveries and the events this store
   * queues for them, privacy settings, profile, and history as `HistoryStore.forget` erases it, remembering
   * `at` the same way so that no batch written later brings back what was seen before.
   */
  erase(userId: Snowflake, at: number): Promise<Erasure>;
  details(userId: Snowflake): Promise<AccountDetails>;
}

/** What one call of `RetentionStore.adoptUnseen` did. */
export interface Adoption {
  /** Users given a moment by this call. */
  adopted: number;
  /** This call ended a pass over every user with data: the next call begins another. */
  passEnded: boolean;
}

/**
 * When each user was last in a monitored guild, as far as any node saw: what the retention sweep
 * (src/account/retention.ts) goes over to erase what is kept of users gone for longer than retention.
 */
export interface RetentionStore {
  /**
   * Records each user's moment, in one round trip. A later moment already kept stays: nodes refresh and
   * report leaves in any order.
   */
  seen(moments: ReadonlyMap<Snowflake, number>): Promise<void>;
  /** Up to `limit` users whose moment is before `before`, the longest gone first. */
  due(before: number, limit: number): Promise<Snowflake[]>;
  /** Drops the moments of these users that are still before `before`: a user seen since keeps theirs. */
  forgetSeen(userIds: readonly Snowflake[], before: number): Promise<void>;
  /**
   * Gives the moment `at` to users who have data (KV, a key, read tokens, webhooks, privacy settings, a
   * profile, history or stats) and no moment: they left while no node could see it, or before moments
   * were kept. Each call looks at a bounded share of the data, from where the previous call stopped.
   */
  adoptUnseen(at: number, limit: number): Promise<Adoption>;
}

/** One gateway shard's session, saved to resume it after a restart (what @discordjs/ws resumes from). */
export interface SavedGatewaySession {
  shardId: number;
  shardCount: number;
  sessionId: string;
  resumeUrl: string;
  /** The last dispatch taken in before `presences` was made: a resume replays what came after it. */
  sequence: number;
}

/** What an ingest node saves to resume its shards after a restart; each save replaces the one before. */
export interface SavedGatewayState {
  /** When it was saved (ms since the epoch). */
  savedAt: number;
  sessions: SavedGatewaySession[];
  /** The presences the node held, compressed and sealed; opaque to the store. */
  presences: Buffer;
}

/** Per ingest node (named by a string such as "0" or "0-3"), its saved gateway state. */
export interface GatewayStateStore {
  /**
   * Replaces what `node` saved. Once it resolves, the state survives a crash. No state, of any node, is
   * kept more than `keepForMs` after it was saved: it holds presences, and one left by a node that is
   * gone for good (or renamed) is of no use.
   */
  save(node: string, state: SavedGatewayState, keepForMs: number): Promise<void>;
  /** What `node` saved last, or null. */
  load(node: string): Promise<SavedGatewayState | null>;
  /** Drops what `node` saved. */
  clear(node: string): Promise<void>;
}

/**
 * The store port. Each adapter (embedded SQLite, Redis) implements every part, and one contract
 * test suite runs against each.
 */
export interface Store {
  readonly profiles: ProfileStore;
  readonly kv: KvStore;
  readonly apiKeys: ApiKeyStore;
  readonly history: HistoryStore;
  readonly webhooks: WebhookStore;
  readonly privacy: PrivacyStore;
  readonly readTokens: ReadTokenStore;
  readonly accounts: AccountStore;
  readonly retention: RetentionStore;
  /** Each ingest node's gateway sessions and presences, kept across its restarts; no user's data. */
  readonly gatewayState: GatewayStateStore;
  /** Whether the store answers now: readiness checks use it. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
