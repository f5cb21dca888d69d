import type { Pool } from 'pg';
import type { Snowflake } from '../../presence/model.js';
import type { AccountDetails, AccountStore, Erasure } from '../ports.js';
import { forgetHistory } from './history.js';
import { type PostgresTimeouts, query, transaction } from './queries.js';

/** The KV's totals row, locked as a KV write locks it: a write waiting behind the erasure sees it whole. */
const LOCK_KV = {
  name: 'accounts.lock-kv',
  text: 'SELECT revision FROM kv_revisions WHERE user_id = $1 FOR UPDATE',
};
const REMOVE_KV = {
  name: 'accounts.remove-kv',
  text: 'DELETE FROM kv WHERE user_id = $1 RETURNING key',
};
/** The revision moves on with no keys left: an erasure is the KV's last write so far. */
const BUMP_KV = {
  name: 'accounts.bump-kv',
  text: `UPDATE kv_revisions SET revision = revision + 1, bytes = 0, keys = 0 WHERE user_id = $1
         RETURNING revision`,
};
const REMOVE_KEYS = {
  name: 'accounts.remove-keys',
  text: `WITH live AS (DELETE FROM api_keys WHERE user_id = $1 RETURNING 1),
           pending AS (DELETE FROM api_keys_pending WHERE user_id = $1 RETURNING 1),
           tokens AS (DELETE FROM read_tokens WHERE user_id = $1 RETURNING 1)
         SELECT (SELECT count(*) FROM live) + (SELECT count(*) FROM pending) AS keys,
           (SELECT count(*) FROM tokens) AS tokens`,
};
const REMOVE_WEBHOOKS = {
  name: 'accounts.remove-webhooks',
  text: `WITH gone AS (DELETE FROM webhooks WHERE user_id = $1 RETURNING id, created_at),
           deliveries AS (DELETE FROM webhook_deliveries WHERE webhook_id IN (SELECT id FROM gone)),
           queued AS (DELETE FROM webhook_queue WHERE webhook_id IN (SELECT id FROM gone)),
           heads AS (DELETE FROM webhook_heads WHERE webhook_id IN (SELECT id FROM gone))
         SELECT id FROM gone ORDER BY created_at, id`,
};
const REMOVE_REST = {
  name: 'accounts.remove-rest',
  text: `WITH privacy AS (DELETE FROM privacy_settings WHERE user_id = $1 RETURNING 1),
           profile AS (DELETE FROM profiles WHERE user_id = $1 RETURNING 1)
         SELECT (SELECT count(*) FROM privacy) AS privacy, (SELECT count(*) FROM profile) AS profile`,
};
const DETAILS = {
  name: 'accounts.details',
  text: `SELECT (SELECT created_at FROM api_keys WHERE user_id = $1) AS key_created_at,
           (SELECT forgotten_at FROM history_forgotten WHERE user_id = $1) AS forgotten_at`,
};

/**
 * Everything about one user, erased in one transaction. It takes the history lock alone, as `forget`
 * does, so it has the time limit of a history batch.
 */
export class PostgresAccountStore implements AccountStore {
  constructor(
    private readonly pool: Pool,
    private readonly timeouts: Pick<PostgresTimeouts, 'batchMs' | 'answerMarginMs'>,
  ) {}

  async erase(userId: Snowflake, at: number): Promise<Erasure> {
    return transaction(
      this.pool,
      async (client) => {
        const history = await forgetHistory(client, userId, at);
        const held = await client.query<{ revision: number }>({ ...LOCK_KV, values: [userId] });
        const keys = (await client.query<{ key: string }>({ ...REMOVE_KV, values: [userId] })).rows
          .map((row) => row.key)
          .sort();
        let kvRevision = held.rows[0]?.revision ?? 0;
        if (keys.length > 0) {
          const bumped = await client.query<{ revision: number }>({ ...BUMP_KV, values: [userId] });
          kvRevision = bumped.rows[0]?.revision ?? kvRevision;
        }
        const apiKeys = await client.query<{ keys: number; tokens: number }>({
          ...REMOVE_KEYS,
          values: [userId],
        });
        const webhooks = await client.query<{ id: string }>({ ...REMOVE_WEBHOOKS, values: [userId] });
        const rest = await client.query<{ privacy: number; profile: number }>({
          ...REMOVE_REST,
          values: [userId],
        });
        return {
          ...history,
          kvKeys: keys,
          kvRevision,
          apiKeys: apiKeys.rows[0]?.keys ?? 0,
          readTokens: apiKeys.rows[0]?.tokens ?? 0,
          webhookIds: webhooks.rows.map((row) => row.id),
          privacySettings: (rest.rows[0]?.privacy ?? 0) > 0,
          profile: (rest.rows[0]?.profile ?? 0) > 0,
        };
      },
      {
        timeout: { statementMs: this.timeouts.batchMs, answerMarginMs: this.timeouts.answerMarginMs },
      },
    );
  }

  async details(userId: Snowflake): Promise<AccountDetails> {
    const { rows } = await query<{ key_created_at: number | null; forgotten_at: number | null }>(this.pool, {
      ...DETAILS,
      values: [userId],
    });
    const row = rows[0];
    return {
      key: row?.key_created_at == null ? null : { createdAt: row.key_created_at },
      historyErasedAt: row?.forgotten_at ?? null,
    };
  }
}
