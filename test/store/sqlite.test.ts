import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3, { type Database } from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { HistoryWrite } from '../../src/store/ports.js';
import { SqliteHistoryStore } from '../../src/store/sqlite/history.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { MIGRATIONS, migrate } from '../../src/store/sqlite/migrations.js';
import { SqliteWebhookQueue } from '../../src/store/sqlite/webhook-queue.js';
import { expectErasureDropsQueuedEvents } from '../support/erased-queue.js';
import { KV_LIMITS } from '../support/kv.js';
import { profileOf } from '../support/profiles.js';
import { storeContract } from './contract.js';

/** Long enough that no gateway state here is dropped for its age. */
const KEEP = 100 * 365 * 24 * 60 * 60 * 1000;

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'presently-store-'));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('embedded SQLite store', () => {
  it('creates the directory of a file database, uses WAL, and migrates to the newest version', async () => {
    const path = join(tempDir(), 'nested', 'deeper', 'presently.db');
    const store = openSqliteStore({ kind: 'sqlite', path });
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(await store.ping()).toBe(true);
    await store.close();
    expect(await store.ping()).toBe(false);
  });

  it('keeps profiles across a reopen', async () => {
    const path = join(tempDir(), 'presently.db');
    const first = openSqliteStore({ kind: 'sqlite', path });
    await first.profiles.putProfiles(
      new Map([['1', { profile: { banner: 'a_abc', accent_color: 0xff00ff }, fetchedAt: 123 }]]),
    );
    await first.profiles.putProfiles(
      new Map([['1', { profile: { banner: 'a_def', accent_color: null }, fetchedAt: 456 }]]),
    );
    await first.close();

    const second = openSqliteStore({ kind: 'sqlite', path });
    expect(await profileOf(second, '1')).toEqual({
      profile: { banner: 'a_def', accent_color: null },
      fetchedAt: 456,
    });
    expect(await profileOf(second, '2')).toBeUndefined();
    await second.close();
  });

  it('runs only the migrations a database has not run yet', () => {
    const db = new BetterSqlite3(':memory:');
    expect(migrate(db)).toBe(MIGRATIONS.length);
    expect(migrate(db)).toBe(MIGRATIONS.length);
    db.close();
  });

  it('moves play counts into a rowid table, keeping every count and the ranking', async () => {
    const path = join(tempDir(), 'presently.db');
    const old = new BetterSqlite3(path);
    for (const step of MIGRATIONS.slice(0, 3)) old.exec(step);
    old.pragma('user_version = 3');
    const insert = old.prepare(
      'INSERT INTO play_counts (user_id, track_key, play_count, last_played, track) VALUES (?, ?, ?, ?, ?)',
    );
    const track = (id: string) => JSON.stringify({ source: 'spotify', song: id, track_id: id });
    insert.run('1', 'spotify:a', 2, 10, track('a'));
    insert.run('1', 'spotify:b', 5, 5, track('b'));
    insert.run('1', 'spotify:c', 2, 20, track('c'));
    insert.run('2', 'spotify:a', 1, 30, track('a'));
    old.close();

    const store = openSqliteStore({ kind: 'sqlite', path });
    expect(
      store.db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'play_counts'").pluck().get(),
    ).not.toMatch(/WITHOUT ROWID/);
    const top = await store.history.topTracks('1', 1, 10);
    expect(top.map((t) => [t.song, t.play_count, t.last_played])).toEqual([
      ['b', 5, 5],
      ['c', 2, 20],
      ['a', 2, 10],
    ]);
    expect(await store.history.topTracks('2', 1, 10)).toHaveLength(1);
    // Still one row per track: a play counts on the row there is.
    await store.history.appendHistory(
      [
        {
          userId: '2',
          status: null,
          track: {
            source: 'spotify',
            song: 'a',
            artist: null,
            album: null,
            album_art_url: null,
            track_id: 'a',
            track_url: null,
            timestamps: { start: null, end: null },
            duration_ms: null,
            ts: 40,
          },
          countsPlay: true,
          lastSeen: null,
        },
      ],
      { history: 100, trackedTracks: 1000 },
    );
    expect((await store.history.topTracks('2', 1, 10)).map((t) => [t.play_count, t.last_played])).toEqual([
      [2, 40],
    ]);
    await store.close();
  });

  it('counts the KV bytes of users stored before totals were kept, so the cap holds for them', async () => {
    const path = join(tempDir(), 'presently.db');
    const old = new BetterSqlite3(path);
    const version = MIGRATIONS.findIndex((step) => step.includes('ADD COLUMN bytes'));
    for (const step of MIGRATIONS.slice(0, version)) old.exec(step);
    old.pragma(`user_version = ${version}`);
    const insert = old.prepare('INSERT INTO kv (user_id, key, value) VALUES (?, ?, ?)');
    insert.run('1', 'a', 'x'.repeat(50));
    insert.run('1', 'b', 'é'.repeat(24));
    insert.run('2', 'a', 'x'.repeat(99));
    old.prepare('INSERT INTO kv_revisions (user_id, revision) VALUES (?, ?)').run('1', 7);
    old.close();

    const store = openSqliteStore({ kind: 'sqlite', path });
    const cap = { ...KV_LIMITS, maxBytes: 100 };
    const write = (key: string, value: string) => ({ set: new Map([[key, value]]), delete: [] });
    // 51 + 49 bytes for user 1 and 100 for user 2 (who had keys but no revision): both at the cap.
    for (const userId of ['1', '2']) {
      expect(await store.kv.writeKv(userId, write('c', ''), cap)).toEqual({
        refused: 'bytes',
        wouldHave: 101,
      });
    }
    expect(await store.kv.writeKv('1', write('a', 'x'.repeat(50)), cap)).toEqual({
      revision: 7,
      changed: false,
    });
    expect(await store.kv.writeKv('1', write('a', 'y'.repeat(50)), cap)).toMatchObject({ revision: 8 });
    await store.close();
  });

  it("reads users' KVs while another connection to the file is writing", async () => {
    const path = join(tempDir(), 'presently.db');
    const store = openSqliteStore({ kind: 'sqlite', path });
    await store.kv.writeKv('1', { set: new Map([['theme', 'dark']]), delete: [] }, KV_LIMITS);
    const writer = new BetterSqlite3(path);
    writer.exec('BEGIN IMMEDIATE');
    try {
      const found = await store.kv.getKvs(['1', '2']);
      expect(found).toEqual(new Map([['1', { kv: { theme: 'dark' }, revision: 1 }]]));
    } finally {
      writer.exec('ROLLBACK');
      writer.close();
      await store.close();
    }
  });

  it('refuses a database from a newer build rather than corrupt it', () => {
    const db = new BetterSqlite3(':memory:');
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    expect(() => migrate(db)).toThrow(/newer than this build/);
    db.close();
  });

  it('works in memory for throwaway runs', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    await store.profiles.putProfiles(
      new Map([['9', { profile: { banner: null, accent_color: 1 }, fetchedAt: 1 }]]),
    );
    expect((await profileOf(store, '9'))?.profile.accent_color).toBe(1);
    // Without a file there is no write thread: the gateway state is written on the one connection.
    const state = { savedAt: 1, sessions: [], presences: Buffer.from([0, 1, 255]) };
    await store.gatewayState.save('0', state, KEEP);
    expect(await store.gatewayState.load('0')).toEqual(state);
    await store.gatewayState.clear('0');
    expect(await store.gatewayState.load('0')).toBeNull();
    await store.close();
  });

  it('erasing a user drops the events queued for their webhooks, in the same transaction', async () => {
    const store = openSqliteStore({ kind: 'sqlite', path: join(tempDir(), 'presently.db') });
    await expectErasureDropsQueuedEvents(store, new SqliteWebhookQueue(store.db));
    await store.close();
  });
});

