import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import type { GatewayDispatchPayload } from 'discord-api-types/v10';
import pino from 'pino';
import { GatewayIngest } from '../../src/discord/ingest.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { PresenceRegistry } from '../../src/presence/registry.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/youtube-music.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { report } from '../lib/child.js';
import { BENCH_GUILD, benchUserId, realisticPresence } from '../lib/workload.js';

/**
 * PRESENCE_UPDATE dispatches, as JSON text the way the gateway receives them, through parsing, the
 * ingest, normalization, the registry and (HISTORY=on) the history recorder writing to a SQLite file in
 * WAL mode, as in production. The mix per user: a new song, the same update from a second guild (start
 * times 400 ms off: no change), a status change.
 */
const USERS = 10_000;
const UPDATES = Number(process.env.UPDATES ?? 150_000);
const history = process.env.HISTORY === 'on';
const SECOND_GUILD = '400000000000000002';
const now = Date.UTC(2026, 10, 22, 12);

function dispatch(k: number): string {
  const n = k % USERS;
  const round = Math.floor(k / USERS);
  const phase = round % 3;
  const song = Math.floor(round / 3) * 2 + (phase === 0 ? 0 : 1);
  const presence = realisticPresence(n, song, now + round * 1_000 + (phase === 1 ? 400 : 0));
  if (phase === 2) presence.status = round % 2 === 0 ? 'idle' : 'online';
  return JSON.stringify({
    op: 0,
    s: k,
    t: 'PRESENCE_UPDATE',
    d: {
      user: { id: benchUserId(n) },
      guild_id: phase === 1 ? SECOND_GUILD : BENCH_GUILD,
      status: presence.status,
      activities: presence.activities,
      client_status: presence.client_status,
    },
  });
}

const payloads = Array.from({ length: UPDATES }, (_, k) => dispatch(k));
const dir = mkdtempSync(join(tmpdir(), 'presently-bench-'));
const store = openSqliteStore({ kind: 'sqlite', path: join(dir, 'bench.db') });
const logger = pino({ level: 'warn' });
const registry = new PresenceRegistry({
  cdnUrl: 'https://cdn.discordapp.com',
  youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
});
const recorder = history ? new HistoryRecorder({ store: store.history, logger }) : null;
if (recorder) registry.onChange(recorder.observe);
const ingest = new GatewayIngest({ registry, requestMembers: () => {}, logger });

// Users known first, as after start-up; then the measured updates.
for (let n = 0; n < USERS; n++) ingest.handle(JSON.parse(dispatch(n)) as GatewayDispatchPayload, 0);
await recorder?.flush();

const started = process.hrtime.bigint();
for (let k = 0; k < payloads.length; k++) {
  ingest.handle(JSON.parse(payloads[k] as string) as GatewayDispatchPayload, 0);
  // The gateway delivers in bursts between which the event loop runs: timers and batch writes too.
  if (k % 5_000 === 4_999) await setImmediate();
}
await recorder?.flush();
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const rows = (
  store.db
    .prepare('SELECT (SELECT count(*) FROM track_history) + (SELECT count(*) FROM status_history) AS n')
    .get() as { n: number }
).n;
await recorder?.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
report({ type: 'done', updatesPerSecond: UPDATES / seconds, rows, changes: registry.size });
