import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import type { Snowflake } from '../../presence/model.js';
import type { HistoryWrite, SavedGatewayState, StoredProfile } from '../ports.js';
import { setUpConnection } from './connection.js';
import { SqliteGatewayStateStore } from './gateway-state.js';
import { SqliteHistoryStore } from './history.js';
import { SqliteProfileStore } from './profiles.js';

/**
 * The thread that writes the SQLite file's bulk writes (write-thread.ts): history batches, fetched
 * profiles and saved gateway state, on a connection of its own with the settings of the store's, so their
 * statements, the trimming of lists and the sync to disk of each commit run beside the event loop instead
 * of on it. A write is answered once committed.
 */
export type WriteRequest =
  | { kind: 'append'; id: number; batch: string; limits: { history: number; trackedTracks: number } }
  /** `profiles`: the JSON of `[userId, StoredProfile][]`. */
  | { kind: 'profiles'; id: number; profiles: string }
  /**
   * `state`: as a message carries it, the presences a Uint8Array rather than a Buffer; null drops what
   * `node` saved.
   */
  | { kind: 'gateway-state'; id: number; node: string; state: SavedGatewayState | null; keepForMs: number }
  | { kind: 'close' };

export type WriteReply = { id: number; error?: string } | { kind: 'closed' };

const port = parentPort;
if (!port) throw new Error('write-worker runs as a worker thread');
const db = new BetterSqlite3((workerData as { path: string }).path);
setUpConnection(db, true);
const history = new SqliteHistoryStore(db);
const profiles = new SqliteProfileStore(db);
const gatewayState = new SqliteGatewayStateStore(db);

/** Runs a request's write; a write in the file's store is committed when its call returns. */
function written(request: Exclude<WriteRequest, { kind: 'close' }>): Promise<void> {
  if (request.kind === 'append') {
    return history.appendHistory(JSON.parse(request.batch) as HistoryWrite[], request.limits);
  }
  if (request.kind === 'profiles') {
    return profiles.putProfiles(new Map(JSON.parse(request.profiles) as [Snowflake, StoredProfile][]));
  }
  const { node, state, keepForMs } = request;
  if (state === null) return gatewayState.clear(node);
  const { buffer, byteOffset, byteLength } = state.presences;
  return gatewayState.save(
    node,
    { ...state, presences: Buffer.from(buffer, byteOffset, byteLength) },
    keepForMs,
  );
}

port.on('message', (request: WriteRequest) => {
  if (request.kind === 'close') {
    history.trimWaitingLists();
    db.close();
    port.postMessage({ kind: 'closed' } satisfies WriteReply);
    return;
  }
  const { id } = request;
  written(request).then(
    () => port.postMessage({ id } satisfies WriteReply),
    (error: unknown) => port.postMessage({ id, error: String(error) } satisfies WriteReply),
  );
});
