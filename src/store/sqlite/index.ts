import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3, { type Database } from 'better-sqlite3';
import type { Store } from '../ports.js';
import { SqliteAccountStore } from './accounts.js';
import { SqliteApiKeyStore } from './api-keys.js';
import { setUpConnection } from './connection.js';
import { SqliteGatewayStateStore } from './gateway-state.js';
import { SqliteHistoryStore } from './history.js';
import { SqliteKvStore } from './kv.js';
import { migrate } from './migrations.js';
import { SqlitePrivacyStore } from './privacy.js';
import { SqliteProfileStore } from './profiles.js';
import { SqliteReadTokenStore } from './read-tokens.js';
import { SqliteRetentionStore } from './retention.js';
import { SqliteWebhookStore } from './webhooks.js';
import { SqliteWriteThread } from './write-thread.js';

/** Where the embedded store lives: a file, or memory for throwaway runs. */
export type SqliteLocation = { kind: 'sqlite'; path: string } | { kind: 'sqlite-memory' };

export interface SqliteStoreOptions {
  /** The file's write thread died: its writes go on the event loop's connection from then on. */
  onWriteThreadDown?: (error: Error) => void;
}

/** Opens (creating if needed) the embedded store and brings its schema up to date. */
export function openSqliteStore(location: SqliteLocation, options: SqliteStoreOptions = {}): SqliteStore {
  let db: Database;
  if (location.kind === 'sqlite-memory') {
    db = new BetterSqlite3(':memory:');
  } else {
    mkdirSync(dirname(location.path), { recursive: true });
    db = new BetterSqlite3(location.path);
  }
  setUpConnection(db, location.kind === 'sqlite');
  migrate(db);
  return new SqliteStore(db, location.kind === 'sqlite' ? location.path : null, options);
}

export class SqliteStore implements Store {
  readonly profiles: SqliteProfileStore;
  readonly kv: SqliteKvStore;
  readonly apiKeys: SqliteApiKeyStore;
  /**
   * A file's history batches, fetched profiles and saved gateway state are written by a thread of their
   * own; a database in memory has no file to share.
   */
  readonly history: SqliteHistoryStore | SqliteWriteThread;
  readonly webhooks: SqliteWebhookStore;
  readonly privacy: SqlitePrivacyStore;
  readonly readTokens: SqliteReadTokenStore;
  readonly accounts: SqliteAccountStore;
  readonly retention: SqliteRetentionStore;
  readonly gatewayState: SqliteGatewayStateStore;

  constructor(
    readonly db: Database,
    /** The file, for a connection of the write thread's own; null: everything is written on `db`. */
    path: string | null = null,
    options: SqliteStoreOptions = {},
  ) {
    const history = new SqliteHistoryStore(db);
    const thread = path === null ? null : new SqliteWriteThread(path, history, options.onWriteThreadDown);
    this.history = thread ?? history;
    this.profiles = new SqliteProfileStore(db, thread);
    this.kv = new SqliteKvStore(db);
    this.apiKeys = new SqliteApiKeyStore(db);
    this.webhooks = new SqliteWebhookStore(db);
    this.privacy = new SqlitePrivacyStore(db);
    this.readTokens = new SqliteReadTokenStore(db);
    this.accounts = new SqliteAccountStore(db, history.erase);
    this.retention = new SqliteRetentionStore(db);
    this.gatewayState = new SqliteGatewayStateStore(db, thread);
  }

  async ping(): Promise<boolean> {
    try {
      this.db.prepare('SELECT 1').get();
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    if (this.history instanceof SqliteWriteThread) await this.history.close();
    else this.history.trimWaitingLists();
    this.db.close();
  }
}
