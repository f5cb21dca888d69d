import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3, { type Database } from 'better-sqlite3';
import type { Store } from '../ports.js';
import { SqliteApiKeyStore } from './api-keys.js';
import { SqliteHistoryStore } from './history.js';
import { SqliteKvStore } from './kv.js';
import { migrate } from './migrations.js';
import { SqliteProfileStore } from './profiles.js';
import { SqliteWebhookStore } from './webhooks.js';

/** Where the embedded store lives: a file, or memory for throwaway runs. */
export type SqliteLocation = { kind: 'sqlite'; path: string } | { kind: 'sqlite-memory' };

/** Opens (creating if needed) the embedded store and brings its schema up to date. */
export function openSqliteStore(location: SqliteLocation): SqliteStore {
  let db: Database;
  if (location.kind === 'sqlite-memory') {
    db = new BetterSqlite3(':memory:');
  } else {
    mkdirSync(dirname(location.path), { recursive: true });
    db = new BetterSqlite3(location.path);
    db.pragma('journal_mode = WAL');
  }
  // FULL: an acknowledged write must survive a crash of the machine, not only of the process.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return new SqliteStore(db);
}

export class SqliteStore implements Store {
  readonly profiles: SqliteProfileStore;
  readonly kv: SqliteKvStore;
  readonly apiKeys: SqliteApiKeyStore;
  readonly history: SqliteHistoryStore;
  readonly webhooks: SqliteWebhookStore;

  constructor(readonly db: Database) {
    this.history = new SqliteHistoryStore(db);
    this.profiles = new SqliteProfileStore(db);
    this.kv = new SqliteKvStore(db);
    this.apiKeys = new SqliteApiKeyStore(db);
    this.webhooks = new SqliteWebhookStore(db);
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
    this.history.trimWaitingLists();
    this.db.close();
  }
}
