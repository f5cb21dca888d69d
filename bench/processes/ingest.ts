import '../../src/ops/tick-shape.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { constants, createDeflate, createInflate } from 'node:zlib';
import type { GatewayDispatchPayload } from 'discord-api-types/v10';
import pino from 'pino';
import { GatewayIngest } from '../../src/discord/ingest.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import type { HistoryStore } from '../../src/store/ports.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { report, serveBenchProcess } from '../lib/child.js';
import { PostgresBackends } from '../lib/postgres.js';
import { BENCH_GUILD, benchUserId, realisticPresence, SECOND_GUILD } from '../lib/workload.js';

/**
 * PRESENCE_UPDATE dispatches as the JSON text the gateway receives, through JSON.parse, the ingest, the
 * normalization, the registry and, with HISTORY=on, the history recorder handing batches to the SQLite
 * file's write thread (WAL, synchronous=FULL: the production settings). The pieces are the ones startApp
 * wires, built here so history can be left out for the baseline. The event loop's thread is reported
 * apart from the process's others.
 * HISTORY=floor measures the JSON work alone (see `floor`), HISTORY=store the history writes alone (see
 * `storeOnly`).
 *
 * USERS users, each update of a user in turn; a user's updates cycle through a new Spotify track, the
 * same update again from a second guild (Discord's per-guild copy, start times 400 ms off: no change),
 * a status change and a custom status change.
 */
const USERS = Number(process.env.USERS ?? 10_000);
const UPDATES = Number(process.env.UPDATES ?? 120_000);
const history = process.env.HISTORY === 'on';
/** HISTORY=floor: each dispatch only parsed and its data written back as JSON, what no ingest can skip. */
const floor = process.env.HISTORY === 'floor';
/**
 * HISTORY=store: the ingest and the recorder run unclocked, their batches kept instead of written; then the
 * same batches are written to a fresh SQLite file inside the clock, as the recorder would. What SQLite
 * alone takes of each dispatch, on the same core. With STORE=postgres they are written to a fresh
 * PostgreSQL schema (DATABASE_URL) instead, and the CPU its server processes spent on them is reported
 * beside this process's.
 */
const storeOnly = process.env.HISTORY === 'store';
/**
 * TRANSPORT=zlib-stream: each dispatch arrives as Discord sends it with transport compression, one zlib
 * stream for the connection, every message ended by a sync flush. Compressed before the clock (Discord's
 * work), inflated in it as @discordjs/ws does with node:zlib (`CompressionMethod.ZlibNative`): a write to
 * one inflate stream, its output gathered until the write's callback, then decoded and parsed.
 */
const zlibTransport = process.env.TRANSPORT === 'zlib-stream';
const target = process.env.STORE ?? 'sqlite';
const STATUSES = ['online', 'idle', 'dnd'] as const;
const TRACK_MS = 300_000;
const T0 = Date.UTC(2026, 10, 22, 12);

/** User n's presence in round r; r = -1 is how it is first seen, the end of a cycle before round 0. */
function dispatch(n: number, r: number, sequence: number): Buffer {
  const q = Math.floor(r / 4);
  const phase = r < 0 ? 3 : r % 4;
  const presence = realisticPresence(n, {
    song: q + 1,
    start: T0 + q * TRACK_MS + (phase === 1 ? 400 : 0),
    status: STATUSES[((phase >= 2 ? q + 1 : q) + 3) % 3],
    customText: `shipping things, day ${phase >= 3 ? q + 1 : q}`,
  });
  const json = JSON.stringify({
    op: 0,
    s: sequence,
    t: 'PRESENCE_UPDATE',
    d: {
      user: { id: benchUserId(n) },
      status: presence.status,
      activities: presence.activities,
      client_status: presence.client_status,
      guild_id: phase === 1 ? SECOND_GUILD : BENCH_GUILD,
    },
  });
  return Buffer.from(json);
}

