import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { HistoryWrite } from '../../src/store/ports.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { SqliteWriteThread } from '../../src/store/sqlite/write-thread.js';
import { KV_LIMITS } from '../support/kv.js';

/** Long enough that no gateway state here is dropped for its age. */
const KEEP = 100 * 365 * 24 * 60 * 60 * 1000;

const LIMITS = { history: 100, trackedTracks: 100 };
const USER = '94490510688792576';

const dirs: string[] = [];
const stores: SqliteStore[] = [];

/** The thread's deaths told to the store's owner. */
const downs: Error[] = [];

function openFileStore(): { store: SqliteStore; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'presently-write-thread-'));
  dirs.push(dir);
  const path = join(dir, 'presently.db');
  const store = openSqliteStore(
    { kind: 'sqlite', path },
    { onWriteThreadDown: (error) => downs.push(error) },
  );
  stores.push(store);
  return { store, path };
}

afterEach(async () => {
  downs.length = 0;
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const statusAt = (ts: number, userId = USER): HistoryWrite => ({
  userId,
  status: { status: ts % 2 === 0 ? 'online' : 'idle', ts },
  track: null,
  countsPlay: false,
  lastSeen: null,
});

/** The status rows of the file, read on a connection of the test's own. */
function statusRows(path: string): number {
  const db = new BetterSqlite3(path, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM status_history').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** The file's saved gateway states, by node, read on a connection of the test's own. */
function gatewayRows(path: string): { node: string; saved_at: number }[] {
  const db = new BetterSqlite3(path, { readonly: true });
  try {
    return db.prepare('SELECT node, saved_at FROM gateway_state ORDER BY node').all() as {
      node: string;
      saved_at: number;
    }[];
  } finally {
    db.close();
  }
}

describe('history, profiles and gateway state of a SQLite file, written by a thread of its own', () => {
  it('has each batch committed in the file when appendHistory resolves, and read back by the store', async () => {
    const { store, path } = openFileStore();
    expect(store.history).toBeInstanceOf(SqliteWriteThread);
    await store.history.appendHistory([statusAt(1), statusAt(2)], LIMITS);
    expect(statusRows(path)).toBe(2);
    await store.history.appendHistory([statusAt(3)], LIMITS);
    expect(statusRows(path)).toBe(3);
    expect((await store.history.history(USER, 10)).status.map((entry) => entry.ts)).toEqual([3, 2, 1]);
  });

  it('writes batches in the order they were handed over', async () => {
    const { store } = openFileStore();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.history.appendHistory([statusAt(i + 1)], LIMITS)),
    );
    const { status } = await store.history.history(USER, 100);
    expect(status.map((entry) => entry.ts)).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
  });

  it('drops, in a later batch, what an erasure on the store’s connection covers', async () => {
    const { store } = openFileStore();
    await store.history.appendHistory([statusAt(10)], LIMITS);
    await store.history.forget(USER, 20);
    await store.history.appendHistory([statusAt(15), statusAt(25)], LIMITS);
    expect((await store.history.history(USER, 10)).status.map((entry) => entry.ts)).toEqual([25]);
  });

  it('lets KV writes on the store’s connection go through while batches commit beside them', async () => {
    const { store } = openFileStore();
    const batches = Array.from({ length: 200 }, (_, b) =>
      store.history.appendHistory(
        Array.from({ length: 50 }, (_, i) => statusAt(b * 50 + i + 1, String(10n ** 17n + BigInt(i)))),
        LIMITS,
      ),
    );
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      writes.push(
        store.kv.writeKv(USER, { set: new Map([[`k${i % 5}`, `"v${i}"`]]), delete: [] }, KV_LIMITS),
      );
      // Each write in a turn of its own, so the thread commits batches among them.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all([...batches, ...writes]);
    expect((await store.kv.getKv(USER)).revision).toBe(200);
  });

  it('rejects a batch the file refuses, whole, and writes the next', async () => {
    const { store, path } = openFileStore();
    const refused = {
      ...statusAt(2),
      status: { status: 'online', ts: 'not a time' },
    } as unknown as HistoryWrite;
    await expect(store.history.appendHistory([statusAt(1), refused], LIMITS)).rejects.toThrow(/not written/);
    expect(statusRows(path)).toBe(0);
    await store.history.appendHistory([statusAt(3)], LIMITS);
    expect(statusRows(path)).toBe(1);
  });

  it('has fetched profiles committed in the file when putProfiles resolves, and read back by the store', async () => {
    const { store, path } = openFileStore();
    const other = '94490510688792577';
    await store.profiles.putProfiles(
      new Map([
        [USER, { profile: { banner: 'a_1', accent_color: 255 }, fetchedAt: 1_000 }],
        [other, { profile: { banner: null, accent_color: null }, fetchedAt: 2_000 }],
      ]),
    );
    const db = new BetterSqlite3(path, { readonly: true });
    try {
      expect((db.prepare('SELECT count(*) AS n FROM profiles').get() as { n: number }).n).toBe(2);
    } finally {
      db.close();
    }
    await store.profiles.putProfiles(
      new Map([[USER, { profile: { banner: 'b_2', accent_color: null }, fetchedAt: 3_000 }]]),
    );
    const read = await store.profiles.getProfiles([USER, other, '94490510688792578']);
    expect(read).toEqual(
      new Map([
        [USER, { profile: { banner: 'b_2', accent_color: null }, fetchedAt: 3_000 }],
        [other, { profile: { banner: null, accent_color: null }, fetchedAt: 2_000 }],
      ]),
    );
  });

  it('rejects profiles the file refuses, and writes the next', async () => {
    const { store } = openFileStore();
    const refused = new Map([[USER, { profile: { banner: 'x', accent_color: 1 }, fetchedAt: null }]]);
    await expect(
      store.profiles.putProfiles(refused as unknown as Parameters<typeof store.profiles.putProfiles>[0]),
    ).rejects.toThrow(/not written/);
    await store.profiles.putProfiles(
      new Map([[USER, { profile: { banner: 'y', accent_color: 2 }, fetchedAt: 5 }]]),
    );
    expect((await store.profiles.getProfiles([USER])).get(USER)?.profile.banner).toBe('y');
  });

  it('commits profiles handed over as the store closes', async () => {
    const { store, path } = openFileStore();
    const writing = store.profiles.putProfiles(
      new Map([[USER, { profile: { banner: 'last', accent_color: 7 }, fetchedAt: 9 }]]),
    );
    await store.close();
    await writing;
    const db = new BetterSqlite3(path, { readonly: true });
    try {
      expect(db.prepare('SELECT banner FROM profiles WHERE user_id = ?').get(USER)).toEqual({
        banner: 'last',
      });
    } finally {
      db.close();
    }
  });

  it('writes on the store’s connection once the thread has died: what it held, and everything after', async () => {
    const { store, path } = openFileStore();
    const thread = store.history as SqliteWriteThread;
    const worker = (thread as unknown as { worker: Worker }).worker;
    // Handed over as the thread dies: committed by it, or by the store's connection after.
    const held = store.profiles.putProfiles(
      new Map([[USER, { profile: { banner: 'held', accent_color: 1 }, fetchedAt: 1 }]]),
    );
    await worker.terminate();
    await held;
    expect(thread.available).toBe(false);
    expect(downs).toHaveLength(1);
    const other = '94490510688792577';
    await store.profiles.putProfiles(
      new Map([[other, { profile: { banner: 'after', accent_color: 2 }, fetchedAt: 2 }]]),
    );
    await store.history.appendHistory([statusAt(1), statusAt(2)], LIMITS);
    expect(statusRows(path)).toBe(2);
    const read = await store.profiles.getProfiles([USER, other]);
    expect([read.get(USER)?.profile.banner, read.get(other)?.profile.banner]).toEqual(['held', 'after']);
    await store.close();
  });

  it('saves and clears gateway state in the file, in the order handed over, and commits a save handed over as the store closes', async () => {
    const { store, path } = openFileStore();
    const state = (savedAt: number, fill: number) => ({
      savedAt,
      sessions: [{ shardId: 0, shardCount: 1, sessionId: `s${savedAt}`, resumeUrl: 'wss://r', sequence: 1 }],
      presences: Buffer.alloc(64, fill),
    });
    await store.gatewayState.save('0', state(1, 1), KEEP);
    expect(gatewayRows(path)).toEqual([{ node: '0', saved_at: 1 }]);
    // Handed over at once: the clear comes after the saves before it, the save after it last.
    await Promise.all([
      store.gatewayState.save('0', state(2, 2), KEEP),
      store.gatewayState.save('1', state(3, 3), KEEP),
      store.gatewayState.clear('0'),
      store.gatewayState.save('2', state(4, 4), KEEP),
    ]);
    expect(gatewayRows(path)).toEqual([
      { node: '1', saved_at: 3 },
      { node: '2', saved_at: 4 },
    ]);
    expect((await store.gatewayState.load('2'))?.presences).toEqual(Buffer.alloc(64, 4));
    const writing = store.gatewayState.save('3', state(5, 5), KEEP);
    await store.close();
    await writing;
    expect(gatewayRows(path).map((row) => row.node)).toEqual(['1', '2', '3']);
  });

  it('saves gateway state on the store’s connection once the thread has died', async () => {
    const { store, path } = openFileStore();
    const worker = (store.history as unknown as { worker: Worker }).worker;
    const state = { savedAt: 7, sessions: [], presences: Buffer.from([0, 255, 0]) };
    const held = store.gatewayState.save('0', state, KEEP);
    await worker.terminate();
    await held;
    await store.gatewayState.save('1', { ...state, savedAt: 8 }, KEEP);
    expect(gatewayRows(path)).toEqual([
      { node: '0', saved_at: 7 },
      { node: '1', saved_at: 8 },
    ]);
    await store.gatewayState.clear('0');
    expect(await store.gatewayState.load('0')).toBeNull();
    expect(await store.gatewayState.load('1')).toEqual({ ...state, savedAt: 8 });
    await store.close();
  });

  it('trims the lists that wait when the store closes', async () => {
    const { store, path } = openFileStore();
    await store.history.appendHistory(
      Array.from({ length: 105 }, (_, i) => statusAt(i + 1)),
      { history: 100, trackedTracks: 100 },
    );
    await store.close();
    expect(statusRows(path)).toBe(100);
    // A thread ended by closing is no thread down.
    expect(downs).toEqual([]);
  });
});
