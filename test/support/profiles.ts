import type { Snowflake } from '../../src/presence/model.js';
import type { ProfileStore, StoredProfile } from '../../src/store/ports.js';

/** One user's stored profile, as the store reads them for many. */
export async function profileOf(
  store: { profiles: ProfileStore },
  userId: Snowflake,
): Promise<StoredProfile | undefined> {
  return (await store.profiles.getProfiles([userId])).get(userId);
}