const dir = mkdtempSync(join(tmpdir(), 'presently-bench-'));
const store = openSqliteStore({ kind: 'sqlite', path: join(dir, 'bench.db') });
type Batch = Parameters<HistoryStore['appendHistory']>;
const kept: Batch[] = [];
/** Unclocked, before the rounds; then in the rounds. */
let keptBefore = 0;
const keeping: HistoryStore = {
  appendHistory: async (...batch) => {
    kept.push(batch);
  },
  history: (...args) => store.history.history(...args),
  latest: (...args) => store.history.latest(...args),
  stats: (...args) => store.history.stats(...args),
  topTracks: (...args) => store.history.topTracks(...args),
  playDays: (...args) => store.history.playDays(...args),
  forget: (...args) => store.history.forget(...args),
};
serveBenchProcess(() => rmSync(dir, { recursive: true, force: true }));
const logger = pino({ level: 'warn' });
const registry = new PresenceRegistry({
  cdnUrl: 'https://cdn.discordapp.com',
  youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
});
const recorder =
  history || storeOnly ? new HistoryRecorder({ store: storeOnly ? keeping : store.history, logger }) : null;
if (recorder) registry.onChange(recorder.observe);
let changes = 0;
registry.onChange(() => changes++);
const ingest = new GatewayIngest({ registry, requestMembers: () => {}, logger });
let floorBytes = 0;
/** Bytes of the dispatches as they arrive, compressed or not, inside the clock. */
let wireBytes = 0;
const deflate = createDeflate();
const inflate = createInflate({ chunkSize: 65535, flush: constants.Z_SYNC_FLUSH });
let inflated: Buffer[] = [];
inflate.on('data', (chunk: Buffer) => inflated.push(chunk));

/** The frame as the connection's one deflate stream turns it into a message. */
function compressed(frame: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const take = (chunk: Buffer) => chunks.push(chunk);
    deflate.on('data', take);
    deflate.write(frame);
    deflate.flush(constants.Z_SYNC_FLUSH, () => {
      deflate.off('data', take);
      resolve(Buffer.concat(chunks));
    });
  });
}

/** A compressed message back to its JSON text's bytes, as @discordjs/ws inflates it. */
function decompressed(message: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    inflate.write(message, (error) => {
      if (error) reject(error);
      const text = Buffer.concat(inflated);
      inflated = [];
      resolve(text);
    });
  });
}
// A dispatch arrives as a text frame's bytes, which the gateway client decodes to a string and parses. Held
// as bytes until then, the rounds' payloads stay off the heap: strings made ahead would be young objects
// that the first collections inside the clock copy, a cost no gateway message has.
const handle = floor
  ? (frame: Buffer) => {
      floorBytes += JSON.stringify((JSON.parse(frame.toString()) as { d: unknown }).d).length;
    }
  : (frame: Buffer) => ingest.handle(JSON.parse(frame.toString()) as GatewayDispatchPayload, 0);
const historyRows = (db = store.db) =>
  (
    db
      .prepare('SELECT (SELECT count(*) FROM track_history) + (SELECT count(*) FROM status_history) AS n')
      .get() as { n: number }
  ).n;

// Everyone known first, as after start-up (the recorder reads each user's last entries once).
for (let n = 0; n < USERS; n++) handle(dispatch(n, -1, 0));
await setImmediate();
await recorder?.flush();
changes = 0;
keptBefore = kept.length;
const rowsBefore = historyRows();

