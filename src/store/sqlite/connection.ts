import type { Database } from 'better-sqlite3';

/**
 * How every connection to the store's file is set up: the event loop's, and the write thread's
 * (write-worker.ts) beside it.
 */
export function setUpConnection(db: Database, file: boolean): void {
  if (file) db.pragma('journal_mode = WAL');
  // FULL: an acknowledged write must survive a crash of the machine, not only of the process.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  // A connection waits for the other's transaction to end rather than fail.
  db.pragma('busy_timeout = 5000');
  // Every transaction takes the write lock as it begins: one that read first and wrote after the other
  // connection had committed would fail at once (SQLITE_BUSY_SNAPSHOT) instead of waiting its turn.
  // https://www.sqlite.org/lang_transaction.html#deferred_immediate_and_exclusive_transactions
  const deferred = db.transaction.bind(db);
  db.transaction = ((fn: Parameters<Database['transaction']>[0]) =>
    deferred(fn).immediate) as Database['transaction'];
}
