import { Pool } from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HISTORY_LIMIT, type TrackEntry } from '../../src/model/history.js';
import { HISTORY_BATCH_IDS_KEPT_MS, type HistoryWrite, type Store } from '../../src/store/ports.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { ADVISORY_LOCKS } from '../../src/store/postgres/locks.js';
import { MIGRATIONS, migrate } from '../../src/store/postgres/migrations.js';
import { PostgresWebhookQueue } from '../../src/store/postgres/webhook-queue.js';
import { expectErasureDropsQueuedEvents } from '../support/erased-queue.js';
import { eventually } from '../support/eventually.js';
import { KV_LIMITS } from '../support/kv.js';
import {
  createTestDatabase,
  POSTGRES_TEST_URL,
  postgresAvailable,
  type TestDatabase,
} from '../support/postgres.js';
import { storeContract } from './contract.js';

const hasPostgres = await postgresAvailable('PostgreSQL store contract and migrations');
let database: TestDatabase | undefined;
const db = (): TestDatabase => database as TestDatabase;

beforeAll(async () => {
  if (hasPostgres) database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** The schema each store of the contract was opened on, to open its data again. */
const urlOf = new WeakMap<Store, string>();

storeContract(
  'PostgreSQL',
  async (reopening) => {
    const url = (reopening && urlOf.get(reopening)) ?? (await db().schema());
    const store = await openPostgresStore(url);
    urlOf.set(store, url);
    return store;
  },
  !hasPostgres,
);

describe.skipIf(!hasPostgres)('PostgreSQL store', () => {
  const T0 = Date.UTC(2026, 10, 22, 12);
  const LIMITS = { history: 100, trackedTracks: 1000 };
  const pools: Pool[] = [];
  const stores: PostgresStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const pool of pools.splice(0)) await pool.end();
  });

  async function freshPool(): Promise<Pool> {
    const pool = new Pool({ connectionString: await db().schema() });
    pools.push(pool);
    return pool;
  }

  async function open(options: Parameters<typeof openPostgresStore>[1] = {}): Promise<PostgresStore> {
    const store = await openPostgresStore(await db().schema(), options);
    stores.push(store);
    return store;
  }

  const tables = async (pool: Pool): Promise<string[]> =>
    (
      await pool.query<{ name: string }>(
        'SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1',
      )
    ).rows.map((row) => row.name);
  const versions = async (pool: Pool): Promise<number[]> =>
    (await pool.query<{ version: number }>('SELECT version FROM presently_schema ORDER BY 1')).rows.map(
      (row) => row.version,
    );

  describe('migrations', () => {
    it('builds a fresh database to the newest version, and a second run changes nothing', async () => {
      const pool = await freshPool();
      expect(await migrate(pool)).toBe(MIGRATIONS.length);
      const built = await tables(pool);
      expect(built).toEqual(expect.arrayContaining(['kv', 'api_keys', 'track_history', 'presently_schema']));
      expect(await versions(pool)).toEqual(MIGRATIONS.map((_, index) => index + 1));
      expect(await migrate(pool)).toBe(MIGRATIONS.length);
      expect(await tables(pool)).toEqual(built);
      expect(await versions(pool)).toEqual(MIGRATIONS.map((_, index) => index + 1));
    });

    it('runs only the steps a database has not run yet', async () => {
      const pool = await freshPool();
      const steps = ['CREATE TABLE first (n integer)', 'INSERT INTO first VALUES (1)'];
      expect(await migrate(pool, steps.slice(0, 1))).toBe(1);
      expect(await migrate(pool, steps)).toBe(2);
      expect(await migrate(pool, steps)).toBe(2);
      expect((await pool.query('SELECT n FROM first')).rows).toEqual([{ n: 1 }]);
    });

    it('lets nodes starting together migrate one at a time: each step runs once', async () => {
      const url = await db().schema();
      // Each step would fail if run twice. The lock is held until all three nodes wait for it, so they meet.
      const steps = ['CREATE TABLE slow (n integer)', 'INSERT INTO slow VALUES (1)'];
      const holder = new Pool({ connectionString: url, max: 1 });
      const nodes = Array.from({ length: 3 }, () => new Pool({ connectionString: url }));
      pools.push(holder, ...nodes);
      const held = await holder.connect();
      await held.query('SELECT pg_advisory_lock($1, $2)', [...ADVISORY_LOCKS.migrations]);
      const migrating = Promise.all(nodes.map((pool) => migrate(pool, steps)));
      await eventually(async () => {
        const { rows } = await held.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND classid = $1::oid AND objid = $2::oid`,
          [...ADVISORY_LOCKS.migrations],
        );
        expect(rows[0]?.waiting).toBe(3);
      });
      await held.query('SELECT pg_advisory_unlock($1, $2)', [...ADVISORY_LOCKS.migrations]);
      held.release();
      expect(await migrating).toEqual([2, 2, 2]);
      expect((await (nodes[0] as Pool).query('SELECT n FROM slow')).rows).toEqual([{ n: 1 }]);
      expect(await versions(nodes[0] as Pool)).toEqual([1, 2]);
    });

    it('rolls a failed step back whole and stays at the version before it', async () => {
      const pool = await freshPool();
      const steps = ['CREATE TABLE kept (n integer)', 'CREATE TABLE lost (n integer); SELECT 1 / 0'];
      await expect(migrate(pool, steps)).rejects.toThrow(/division by zero/);
      expect(await tables(pool)).toEqual(['kept', 'presently_schema']);
      expect(await versions(pool)).toEqual([1]);
      // The lock went with the failed run: the next one is not kept waiting.
      expect(await migrate(pool, steps.slice(0, 1))).toBe(1);
    });

    it('refuses a database migrated by a newer build rather than corrupt it', async () => {
      const url = await db().schema();
      const pool = new Pool({ connectionString: url });
      pools.push(pool);
      await migrate(pool);
      await pool.query('INSERT INTO presently_schema (version) VALUES ($1)', [MIGRATIONS.length + 1]);
      await expect(openPostgresStore(url)).rejects.toThrow(/newer than this build knows/);
    });
  });

  it('erasing a user drops the events queued for their webhooks, in the same transaction', async () => {
    const store = await open();
    await expectErasureDropsQueuedEvents(store, new PostgresWebhookQueue(store.pool));
  });

  it('answers ping until closed, and closing twice is harmless', async () => {
    const store = await openPostgresStore(await db().schema());
    expect(await store.ping()).toBe(true);
    await store.close();
    await store.close();
    expect(await store.ping()).toBe(false);
  });

  it('fails to open, without the password, when the server does not answer', async () => {
    const url = new URL(POSTGRES_TEST_URL);
    url.username = 'presently';
    url.password = 'hunter2';
    url.port = '1';
    const opening = openPostgresStore(url.toString());
    await expect(opening).rejects.toThrow(
      /could not open the PostgreSQL store at postgres:\/\/presently:\*\*\*@/,
    );
    await expect(opening).rejects.not.toThrow(/hunter2/);
  });

  it('keeps KV values holding U+0000, which text columns refuse', async () => {
    const store = await open();
    const set = new Map([['nul', 'a\u0000b']]);
    expect(await store.kv.writeKv('1', { set, delete: [] }, KV_LIMITS)).toEqual({
      revision: 1,
      changed: true,
    });
    expect((await store.kv.getKv('1')).kv).toEqual({ nul: 'a\u0000b' });
    expect(await store.kv.writeKv('1', { set, delete: [] }, KV_LIMITS)).toEqual({
      revision: 1,
      changed: false,
    });
  });

  it('leaves nothing behind for a write that changed nothing or was refused', async () => {
    const store = await open();
    await store.kv.writeKv('1', { set: new Map(), delete: ['missing'] }, KV_LIMITS);
    await store.kv.writeKv(
      '2',
      { set: new Map([['a', 'x'.repeat(10)]]), delete: [] },
      { ...KV_LIMITS, maxKeys: 0 },
    );
    expect((await store.pool.query('SELECT user_id FROM kv_revisions')).rows).toEqual([]);
  });

  it('keeps track titles holding U+0000 as they were written', async () => {
    const store = await open();
    const track: TrackEntry = {
      source: 'other',
      song: 'a\u0000b',
      artist: null,
      album: null,
      album_art_url: null,
      track_id: null,
      track_url: null,
      timestamps: { start: null, end: null },
      duration_ms: null,
      ts: T0,
    };
    await store.history.appendHistory(
      [{ userId: '1', status: null, track, countsPlay: true, lastSeen: null }],
      LIMITS,
    );
    expect((await store.history.history('1', 10)).tracks).toEqual([track]);
    expect(await store.history.topTracks('1', 1, 10)).toMatchObject([{ song: 'a\u0000b', play_count: 1 }]);
  });

  const played = (ts: number, trackId = 'a'): HistoryWrite => ({
    userId: '1',
    status: null,
    track: {
      source: 'spotify',
      song: `Song ${trackId}`,
      artist: 'Artist',
      album: null,
      album_art_url: null,
      track_id: trackId,
      track_url: null,
      timestamps: { start: ts, end: ts + 1000 },
      duration_ms: 1000,
      ts,
    },
    countsPlay: true,
    lastSeen: null,
  });

  it('counts the plays of one batch, and of a day that starts over within it', async () => {
    const store = await open();
    const midnight = Date.UTC(2026, 10, 23);
    await store.history.appendHistory([played(midnight + 1), played(midnight + 2)], LIMITS);
    // A batch holding the evening before and the new day: only the new day's plays count, from one.
    await store.history.appendHistory([played(midnight - 5), played(midnight + 3)], LIMITS);
    expect(await store.history.stats('1')).toMatchObject({ playsDay: '2026-11-23', plays: 1 });
    expect(await store.history.topTracks('1', 1, 10)).toMatchObject([
      { play_count: 4, last_played: midnight + 3 },
    ]);
  });

  it('writes a batch tried again under its id once, and a batch under another id again', async () => {
    const clock = { now: T0 };
    const store = await open({ history: { now: () => clock.now } });
    const batch = [played(T0, 'a'), played(T0 + 1, 'b')];
    await store.history.appendHistory(batch, LIMITS, 'first');
    // Its answer was lost: the recorder sends the same batch under the same id.
    await store.history.appendHistory(batch, LIMITS, 'first');
    expect((await store.history.history('1', 10)).tracks.map((entry) => entry.song)).toEqual([
      'Song b',
      'Song a',
    ]);
    expect(await store.history.topTracks('1', 1, 10)).toMatchObject([
      { song: 'Song b', play_count: 1 },
      { song: 'Song a', play_count: 1 },
    ]);
    expect(await store.history.stats('1')).toMatchObject({ plays: 2 });

    await store.history.appendHistory([played(T0 + 2, 'a')], LIMITS, 'second');
    expect(await store.history.topTracks('1', 2, 10)).toMatchObject([{ song: 'Song a', play_count: 2 }]);

    // A day on, the ids are forgotten: the first batch sent again counts as new plays.
    clock.now += HISTORY_BATCH_IDS_KEPT_MS + 1;
    await store.history.appendHistory([played(T0 + 3, 'c')], LIMITS, 'third');
    await store.history.appendHistory(batch, LIMITS, 'first');
    expect(await store.history.topTracks('1', 3, 10)).toMatchObject([{ song: 'Song a', play_count: 3 }]);
  });

  it('trims lists once they have waited, and every list that waits when it closes', async () => {
    const clock = { now: T0 };
    const url = await db().schema();
    const store = await openPostgresStore(url, { history: { trimDelayMs: 30_000, now: () => clock.now } });
    const status = (i: number): HistoryWrite => ({
      userId: '1',
      status: { status: i % 2 ? 'idle' : 'online', ts: T0 + i },
      track: null,
      countsPlay: false,
      lastSeen: null,
    });
    const rows = async () =>
      Number(
        (await store.pool.query("SELECT count(*) AS n FROM status_history WHERE user_id = '1'")).rows[0].n,
      );
    await store.history.appendHistory(
      Array.from({ length: HISTORY_LIMIT + 5 }, (_, i) => status(i)),
      LIMITS,
    );
    expect(await rows()).toBe(HISTORY_LIMIT + 5);
    expect((await store.history.history('1', 1000)).status).toHaveLength(HISTORY_LIMIT + 5);
    clock.now += 30_000;
    await store.history.appendHistory([status(HISTORY_LIMIT + 5)], LIMITS);
    expect(await rows()).toBe(HISTORY_LIMIT);
    expect((await store.history.history('1', 1)).status).toEqual([{ status: 'idle', ts: T0 + 105 }]);

    await store.history.appendHistory([status(HISTORY_LIMIT + 6)], LIMITS);
    await store.close();
    const reopened = await openPostgresStore(url);
    stores.push(reopened);
    expect(
      Number(
        (await reopened.pool.query("SELECT count(*) AS n FROM status_history WHERE user_id = '1'")).rows[0].n,
      ),
    ).toBe(HISTORY_LIMIT);
  });
});