// A round's payloads are made before its clock starts: making them is the simulated Discord's work, and
// holding all rounds at once would put hundreds of MB on the heap the service never has.
let seconds = 0;
let cpuMicros = 0;
let mainCpuMicros = 0;
for (let k = 0; k < UPDATES; ) {
  const round = Math.floor(k / USERS);
  const payloads: Buffer[] = [];
  for (; payloads.length < USERS && k < UPDATES; k++) {
    const frame = dispatch(k % USERS, round, k);
    payloads.push(zlibTransport ? await compressed(frame) : frame);
  }
  const cpuBefore = process.cpuUsage();
  const mainBefore = threadCpuMicros();
  const started = process.hrtime.bigint();
  for (let i = 0; i < payloads.length; i++) {
    const payload = payloads[i] as Buffer;
    wireBytes += payload.length;
    handle(zlibTransport ? await decompressed(payload) : payload);
    // The gateway hands over one message per event-loop turn; yielding now and then lets the recorder's
    // batch writes and timers run among the updates as they would.
    if (i % 100 === 99) await setImmediate();
  }
  // Inside the clock: what the round left waiting is written now, not by a timer while the next is made.
  await recorder?.flush();
  seconds += Number(process.hrtime.bigint() - started) / 1e9;
  mainCpuMicros += threadCpuMicros() - mainBefore;
  const cpu = process.cpuUsage(cpuBefore);
  cpuMicros += cpu.user + cpu.system;
}

let rows = historyRows() - rowsBefore;
let serverCpuMicros = 0;
if (storeOnly) ({ seconds, cpuMicros, rows, serverCpuMicros } = await writeKept(await freshStore()));
await recorder?.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
report({
  type: 'done',
  updatesPerSecond: UPDATES / seconds,
  cpuMicrosPerUpdate: cpuMicros / UPDATES,
  mainCpuMicrosPerUpdate: mainCpuMicros / UPDATES,
  serverCpuMicrosPerUpdate: serverCpuMicros / UPDATES,
  users: USERS,
  updates: UPDATES,
  changes,
  rows,
  floorBytes,
  wireBytesPerUpdate: wireBytes / UPDATES,
});

/**
 * The CPU this thread (the event loop's) has used, from the kernel's count of its time on a core: the
 * process's figure also holds the SQLite write thread's, V8's and libuv's.
 */
function threadCpuMicros(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]) / 1000;
}

/** Where the kept batches are written: the history store, its rows counted, its server's CPU. */
interface Target {
  history: HistoryStore;
  rows(): Promise<number>;
  /** CPU spent by the store's server processes so far (none for SQLite, which runs in this one). */
  serverCpuMicros(): Promise<number>;
  close(): Promise<void>;
}

async function freshStore(): Promise<Target> {
  if (target === 'postgres') {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('STORE=postgres needs DATABASE_URL');
    const fresh = await openPostgresStore(url);
    const backends = new PostgresBackends(url);
    return {
      history: fresh.history,
      rows: async () =>
        Number(
          (
            await fresh.pool.query<{ n: string }>(
              'SELECT (SELECT count(*) FROM track_history) + (SELECT count(*) FROM status_history) AS n',
            )
          ).rows[0]?.n,
        ),
      serverCpuMicros: () => backends.cpuMicros(),
      close: async () => {
        await backends.close();
        await fresh.close();
      },
    };
  }
  const fresh = openSqliteStore({ kind: 'sqlite', path: join(dir, 'store-only.db') });
  return {
    history: fresh.history,
    rows: async () => historyRows(fresh.db),
    serverCpuMicros: async () => 0,
    close: () => fresh.close(),
  };
}

/**
 * The kept batches written to a fresh store: those from before the rounds unclocked, then the rounds' in
 * the clock, a turn of the event loop each, as the recorder writes them.
 */
async function writeKept(
  fresh: Target,
): Promise<{ seconds: number; cpuMicros: number; rows: number; serverCpuMicros: number }> {
  try {
    for (const batch of kept.slice(0, keptBefore)) await fresh.history.appendHistory(...batch);
    const rowsBefore = await fresh.rows();
    const serverBefore = await fresh.serverCpuMicros();
    const cpuBefore = process.cpuUsage();
    const started = process.hrtime.bigint();
    for (const batch of kept.slice(keptBefore)) {
      await fresh.history.appendHistory(...batch);
      await setImmediate();
    }
    const cpu = process.cpuUsage(cpuBefore);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return {
      seconds,
      cpuMicros: cpu.user + cpu.system,
      serverCpuMicros: (await fresh.serverCpuMicros()) - serverBefore,
      rows: (await fresh.rows()) - rowsBefore,
    };
  } finally {
    await fresh.close();
  }
}
