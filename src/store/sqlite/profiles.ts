import type { Database, Statement } from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { ProfileStore, StoredProfile } from '../ports.js';

interface ProfileRow {
  banner: string | null;
  accent_color: number | null;
  fetched_at: number;
}

/** What writes a file's profiles off the event loop (write-thread.ts). */
export interface ProfileWriter {
  /** False once it can write no more: the profiles are then written on the store's connection. */
  readonly available: boolean;
  putProfiles(profiles: ReadonlyMap<Snowflake, StoredProfile>): Promise<void>;
}

export class SqliteProfileStore implements ProfileStore {
  private readonly selectMany: Statement<[string], ProfileRow & { user_id: string }>;
  private readonly upsertAll: (profiles: ReadonlyMap<Snowflake, StoredProfile>) => void;

  /** `writer`: writes profiles in place of `db` (a file's write thread); null, they are written on `db`. */
  constructor(
    db: Database,
    private readonly writer: ProfileWriter | null = null,
  ) {
    // The users come as one JSON array: one statement for any number of them.
    this.selectMany = db.prepare(
      `SELECT user_id, banner, accent_color, fetched_at FROM profiles
       WHERE user_id IN (SELECT value FROM json_each(?))`,
    );
    const upsert = db.prepare<[string, string | null, number | null, number]>(
      `INSERT INTO profiles (user_id, banner, accent_color, fetched_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET banner = excluded.banner, accent_color = excluded.accent_color,
         fetched_at = excluded.fetched_at`,
    );
    // One transaction, so one sync to disk, for the lot.
    this.upsertAll = db.transaction((profiles: ReadonlyMap<Snowflake, StoredProfile>) => {
      for (const [userId, stored] of profiles) {
        upsert.run(userId, stored.profile.banner, stored.profile.accent_color, stored.fetchedAt);
      }
    });
  }

  async getProfiles(userIds: readonly Snowflake[]): Promise<Map<Snowflake, StoredProfile>> {
    const found = new Map<Snowflake, StoredProfile>();
    if (userIds.length === 0) return found;
    for (const row of this.selectMany.all(JSON.stringify(userIds))) found.set(row.user_id, storedOf(row));
    return found;
  }

  async putProfiles(profiles: ReadonlyMap<Snowflake, StoredProfile>): Promise<void> {
    if (this.writer?.available) {
      try {
        await this.writer.putProfiles(profiles);
        return;
      } catch (error) {
        // The writer died with these in hand: written here instead. Refused by the file: refused here too.
        if (this.writer.available) throw error;
      }
    }
    if (profiles.size > 0) this.upsertAll(profiles);
  }
}

function storedOf(row: ProfileRow): StoredProfile {
  return { profile: { banner: row.banner, accent_color: row.accent_color }, fetchedAt: row.fetched_at };
}
