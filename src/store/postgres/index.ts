import { Pool, TypeOverrides, types } from 'pg';
import { REDACTED, redactUrl } from '../../redact-url.js';
import type { Store } from '../ports.js';
import type { WaitingListsOptions } from '../waiting-lists.js';
import { PostgresAccountStore } from './accounts.js';
import { PostgresApiKeyStore } from './api-keys.js';
import { PostgresGatewayStateStore } from './gateway-state.js';
import { PostgresHistoryStore } from './history.js';
import { PostgresKvStore } from './kv.js';
import { migrate } from './migrations.js';
import { PostgresPrivacyStore } from './privacy.js';
import { PostgresProfileStore } from './profiles.js';
import { POSTGRES_TIMEOUTS, type PostgresTimeouts } from './queries.js';
import { PostgresReadTokenStore } from './read-tokens.js';
import { PostgresRetentionStore } from './retention.js';
import { PostgresWebhookStore } from './webhooks.js';

/** Connections one process keeps to the server. */
export const POSTGRES_POOL_SIZE = 10;

// Every BIGINT the store reads (epoch milliseconds, counts) is far below 2^53.
const TYPES = new TypeOverrides();
TYPES.setTypeParser(types.builtins.INT8, Number);

export interface PostgresStoreOptions {
  /** An idle connection failed (the server restarted, the network dropped); the pool replaces it. */
  onError?(error: Error): void;
  history?: WaitingListsOptions;
  /** POSTGRES_TIMEOUTS unless a test shortens them. */
  timeouts?: Partial<PostgresTimeouts>;
}

/**
 * Opens a pool on the server and brings the schema up to date (one node at a time, see migrations.ts).
 * Fails, with the URL's password masked, when the server cannot be reached or its schema is newer.
 *
 * Durability: a write is acknowledged once its transaction has committed, which with PostgreSQL's default
 * `synchronous_commit = on` means flushed to the server's WAL.
 *
 * Nothing waits on the server for good: for a connection, `connectMs`; for an answer, the statement's limit
 * (which the server enforces itself, `statement_timeout`) and a margin, past which a server that holds the
 * connection and answers nothing is taken for hung and the connection dropped (see POSTGRES_TIMEOUTS).
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresStore> {
  const timeouts = { ...POSTGRES_TIMEOUTS, ...options.timeouts };
  const connection = {
    connectionString: url,
    types: TYPES,
    connectionTimeoutMillis: timeouts.connectMs,
    keepAlive: true,
    application_name: 'presently',
  };
  // Migrating has no time limit: a node waits its turn while another migrates, however long that takes.
  const migrating = new Pool({ ...connection, max: 1 });
  migrating.on('error', () => {});
  try {
    await migrate(migrating);
  } catch (error) {
    throw redactedError(error, url, `could not open the PostgreSQL store at ${redactUrl(url)}: `);
  } finally {
    await migrating.end();
  }
  const pool = new Pool({
    ...connection,
    max: POSTGRES_POOL_SIZE,
    statement_timeout: timeouts.statementMs,
    query_timeout: timeouts.statementMs + timeouts.answerMarginMs,
  });
  // Unhandled, an idle connection's error would end the process.
  pool.on('error', (error) => options.onError?.(redactedError(error, url)));
  return new PostgresStore(pool, timeouts, options.history);
}

export class PostgresStore implements Store {
  readonly profiles: PostgresProfileStore;
  readonly kv: PostgresKvStore;
  readonly apiKeys: PostgresApiKeyStore;
  readonly history: PostgresHistoryStore;
  readonly webhooks: PostgresWebhookStore;
  readonly privacy: PostgresPrivacyStore;
  readonly readTokens: PostgresReadTokenStore;
  readonly accounts: PostgresAccountStore;
  readonly retention: PostgresRetentionStore;
  readonly gatewayState: PostgresGatewayStateStore;
  private closed = false;

  constructor(
    readonly pool: Pool,
    timeouts: PostgresTimeouts = POSTGRES_TIMEOUTS,
    history?: WaitingListsOptions,
  ) {
    this.profiles = new PostgresProfileStore(pool);
    this.kv = new PostgresKvStore(pool);
    this.apiKeys = new PostgresApiKeyStore(pool);
    this.history = new PostgresHistoryStore(pool, timeouts, history);
    this.webhooks = new PostgresWebhookStore(pool);
    this.privacy = new PostgresPrivacyStore(pool);
    this.readTokens = new PostgresReadTokenStore(pool);
    this.accounts = new PostgresAccountStore(pool, timeouts);
    this.retention = new PostgresRetentionStore(pool);
    this.gatewayState = new PostgresGatewayStateStore(pool, timeouts);
  }

  async ping(): Promise<boolean> {
    if (this.closed) return false;
    try {
      await this.pool.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.history.trimWaitingLists();
    } finally {
      await this.pool.end();
    }
  }
}

/** The error with the URL's password taken out of its message, wherever the driver may have put it. */
function redactedError(error: unknown, url: string, prefix = ''): Error {
  const password = URL.canParse(url) ? decodeURIComponent(new URL(url).password) : '';
  const message = error instanceof Error ? error.message : String(error);
  const redacted = new Error(prefix + (password === '' ? message : message.replaceAll(password, REDACTED)));
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') Object.assign(redacted, { code });
  return redacted;
}
