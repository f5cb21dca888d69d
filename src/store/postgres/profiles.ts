import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { ProfileStore, StoredProfile } from '../ports.js';
import { query } from './queries.js';

// The users come as arrays: one statement for any number of them.
const SELECT = {
  name: 'profiles.select',
  text: `SELECT user_id, banner, accent_color, fetched_at FROM profiles WHERE user_id = ANY ($1::text[])`,
};
const UPSERT = {
  name: 'profiles.upsert',
  text: `INSERT INTO profiles (user_id, banner, accent_color, fetched_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::bigint[])
         ON CONFLICT (user_id) DO UPDATE SET banner = excluded.banner, accent_color = excluded.accent_color,
           fetched_at = excluded.fetched_at`,
};

interface ProfileRow {
  user_id: string;
  banner: string | null;
  accent_color: number | null;
  fetched_at: number;
}

export class PostgresProfileStore implements ProfileStore {
  constructor(private readonly pool: Pool) {}

  async getProfiles(userIds: readonly Snowflake[]): Promise<Map<Snowflake, StoredProfile>> {
    const found = new Map<Snowflake, StoredProfile>();
    if (userIds.length === 0) return found;
    const { rows } = await query<ProfileRow>(this.pool, { ...SELECT, values: [userIds] });
    for (const row of rows) {
      found.set(row.user_id, {
        profile: { banner: row.banner, accent_color: row.accent_color },
        fetchedAt: row.fetched_at,
      });
    }
    return found;
  }

  /** One statement, so one commit, for the lot. */
  async putProfiles(profiles: ReadonlyMap<Snowflake, StoredProfile>): Promise<void> {
    if (profiles.size === 0) return;
    const stored = [...profiles.values()];
    await query(this.pool, {
      ...UPSERT,
      values: [
        [...profiles.keys()],
        stored.map((entry) => entry.profile.banner),
        stored.map((entry) => entry.profile.accent_color),
        stored.map((entry) => entry.fetchedAt),
      ],
    });
  }
}
