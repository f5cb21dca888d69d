/**
 * The service under `npm run soak` (scripts/soak.ts): the app as main.ts starts it — configuration from
 * the environment, startApp, the real logger — in a process of its own, so that the memory measured is
 * the service's alone. Started with --expose-gc, it answers the driver over IPC:
 *
 * - `{type: 'memory'}` → its memory as it is, then after a full collection, what it holds (users, sockets,
 *   the database's size), and the longest its event loop was held up since the last question;
 * - every log line at LOG_LEVEL or above is sent to the driver as `{type: 'log', line}`.
 *
 * SIGTERM shuts it down as main.ts does (app.close) and exits 0. SOAK_SQLITE_CACHE_KIB caps SQLite's page
 * cache (see soak.ts).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { SqliteStore } from '../src/store/sqlite/index.js';

const send = (message: Record<string, unknown>) => process.send?.(message);
const config = loadConfig(process.env);
const logger = createLogger(config.logLevel, false, { write: (line: string) => send({ type: 'log', line }) });
const app = await startApp(config, { logger, onFatal: (code) => send({ type: 'fatal', code }) });
const db = app.store instanceof SqliteStore ? app.store.db : null;
if (db && process.env.SOAK_SQLITE_CACHE_KIB)
  db.pragma(`cache_size = -${Number(process.env.SOAK_SQLITE_CACHE_KIB)}`);
/** The database's size: its pages are what SQLite's page cache holds, up to its cap. */
const databaseBytes = () =>
  db
    ? Number(db.pragma('page_count', { simple: true })) * Number(db.pragma('page_size', { simple: true }))
    : 0;

// How long the event loop was held up: a stall here (a long collection, a slow fsync in SQLite's
// synchronous writes) holds every request up, and tells a slow answer's cause from the driver's.
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

process.on('message', (message: { type?: string }) => {
  if (message.type !== 'memory') return;
  const loopMaxMs = loop.max / 1e6;
  loop.reset();
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the soak service needs --expose-gc');
  const before = process.memoryUsage();
  gc();
  const after = process.memoryUsage();
  send({
    type: 'memory',
    rss: before.rss,
    heapUsed: before.heapUsed,
    rssAfterGc: after.rss,
    heapUsedAfterGc: after.heapUsed,
    heapTotalAfterGc: after.heapTotal,
    externalAfterGc: after.external,
    databaseBytes: databaseBytes(),
    loopMaxMs,
    users: app.view.size,
    sockets: app.sockets?.socketCount ?? 0,
  });
});
process.once('SIGTERM', () => {
  void app.close().finally(() => process.exit(0));
});
// The driver going away (a crash, ^C) must not leave the service behind.
process.once('disconnect', () => process.exit(0));
send({ type: 'ready', url: app.url });
