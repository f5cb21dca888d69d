import { Client } from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { ADVISORY_LOCKS } from '../../src/store/postgres/locks.js';
import type { PostgresTimeouts } from '../../src/store/postgres/queries.js';
import { StoreUnavailableError } from '../../src/store/unavailable.js';
import { eventually } from '../support/eventually.js';
import { KV_LIMITS } from '../support/kv.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/**
 * A PostgreSQL server that holds its connections and answers nothing (a relay between it and the store
 * stops forwarding): every call fails as unavailable once its time limit passes rather than hang, history waits
 * in the recorder's bounded queue, and all is written once the server answers again. A statement that
 * outlasts its limit on a server that does answer is cancelled by the server, and its connection stays.
 */

const hasPostgres = await postgresAvailable('the PostgreSQL store while its server hangs');
const USER = '80351110224678912';
const T0 = Date.UTC(2026, 10, 22, 12);
/** Short, so the test waits them out; the service's are in POSTGRES_TIMEOUTS. */
const TIMEOUTS: PostgresTimeouts = { connectMs: 400, statementMs: 300, batchMs: 600, answerMarginMs: 300 };

describe.skipIf(!hasPostgres)('the PostgreSQL store while its server hangs', () => {
  let database: TestDatabase;
  let url: URL;
  const proxies: TcpProxy[] = [];
  const stores: PostgresStore[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const proxy of proxies.splice(0)) await proxy.close();
  });
  afterAll(async () => {
    await database?.drop();
  });

  /** A store through a relay, on a schema of its own, and the same schema reached directly. */
  async function throughRelay(): Promise<{ proxy: TcpProxy; store: PostgresStore; direct: PostgresStore }> {
    url = new URL(await database.schema());
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    proxies.push(proxy);
    const relayed = new URL(url);
    relayed.port = String(proxy.port);
    const store = await openPostgresStore(relayed.toString(), { timeouts: TIMEOUTS });
    const direct = await openPostgresStore(url.toString());
    stores.push(store, direct);
    return { proxy, store, direct };
  }

  /** How `call` failed, and how long it took to. */
  async function failure(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
    const started = performance.now();
    const error = await call().then(
      () => new Error('it did not fail'),
      (failed: unknown) => failed,
    );
    return { ms: performance.now() - started, error };
  }

  /** Unavailable, for the reason the driver's error under it gives. */
  function unavailableFor(failed: { error: unknown }, reason: RegExp): void {
    expect(failed.error).toBeInstanceOf(StoreUnavailableError);
    expect(((failed.error as Error).cause as Error).message).toMatch(reason);
  }

  const write = (store: PostgresStore, value: string) =>
    store.kv.writeKv(USER, { set: new Map([['city', value]]), delete: [] }, KV_LIMITS);

  it('fails each request as unavailable once its limit passes, and works again once the server answers', async () => {
    const { proxy, store, direct } = await throughRelay();
    expect(await write(store, 'Lyon')).toMatchObject({ changed: true });

    proxy.hang();
    // The pool's connection is held: the write's first statement gets no answer, and the client stops
    // waiting for one while the server still hangs.
    unavailableFor(await failure(() => write(store, 'Paris')), /^Query read timeout/);
    // That connection was dropped: the next calls make new ones, which the server never lets in.
    const calls = await Promise.all([
      failure(() => write(store, 'Paris')),
      failure(() => store.kv.getKv(USER)),
      failure(() => store.apiKeys.findKey(Buffer.alloc(32))),
      failure(() => store.history.stats(USER)),
    ]);
    for (const call of calls) unavailableFor(call, /timeout/);
    expect(await store.ping()).toBe(false);
    expect((await direct.kv.getKv(USER)).kv).toEqual({ city: 'Lyon' });

    await proxy.restore();
    expect(await write(store, 'Paris')).toMatchObject({ changed: true });
    expect((await direct.kv.getKv(USER)).kv).toEqual({ city: 'Paris' });
  });

  it('keeps history in the recorder’s bounded queue while the server hangs, and writes it afterwards', async () => {
    const { proxy, store, direct } = await throughRelay();
    const dropped: number[] = [];
    const lines: Record<string, unknown>[] = [];
    const recorder = new HistoryRecorder({
      store: store.history,
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
      now: () => T0,
      flushMs: 3_600_000,
      maxPending: 3,
      onDropped: (writes) => dropped.push(writes),
    });
    const registry = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
      now: () => T0,
    });
    registry.onChange(recorder.observe);
    const userId = (index: number) => String(BigInt(USER) + BigInt(index));

    proxy.hang();
    for (let i = 0; i < 5; i++) registry.memberSeen('1', { id: userId(i), username: `u${i}` });
    // The users' stored history cannot be read: they are recorded from scratch, their writes queued.
    await eventually(() =>
      expect(lines).toContainEqual(
        expect.objectContaining({ msg: 'could not read history; recording from scratch' }),
      ),
    );
    await recorder.flush();
    expect(dropped).toEqual([2]);
    expect(lines.at(-1)).toMatchObject({ msg: 'could not write history; will retry', writes: 3 });

    await proxy.restore();
    await recorder.flush();
    expect(lines.at(-1)).toMatchObject({ msg: 'history written again', writes: 3, dropped: 2 });
    const written = await direct.history.latest(Array.from({ length: 5 }, (_, i) => userId(i)));
    expect([...written.keys()].sort()).toEqual([userId(2), userId(3), userId(4)]);
    await recorder.close();
  });

  it('leaves a statement that outlasts its limit on a server that answers to the server to cancel', async () => {
    const { store } = await throughRelay();
    expect(await write(store, 'Lyon')).toMatchObject({ changed: true });
    const backend = async () =>
      (await store.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const before = await backend();
    const cancelled = (failed: { error: unknown }) => {
      unavailableFor(failed, /statement timeout/);
      expect(((failed.error as Error).cause as { code?: string }).code).toBe('57014');
    };
    // Another session holds the user's totals row, then the history lock: a KV write waits past a
    // request's limit, an erasure past a batch's.
    const other = new Client({ connectionString: url.toString() });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM kv_revisions WHERE user_id = $1 FOR UPDATE', [USER]);
      cancelled(await failure(() => write(store, 'Paris')));
      await other.query('SELECT pg_advisory_xact_lock_shared($1, $2)', [...ADVISORY_LOCKS.history]);
      const erasing = await failure(() => store.history.forget(USER, T0));
      cancelled(erasing);
      // Under a batch's limit, not a request's.
      expect(erasing.ms).toBeGreaterThanOrEqual(TIMEOUTS.batchMs);
    } finally {
      await other.query('ROLLBACK');
      await other.end();
    }
    expect(await write(store, 'Paris')).toMatchObject({ changed: true });
    // Rolled back and kept: the same connection serves on.
    expect(await backend()).toBe(before);
  });
});
