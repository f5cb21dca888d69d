import type { Database, Statement } from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { PrivacyPatch } from '../../presence/privacy.js';
import type { PrivacyStore } from '../ports.js';
import { namedSettings } from '../privacy-patch.js';

/** Each user's settings as one JSON object of the fields they set. */
export class SqlitePrivacyStore implements PrivacyStore {
  private readonly select: Statement<[string], string>;
  private readonly selectAll: Statement<[], { user_id: string; settings: string }>;
  private readonly upsert: Statement<[string, string]>;
  private readonly remove: Statement<[string]>;
  private readonly merge: (userId: Snowflake, named: [string, unknown][]) => PrivacyPatch;

  constructor(db: Database) {
    this.select = db.prepare('SELECT settings FROM privacy_settings WHERE user_id = ?').pluck() as Statement<
      [string],
      string
    >;
    this.selectAll = db.prepare('SELECT user_id, settings FROM privacy_settings');
    this.upsert = db.prepare(
      `INSERT INTO privacy_settings (user_id, settings) VALUES (?, ?)
       ON CONFLICT (user_id) DO UPDATE SET settings = excluded.settings`,
    );
    this.remove = db.prepare('DELETE FROM privacy_settings WHERE user_id = ?');
    // Read and written in one transaction, which takes the file's write lock first (connection.ts): a
    // patch by another connection waits, and neither loses the other's fields. SQLite's json_patch is no
    // help, since it takes a null for a removal and `paused_until: null` is a value.
    this.merge = db.transaction((userId: Snowflake, named: [string, unknown][]) => {
      const merged = { ...this.stored(userId), ...Object.fromEntries(named) } as PrivacyPatch;
      this.upsert.run(userId, JSON.stringify(merged));
      return merged;
    });
  }

  async getPrivacy(userId: Snowflake): Promise<PrivacyPatch | undefined> {
    return this.stored(userId);
  }

  async allPrivacy(): Promise<Map<Snowflake, PrivacyPatch>> {
    return new Map(
      this.selectAll.all().map((row) => [row.user_id, JSON.parse(row.settings) as PrivacyPatch]),
    );
  }

  async patchPrivacy(userId: Snowflake, patch: PrivacyPatch): Promise<PrivacyPatch> {
    const named = namedSettings(patch);
    // Nothing named writes nothing: a user who never set anything still has no entry.
    if (named.length === 0) return this.stored(userId) ?? {};
    return this.merge(userId, named);
  }

  async deletePrivacy(userId: Snowflake): Promise<void> {
    this.remove.run(userId);
  }

  private stored(userId: Snowflake): PrivacyPatch | undefined {
    const settings = this.select.get(userId);
    return settings === undefined ? undefined : (JSON.parse(settings) as PrivacyPatch);
  }
}
