import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { ReadTokenListing, ReadTokenStore, StoredReadToken } from '../ports.js';
import { query, transaction } from './queries.js';

/** Adds of one user take turns on a lock of their own (the one-key space, apart from ADVISORY_LOCKS). */
const LOCK_USER = {
  name: 'read-tokens.lock-user',
  text: "SELECT pg_advisory_xact_lock(hashtext('read-tokens:' || $1))",
};
const COUNT = {
  name: 'read-tokens.count',
  text: 'SELECT count(*)::integer AS count FROM read_tokens WHERE user_id = $1',
};
const INSERT = {
  name: 'read-tokens.insert',
  text: 'INSERT INTO read_tokens (id, user_id, token_hash, label, created_at) VALUES ($1, $2, $3, $4, $5)',
};
const BY_USER = {
  name: 'read-tokens.by-user',
  text: 'SELECT id, label, created_at FROM read_tokens WHERE user_id = $1 ORDER BY created_at, id',
};
const REMOVE = {
  name: 'read-tokens.remove',
  text: 'DELETE FROM read_tokens WHERE user_id = $1 AND id = $2',
};
const BY_HASH = {
  name: 'read-tokens.by-hash',
  text: 'SELECT user_id, id, token_hash FROM read_tokens WHERE token_hash = $1',
};

export class PostgresReadTokenStore implements ReadTokenStore {
  constructor(private readonly pool: Pool) {}

  async addReadToken(token: StoredReadToken, maxPerUser: number): Promise<boolean> {
    return transaction(this.pool, async (client) => {
      await client.query({ ...LOCK_USER, values: [token.userId] });
      const { rows } = await client.query<{ count: number }>({ ...COUNT, values: [token.userId] });
      if ((rows[0]?.count ?? 0) >= maxPerUser) return false;
      const { id, userId, hash, label, createdAt } = token;
      await client.query({ ...INSERT, values: [id, userId, hash, label, createdAt] });
      return true;
    });
  }

  async readTokensOf(userId: Snowflake): Promise<ReadTokenListing[]> {
    const { rows } = await query<{ id: string; label: string | null; created_at: number }>(this.pool, {
      ...BY_USER,
      values: [userId],
    });
    return rows.map((row) => ({ id: row.id, label: row.label, createdAt: row.created_at }));
  }

  async removeReadToken(userId: Snowflake, id: string): Promise<boolean> {
    return ((await query(this.pool, { ...REMOVE, values: [userId, id] })).rowCount ?? 0) > 0;
  }

  async findReadToken(hash: Buffer): Promise<{ userId: Snowflake; id: string; hash: Buffer } | undefined> {
    const { rows } = await query<{ user_id: string; id: string; token_hash: Buffer }>(this.pool, {
      ...BY_HASH,
      values: [hash],
    });
    const row = rows[0];
    return row ? { userId: row.user_id, id: row.id, hash: row.token_hash } : undefined;
  }
}
