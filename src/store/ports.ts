import type { Profile, Snowflake } from '../presence/model.js';

/** A profile as the store keeps it: what `GET /users/:id` said, and when. */
export interface StoredProfile {
  profile: Profile;
  fetchedAt: number;
}

export interface ProfileStore {
  getProfile(userId: Snowflake): Promise<StoredProfile | undefined>;
  putProfile(userId: Snowflake, stored: StoredProfile): Promise<void>;
}

/**
 * The store port. Each adapter (embedded SQLite, Redis) implements every part, and one contract
 * test suite runs against each.
 */
export interface Store {
  readonly profiles: ProfileStore;
  /** Whether the store answers now: readiness checks use it. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
