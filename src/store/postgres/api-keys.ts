import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { ApiKeyStore } from '../ports.js';
import { query } from './queries.js';

const REPLACE = {
  name: 'keys.replace',
  text: `INSERT INTO api_keys (user_id, key_hash, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at`,
};
const ADD_PENDING = {
  name: 'keys.add-pending',
  text: `INSERT INTO api_keys_pending (user_id, key_hash, created_at, expires_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at,
           expires_at = excluded.expires_at`,
};
/** The pending key leaves its table and becomes the user's live key in one statement, or nothing happens. */
const ACTIVATE = {
  name: 'keys.activate',
  text: `WITH pending AS (
           DELETE FROM api_keys_pending WHERE user_id = $1 AND key_hash = $2 AND expires_at > $3
           RETURNING user_id, key_hash
         )
         INSERT INTO api_keys (user_id, key_hash, created_at) SELECT user_id, key_hash, $3 FROM pending
         ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at`,
};
const DISCARD = {
  name: 'keys.discard-pending',
  text: 'DELETE FROM api_keys_pending WHERE user_id = $1 AND key_hash = $2',
};
const REVOKE = {
  name: 'keys.revoke',
  text: `WITH pending AS (DELETE FROM api_keys_pending WHERE key_hash = $1 RETURNING 1),
           live AS (DELETE FROM api_keys WHERE key_hash = $1 RETURNING 1)
         SELECT (SELECT count(*) FROM pending) + (SELECT count(*) FROM live) AS revoked`,
};
const FIND = {
  name: 'keys.find',
  text: `SELECT user_id, key_hash FROM api_keys WHERE key_hash = $1
         UNION ALL SELECT user_id, key_hash FROM api_keys_pending WHERE key_hash = $1 AND expires_at > $2`,
};

/** Keys by their SHA-256 hash only: the key itself never reaches the server. */
export class PostgresApiKeyStore implements ApiKeyStore {
  constructor(private readonly pool: Pool) {}

  async replaceKey(userId: Snowflake, hash: Buffer, createdAt: number): Promise<void> {
    await query(this.pool, { ...REPLACE, values: [userId, hash, createdAt] });
  }

  async addPendingKey(userId: Snowflake, hash: Buffer, createdAt: number, expiresAt: number): Promise<void> {
    await query(this.pool, { ...ADD_PENDING, values: [userId, hash, createdAt, expiresAt] });
  }

  async activateKey(userId: Snowflake, hash: Buffer, now: number): Promise<boolean> {
    return (await query(this.pool, { ...ACTIVATE, values: [userId, hash, now] })).rowCount === 1;
  }

  async discardPendingKey(userId: Snowflake, hash: Buffer): Promise<void> {
    await query(this.pool, { ...DISCARD, values: [userId, hash] });
  }

  async revokeKey(hash: Buffer): Promise<boolean> {
    const { rows } = await query<{ revoked: string }>(this.pool, { ...REVOKE, values: [hash] });
    return Number(rows[0]?.revoked ?? 0) > 0;
  }

  async findKey(hash: Buffer, now = Date.now()): Promise<{ userId: Snowflake; hash: Buffer } | undefined> {
    const { rows } = await query<{ user_id: string; key_hash: Buffer }>(this.pool, {
      ...FIND,
      values: [hash, now],
    });
    const row = rows[0];
    return row ? { userId: row.user_id, hash: row.key_hash } : undefined;
  }
}
