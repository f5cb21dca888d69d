import type { Snowflake } from '../presence/model.js';
import type { KvDelta } from '../presence/registry/kv-delta.js';
import type { PublishedPresence } from '../presence/registry/replica.js';

/** Every message the bus carries, by topic. */
export interface BusMessages {
  /**
   * An accepted write that changed a user's KV, as the change it made: `revision` orders writes, so a late
   * message never wins, and one that does not follow the revision held asks for the KV to be read again.
   * `whole`: the sets are the entire KV at `revision` (an erasure leaves none), to be taken whatever
   * revision is held before it.
   */
  'kv.changed': { userId: Snowflake; revision: number; whole?: boolean } & KvDelta;
  /** Scale-out: a user's shared presence, published by the ingest node that owns the user. */
  'presence.changed': PublishedPresence;
  /** Scale-out: the owning node no longer sees the user; `node` is to publish its view of them. */
  'presence.handover': { userId: Snowflake; node: number };
  /** `?forget confirm` erased the user's history at `at`: every recorder drops what it holds of them up to then. */
  'history.forgotten': { userId: Snowflake; at: number };
  /** The user's webhooks were added, removed or disabled: every node reads them again. */
  'webhooks.changed': { userId: Snowflake };
  /** The user's privacy settings changed: every node reads them again. */
  'privacy.changed': { userId: Snowflake };
  /**
   * A read token of the user was removed (`tokenId`), or all of them were (null: the user erased
   * everything): every node ends the event streams opened with it.
   */
  'read-tokens.revoked': { userId: Snowflake; tokenId: string | null };
}

export type Topic = keyof BusMessages;
export type BusHandler<T extends Topic> = (message: BusMessages[T]) => void;

/**
 * Events between the parts of the service: in one process (local) or across nodes (Redis). Publishing
 * resolves once every subscriber of this process has been handed the message.
 */
export interface Bus {
  publish<T extends Topic>(topic: T, message: BusMessages[T]): Promise<void>;
  subscribe<T extends Topic>(topic: T, handler: BusHandler<T>): () => void;
  close(): Promise<void>;
}
