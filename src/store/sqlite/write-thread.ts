import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Snowflake } from '../../presence/model.js';
import type { HistoryStore, HistoryWrite, SavedGatewayState, StoredProfile } from '../ports.js';
import type { SqliteHistoryStore } from './history.js';
import type { WriteReply, WriteRequest } from './write-worker.js';

interface Waiting {
  resolve(): void;
  reject(error: Error): void;
}

/**
 * The history of a SQLite file, its fetched profiles and its saved gateway state, written by a thread of
 * their own (write-worker.ts) on a connection of its own, while reads and erasures go to the store's
 * connection: the event loop only hands each of these writes over, as one JSON text (the gateway state's
 * presences as a copy of their bytes), and does not wait for its statements, the file's lock or the sync to
 * disk. A write resolves once the thread has committed it, so what is acknowledged is as durable as before.
 * An erasure and a batch are each one transaction of the file, whichever connection runs it, so a batch still
 * drops what an erasure that committed before it covers.
 *
 * Should the thread die, what was handed to it and not committed is rejected (the recorder tries the
 * batch again), and from then on everything is written on the store's connection, as without a thread.
 */
export class SqliteWriteThread implements HistoryStore {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;
  private failure: Error | null = null;
  private closed: Promise<void> | null = null;

  constructor(
    path: string,
    private readonly reads: SqliteHistoryStore,
    /** Told once if the thread dies before it is closed. */
    private readonly onDown?: (error: Error) => void,
  ) {
    this.worker = startWorker(path);
    // Only batches waiting for their commit keep the process alive.
    this.worker.unref();
    this.worker.on('message', (reply: WriteReply) => {
      if ('kind' in reply) return;
      const waiting = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) this.worker.unref();
      if (reply.error === undefined) waiting?.resolve();
      else waiting?.reject(new Error(`not written to the SQLite file: ${reply.error}`));
    });
    this.worker.on('error', (error) => this.fail(error));
    this.worker.on('exit', (code) => this.fail(new Error(`the SQLite write thread exited (${code})`)));
  }

  appendHistory(
    batch: readonly HistoryWrite[],
    limits: { history: number; trackedTracks: number },
  ): Promise<void> {
    if (batch.length === 0) return Promise.resolve();
    if (this.failure) return this.reads.appendHistory(batch, limits);
    return this.written((id) => ({ kind: 'append', id, batch: JSON.stringify(batch), limits }));
  }

  /** False once the thread has died: its writes are then the store's connection's again. */
  get available(): boolean {
    return this.failure === null;
  }

  /** The fetched profiles, written as the store's `putProfiles` writes them; rejected once unavailable. */
  putProfiles(profiles: ReadonlyMap<Snowflake, StoredProfile>): Promise<void> {
    if (profiles.size === 0) return Promise.resolve();
    return this.written((id) => ({ kind: 'profiles', id, profiles: JSON.stringify([...profiles]) }));
  }

  /** A node's gateway state, saved as the store's `gatewayState.save` saves it; rejected once unavailable. */
  saveGatewayState(node: string, state: SavedGatewayState, keepForMs: number): Promise<void> {
    return this.written((id) => ({ kind: 'gateway-state', id, node, state, keepForMs }));
  }

  /** Dropped in turn after the saves handed over before it; rejected once unavailable. */
  clearGatewayState(node: string): Promise<void> {
    return this.written((id) => ({ kind: 'gateway-state', id, node, state: null, keepForMs: 0 }));
  }

  history(userId: Snowflake, limit: number): ReturnType<HistoryStore['history']> {
    return this.reads.history(userId, limit);
  }

  latest(userIds: readonly Snowflake[]): ReturnType<HistoryStore['latest']> {
    return this.reads.latest(userIds);
  }

  stats(userId: Snowflake): ReturnType<HistoryStore['stats']> {
    return this.reads.stats(userId);
  }

  playDays(userId: Snowflake): ReturnType<HistoryStore['playDays']> {
    return this.reads.playDays(userId);
  }

  topTracks(
    userId: Snowflake,
    minPlays: number,
    limit: number,
    since?: string,
  ): ReturnType<HistoryStore['topTracks']> {
    return this.reads.topTracks(userId, minPlays, limit, since);
  }

  forget(userId: Snowflake, at: number): ReturnType<HistoryStore['forget']> {
    return this.reads.forget(userId, at);
  }

  /** Trims the lists that wait, after the batches sent, and ends the thread. */
  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      if (this.failure) {
        this.reads.trimWaitingLists();
        resolve();
        return;
      }
      this.worker.ref();
      this.worker.on('message', (reply: WriteReply) => {
        if ('kind' in reply) void this.worker.terminate().then(() => resolve());
      });
      // A thread that dies closing (its trimming failed) ends the close all the same.
      this.worker.once('exit', () => resolve());
      const request: WriteRequest = { kind: 'close' };
      this.worker.postMessage(request);
    });
    return this.closed;
  }

  /** Hands the request made with its id to the thread; resolves once it is committed. */
  private written(request: (id: number) => WriteRequest): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage(request(id));
    });
  }

  private fail(error: Error): void {
    if (this.failure === null && this.closed === null) this.onDown?.(error);
    this.failure ??= error;
    for (const waiting of this.waiting.values()) waiting.reject(error);
    this.waiting.clear();
  }
}

/**
 * The thread, from the built JavaScript; run from the TypeScript source (tests, the bench), its modules
 * are compiled by tsx, which a worker's own `--import` does not reach on Node 20.
 */
function startWorker(path: string): Worker {
  const workerData = { path };
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./write-worker.js', import.meta.url), { workerData });
  }
  const source = fileURLToPath(new URL('./write-worker.ts', import.meta.url));
  return new Worker(`require('tsx/cjs/api').register(); require(${JSON.stringify(source)});`, {
    eval: true,
    workerData,
  });
}
