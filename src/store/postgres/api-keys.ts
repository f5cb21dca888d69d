import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { ApiKeyStore } from '../ports.js';
import { query, transaction } from './queries.js';

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
const REVOKE_PENDING = {
  name: 'keys.revoke-pending',
  text: 'DELETE FROM api_keys_pending WHERE key_hash = $1',
};
const REVOKE = { name: 'keys.revoke', text: 'DELETE FROM api_keys WHERE key_hash = $1' };
/** Every pending key of the user goes; the count is of those not expired at $2, the ones that worked. */
const REVOKE_PENDING_OF = {
  name: 'keys.revoke-pending-of',
  text: `WITH gone AS (DELETE FROM api_keys_pending WHERE user_id = $1 RETURNING expires_at)
         SELECT (count(*) FILTER (WHERE expires_at > $2))::int AS working FROM gone`,
};
const REVOKE_OF = { name: 'keys.revoke-of', text: 'DELETE FROM api_keys WHERE user_id = $1' };
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

  /**
   * The pending key first, then the live one, each statement seeing what committed before it: an
   * activation of this key under way either finds it pending no more, or has made it live by the time
   * the second statement looks.
   */
  async revokeKey(hash: Buffer): Promise<boolean> {
    return transaction(this.pool, async (session) => {
      const pending = (await session.query({ ...REVOKE_PENDING, values: [hash] })).rowCount ?? 0;
      const live = (await session.query({ ...REVOKE, values: [hash] })).rowCount ?? 0;
      return pending + live > 0;
    });
  }

  /** The pending key first, then the live one, as revokeKey does and for the same reason. */
  async revokeKeysOf(userId: Snowflake): Promise<number> {
    const now = Date.now();
    return transaction(this.pool, async (session) => {
      const pending = await session.query<{ working: number }>({
        ...REVOKE_PENDING_OF,
        values: [userId, now],
      });
      const live = (await session.query({ ...REVOKE_OF, values: [userId] })).rowCount ?? 0;
      return (pending.rows[0]?.working ?? 0) + live;
    });
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
