import type { Pool } from 'pg';
import type { GatewayStateStore, SavedGatewaySession, SavedGatewayState } from '../ports.js';
import { type PostgresTimeouts, query, type TransactionOptions, transaction } from './queries.js';

const SAVE = {
  name: 'gateway-state.save',
  text: `INSERT INTO gateway_state (node, saved_at, sessions, presences) VALUES ($1, $2, $3, $4)
         ON CONFLICT (node) DO UPDATE SET saved_at = excluded.saved_at, sessions = excluded.sessions,
           presences = excluded.presences`,
};
const LOAD = {
  name: 'gateway-state.load',
  text: 'SELECT saved_at, sessions, presences FROM gateway_state WHERE node = $1',
};
const CLEAR = { name: 'gateway-state.clear', text: 'DELETE FROM gateway_state WHERE node = $1' };
/** Rows another node is saving are left to it: two nodes expiring each other's rows never wait on each other. */
const EXPIRE = {
  name: 'gateway-state.expire',
  text: `DELETE FROM gateway_state WHERE node IN (
           SELECT node FROM gateway_state WHERE saved_at < $1 FOR UPDATE SKIP LOCKED)`,
};

interface GatewayStateRow {
  saved_at: number;
  sessions: string;
  presences: Buffer;
}

/**
 * A row per ingest node (table `gateway_state`): its shards' sessions as JSON text, its presences as
 * bytea. A save or a load carries tens of MB, so it has the time limit of a history batch.
 */
export class PostgresGatewayStateStore implements GatewayStateStore {
  private readonly bulkTimeout: TransactionOptions<unknown>['timeout'];

  constructor(
    private readonly pool: Pool,
    timeouts: Pick<PostgresTimeouts, 'batchMs' | 'answerMarginMs'>,
  ) {
    this.bulkTimeout = { statementMs: timeouts.batchMs, answerMarginMs: timeouts.answerMarginMs };
  }

  async save(node: string, state: SavedGatewayState, keepForMs: number): Promise<void> {
    const values = [node, state.savedAt, JSON.stringify(state.sessions), state.presences];
    await transaction(this.pool, (session) => session.query({ ...SAVE, values }), {
      timeout: this.bulkTimeout,
    });
    await query(this.pool, { ...EXPIRE, values: [Date.now() - keepForMs] });
  }

  async load(node: string): Promise<SavedGatewayState | null> {
    const { rows } = await transaction(
      this.pool,
      (session) => session.query<GatewayStateRow>({ ...LOAD, values: [node] }),
      { timeout: this.bulkTimeout },
    );
    const row = rows[0];
    if (row === undefined) return null;
    return {
      savedAt: row.saved_at,
      sessions: JSON.parse(row.sessions) as SavedGatewaySession[],
      presences: row.presences,
    };
  }

  async clear(node: string): Promise<void> {
    await query(this.pool, { ...CLEAR, values: [node] });
  }
}