describe('embedded SQLite history trimming', () => {
  const T0 = Date.UTC(2026, 10, 22, 12);
  const LIMITS = { history: 100, trackedTracks: 1000 };

  /** A status change and a play of its own track, at `T0 + i`. */
  const writes = (userId: string, from: number, count: number): HistoryWrite[] =>
    Array.from({ length: count }, (_, k) => {
      const ts = T0 + from + k;
      return {
        userId,
        status: { status: ts % 2 ? 'idle' : 'online', ts },
        track: {
          source: 'spotify',
          song: `Song ${ts}`,
          artist: null,
          album: null,
          album_art_url: null,
          track_id: `t${ts}`,
          track_url: null,
          timestamps: { start: ts, end: ts + 1000 },
          duration_ms: 1000,
          ts,
        },
        countsPlay: true,
        lastSeen: null,
      };
    });

  const rows = (db: Database, table: string, userId: string): number =>
    db.prepare(`SELECT count(*) FROM ${table} WHERE user_id = ?`).pluck().get(userId) as number;

  function open(options: { trimWaiting?: number } = {}) {
    const db = new BetterSqlite3(':memory:');
    migrate(db);
    const clock = { now: T0 };
    const history = new SqliteHistoryStore(db, { trimDelayMs: 30_000, now: () => clock.now, ...options });
    return { db, clock, history };
  }

  /** The timestamps (from T0) of a user's entries as read, newest first, and the count stats gives. */
  async function read(history: SqliteHistoryStore, userId: string) {
    const { status, tracks } = await history.history(userId, 100);
    return {
      status: status.map((entry) => entry.ts - T0),
      tracks: tracks.map((entry) => entry.ts - T0),
      count: (await history.stats(userId)).trackHistoryCount,
    };
  }
  const newest = (last: number, count: number) => Array.from({ length: count }, (_, k) => last - k);

  it('reads no more than the limit of each list while entries past it wait to be trimmed', async () => {
    const { db, history } = open();
    await history.appendHistory(writes('1', 0, 100), LIMITS);
    await history.appendHistory(writes('1', 100, 5), LIMITS);
    expect(rows(db, 'status_history', '1')).toBe(105);
    expect(rows(db, 'track_history', '1')).toBe(105);
    expect(await read(history, '1')).toEqual({
      status: newest(104, 100),
      tracks: newest(104, 100),
      count: 100,
    });
    expect((await history.latest(['1'])).get('1')?.track?.ts).toBe(T0 + 104);
  });

  it('trims a list once it has waited the delay, or once too many users wait', async () => {
    const { db, clock, history } = open({ trimWaiting: 2 });
    await history.appendHistory([...writes('1', 0, 101), ...writes('2', 0, 101)], LIMITS);
    clock.now += 29_999;
    await history.appendHistory(writes('2', 101, 1), LIMITS);
    expect(rows(db, 'status_history', '1')).toBe(101);
    expect(rows(db, 'track_history', '2')).toBe(102);

    clock.now += 1;
    await history.appendHistory(writes('3', 0, 101), LIMITS);
    for (const userId of ['1', '2']) {
      expect(rows(db, 'status_history', userId)).toBe(100);
      expect(rows(db, 'track_history', userId)).toBe(100);
    }
    expect(rows(db, 'track_history', '3')).toBe(101);
    expect(await read(history, '2')).toEqual({
      status: newest(101, 100),
      tracks: newest(101, 100),
      count: 100,
    });

    // 3 and 4 wait: a third user waiting trims the one waiting longest.
    await history.appendHistory(writes('4', 0, 101), LIMITS);
    await history.appendHistory(writes('5', 0, 101), LIMITS);
    expect(rows(db, 'status_history', '3')).toBe(100);
    expect(rows(db, 'status_history', '4')).toBe(101);
    expect(rows(db, 'status_history', '5')).toBe(101);
  });

  it('trims play counts in the batch: an evicted track played again counts from one', async () => {
    const { db, history } = open();
    const capped = { history: 100, trackedTracks: 3 };
    const [a, b, c, d] = writes('1', 0, 4) as [HistoryWrite, HistoryWrite, HistoryWrite, HistoryWrite];
    await history.appendHistory([a, a, b, c, d], capped);
    expect(rows(db, 'play_counts', '1')).toBe(3);
    await history.appendHistory([b, b], capped);
    const top = await history.topTracks('1', 1, 10);
    expect(top.map((track) => [track.track_id, track.play_count])).toEqual([
      [`t${T0 + 1}`, 2],
      [`t${T0}`, 2],
      [`t${T0 + 3}`, 1],
    ]);
  });

  it('forgets the entries waiting to be trimmed too, counting only those that could be read', async () => {
    const { db, history } = open();
    await history.appendHistory(writes('1', 0, 105), LIMITS);
    await history.appendHistory(writes('2', 0, 1), LIMITS);
    expect(await history.forget('1', T0 + 1_000)).toEqual({
      statusEntries: 100,
      trackEntries: 100,
      playCounts: 105,
    });
    for (const table of ['status_history', 'track_history', 'play_counts', 'user_stats']) {
      expect(rows(db, table, '1')).toBe(0);
    }
    expect(await read(history, '1')).toEqual({ status: [], tracks: [], count: 0 });
    expect(rows(db, 'track_history', '2')).toBe(1);
  });

  it('trims the lists that wait when the store closes', async () => {
    const path = join(tempDir(), 'presently.db');
    const store = openSqliteStore({ kind: 'sqlite', path });
    await store.history.appendHistory(writes('1', 0, 105), LIMITS);
    expect(rows(store.db, 'status_history', '1')).toBe(105);
    await store.close();
    const db = new BetterSqlite3(path, { readonly: true });
    expect(rows(db, 'status_history', '1')).toBe(100);
    expect(rows(db, 'track_history', '1')).toBe(100);
    db.close();
  });
});

storeContract('SQLite', async (reopening) =>
  openSqliteStore({
    kind: 'sqlite',
    path: reopening ? (reopening as SqliteStore).db.name : join(tempDir(), 'presently.db'),
  }),
);
