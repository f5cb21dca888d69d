import { Pool, TypeOverrides, types } from 'pg';
import { REDACTED, redactUrl } from '../../redact-url.js';
import type { Store } from '../ports.js';
import type { WaitingListsOptions } from '../waiting-lists.js';
import { PostgresApiKeyStore } from './api-keys.js';
import { PostgresHistoryStore } from './history.js';
import { PostgresKvStore } from './kv.js';
import { migrate } from './migrations.js';
import { PostgresProfileStore } from './profiles.js';
import { PostgresWebhookStore } from './webhooks.js';

/** A request waits this long for a connection before it fails, rather than hang while the server is away. */
export const POSTGRES_CONNECT_TIMEOUT_MS = 2_000;
/** Connections one process keeps to the server. */
export const POSTGRES_POOL_SIZE = 10;

// Every BIGINT the store reads (epoch milliseconds, counts) is far below 2^53.
const TYPES = new TypeOverrides();
TYPES.setTypeParser(types.builtins.INT8, Number);

export interface PostgresStoreOptions {
  /** An idle connection failed (the server restarted, the network dropped); the pool replaces it. */
  onError?(error: Error): void;
  history?: WaitingListsOptions;
}

/**
 * Opens a pool on the server and brings the schema up to date (one node at a time, see migrations.ts).
 * Fails, with the URL's password masked, when the server cannot be reached or its schema is newer.
 *
 * Durability: a write is acknowledged once its transaction has committed, which with PostgreSQL's default
 * `synchronous_commit = on` means flushed to the server's WAL.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresStore> {
  const pool = new Pool({
    connectionString: url,
    types: TYPES,
    max: POSTGRES_POOL_SIZE,
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    application_name: 'presently',
  });
  // Unhandled, an idle connection's error would end the process.
  pool.on('error', (error) => options.onError?.(redactedError(error, url)));
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    throw redactedError(error, url, `could not open the PostgreSQL store at ${redactUrl(url)}: `);
  }
  return new PostgresStore(pool, options.history);
}

export class PostgresStore implements Store {
  readonly profiles: PostgresProfileStore;
  readonly kv: PostgresKvStore;
  readonly apiKeys: PostgresApiKeyStore;
  readonly history: PostgresHistoryStore;
  readonly webhooks: PostgresWebhookStore;
  private closed = false;

  constructor(
    readonly pool: Pool,
    history?: WaitingListsOptions,
  ) {
    this.profiles = new PostgresProfileStore(pool);
    this.kv = new PostgresKvStore(pool);
    this.apiKeys = new PostgresApiKeyStore(pool);
    this.history = new PostgresHistoryStore(pool, history);
    this.webhooks = new PostgresWebhookStore(pool);
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
