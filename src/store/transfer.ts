import type { StatusEntry } from '../model/history.js';
import type { StoredWebhook } from '../model/webhook.js';
import type { Snowflake } from '../presence/model.js';
import type { PrivacyPatch } from '../presence/privacy.js';
import type { StoredProfile } from './ports.js';
import type { QueuedEvent } from './webhook-queue.js';

/**
 * One user's durable data, read whole from a store to be copied into another (`npm run migrate-store`):
 * what the store keeps, as it keeps it, not what its reads make of it (revisions, play counts and stats as
 * stored, track entries as their JSON text).
 */
export interface UserData {
  userId: Snowflake;
  /** Keys and values, and the revision; null when the user never wrote KV. */
  kv: { entries: [string, string][]; revision: number } | null;
  /** The live API key's hash; `createdAt` is null from a store that does not keep it (Redis). */
  apiKey: { hash: Buffer; createdAt: number | null } | null;
  profile: StoredProfile | null;
  /** Oldest first: the newest HISTORY_LIMIT at most, what readers see. */
  status: StatusEntry[];
  /** Track entries as their JSON text, oldest first: the newest HISTORY_LIMIT at most. */
  tracks: string[];
  plays: StoredPlay[];
  stats: { lastSeen: number | null; playsDay: string | null; plays: number } | null;
  /** When the user last erased their history. */
  forgottenAt: number | null;
  /**
   * The user's webhooks, oldest first, each with its recent deliveries' records (JSON text, oldest first)
   * and the events waiting for delivery in a store that queues them itself (SQLite), in order.
   */
  webhooks: { webhook: StoredWebhook; deliveries: string[]; waiting: QueuedEvent[] }[];
  /** The privacy settings the user set; null when none. */
  privacy: PrivacyPatch | null;
  /** The user's read tokens, oldest first: their hashes, as the store keeps them. */
  readTokens: { id: string; hash: Buffer; label: string | null; createdAt: number }[];
}

export function emptyUser(userId: Snowflake): UserData {
  return {
    userId,
    kv: null,
    apiKey: null,
    profile: null,
    status: [],
    tracks: [],
    plays: [],
    stats: null,
    forgottenAt: null,
    webhooks: [],
    privacy: null,
    readTokens: [],
  };
}

/**
 * A counted track: its play key, plays, when last played, its metadata as JSON (without `ts`), and its
 * plays of each recent UTC day (see PLAY_DAYS_KEPT).
 */
export interface StoredPlay {
  key: string;
  count: number;
  lastPlayed: number;
  track: string;
  days: Record<string, number>;
}

/**
 * A store's users, a batch at a time. Not the ingest nodes' saved gateway state: it is no user's data, and
 * a node that finds none starts new sessions.
 */
export type StoreDump = AsyncIterable<UserData[]>;

/** What a copy wrote. */
export interface TransferCounts {
  users: number;
  /** Users with a KV (keys, or a revision), and their keys. */
  kvUsers: number;
  kvKeys: number;
  apiKeys: number;
  profiles: number;
  statusEntries: number;
  trackEntries: number;
  playCounts: number;
  stats: number;
  forgetMarkers: number;
  webhooks: number;
  webhookDeliveries: number;
  webhookEvents: number;
  /** Users with privacy settings. */
  privacySettings: number;
  readTokens: number;
  /** Users who erased their history in the target after an earlier copy: their history there is kept. */
  erasedSince: number;
}

export function noCounts(): TransferCounts {
  return {
    users: 0,
    kvUsers: 0,
    kvKeys: 0,
    apiKeys: 0,
    profiles: 0,
    statusEntries: 0,
    trackEntries: 0,
    playCounts: 0,
    stats: 0,
    forgetMarkers: 0,
    webhooks: 0,
    webhookDeliveries: 0,
    webhookEvents: 0,
    privacySettings: 0,
    readTokens: 0,
    erasedSince: 0,
  };
}

export function addCounts(total: TransferCounts, more: TransferCounts): void {
  for (const name of Object.keys(total) as (keyof TransferCounts)[]) total[name] += more[name];
}
