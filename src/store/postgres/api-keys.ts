import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { ApiKeyStore } from '../ports.js';
import { query } from './queries.js';

const REPLACE = {
  name: 'keys.replace',
  text: `INSERT INTO api_keys (user_id, key_hash, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at`,
};
const REVOKE = { name: 'keys.revoke', text: 'DELETE FROM api_keys WHERE key_hash = $1' };
const FIND = { name: 'keys.find', text: 'SELECT user_id, key_hash FROM api_keys WHERE key_hash = $1' };

/** Keys by their SHA-256 hash only: the key itself never reaches the server. */
export class PostgresApiKeyStore implements ApiKeyStore {
  constructor(private readonly pool: Pool) {}

  async replaceKey(userId: Snowflake, hash: Buffer, createdAt: number): Promise<void> {
    await query(this.pool, { ...REPLACE, values: [userId, hash, createdAt] });
  }

  async revokeKey(hash: Buffer): Promise<boolean> {
    return ((await query(this.pool, { ...REVOKE, values: [hash] })).rowCount ?? 0) > 0;
  }

  async findKey(hash: Buffer): Promise<{ userId: Snowflake; hash: Buffer } | undefined> {
    const { rows } = await query<{ user_id: string; key_hash: Buffer }>(this.pool, {
      ...FIND,
      values: [hash],
    });
    const row = rows[0];
    return row ? { userId: row.user_id, hash: row.key_hash } : undefined;
  }
}
