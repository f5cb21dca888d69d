import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { PrivacyPatch } from '../../presence/privacy.js';
import type { PrivacyStore } from '../ports.js';
import { namedSettings } from '../privacy-patch.js';
import { query } from './queries.js';

const SELECT = {
  name: 'privacy.select',
  text: 'SELECT settings FROM privacy_settings WHERE user_id = $1',
};
const SELECT_ALL = { name: 'privacy.select-all', text: 'SELECT user_id, settings FROM privacy_settings' };
// One statement: patches of one user on several nodes at once each merge into what the other left.
const PATCH = {
  name: 'privacy.patch',
  text: `INSERT INTO privacy_settings AS p (user_id, settings) VALUES ($1, $2::jsonb)
         ON CONFLICT (user_id) DO UPDATE SET settings = p.settings || excluded.settings
         RETURNING settings`,
};
const DELETE = { name: 'privacy.delete', text: 'DELETE FROM privacy_settings WHERE user_id = $1' };

/** Each user's settings as one jsonb object of the fields they set (the driver parses it). */
export class PostgresPrivacyStore implements PrivacyStore {
  constructor(private readonly pool: Pool) {}

  async getPrivacy(userId: Snowflake): Promise<PrivacyPatch | undefined> {
    const { rows } = await query<{ settings: PrivacyPatch }>(this.pool, { ...SELECT, values: [userId] });
    return rows[0]?.settings;
  }

  async allPrivacy(): Promise<Map<Snowflake, PrivacyPatch>> {
    const { rows } = await query<{ user_id: string; settings: PrivacyPatch }>(this.pool, SELECT_ALL);
    return new Map(rows.map((row) => [row.user_id, row.settings]));
  }

  async patchPrivacy(userId: Snowflake, patch: PrivacyPatch): Promise<PrivacyPatch> {
    const named = namedSettings(patch);
    // Nothing named writes nothing: a user who never set anything still has no row.
    if (named.length === 0) return (await this.getPrivacy(userId)) ?? {};
    const { rows } = await query<{ settings: PrivacyPatch }>(this.pool, {
      ...PATCH,
      values: [userId, JSON.stringify(Object.fromEntries(named))],
    });
    return rows[0]?.settings as PrivacyPatch;
  }

  async deletePrivacy(userId: Snowflake): Promise<void> {
    await query(this.pool, { ...DELETE, values: [userId] });
  }
}
