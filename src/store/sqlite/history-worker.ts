import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import type { HistoryWrite } from '../ports.js';
import { setUpConnection } from './connection.js';
import { SqliteHistoryStore } from './history.js';

/**
 * The thread that writes history batches into the SQLite file (history-thread.ts): a connection of its
 * own, with the settings of the store's, and a SqliteHistoryStore on it, so the batches' statements and
 * the trimming of lists run beside the event loop instead of on it. A batch is answered once committed.
 */
export type HistoryRequest =
  | { kind: 'append'; id: number; batch: string; limits: { history: number; trackedTracks: number } }
  | { kind: 'close' };

export type HistoryReply = { id: number; error?: string } | { kind: 'closed' };

const port = parentPort;
if (!port) throw new Error('history-worker runs as a worker thread');
const db = new BetterSqlite3((workerData as { path: string }).path);
setUpConnection(db, true);
const history = new SqliteHistoryStore(db);

port.on('message', (request: HistoryRequest) => {
  if (request.kind === 'close') {
    history.trimWaitingLists();
    db.close();
    port.postMessage({ kind: 'closed' } satisfies HistoryReply);
    return;
  }
  const { id } = request;
  // A batch in the file's store is written when the call returns: the answer follows the commit.
  history.appendHistory(JSON.parse(request.batch) as HistoryWrite[], request.limits).then(
    () => port.postMessage({ id } satisfies HistoryReply),
    (error: unknown) => port.postMessage({ id, error: String(error) } satisfies HistoryReply),
  );
});
