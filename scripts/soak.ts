/**
 * `npm run soak [-- --seconds 120]`: Presently under steady, mixed traffic for a while, to see that
 * nothing fails and that memory stays flat.
 *
 * The service runs as production runs it (scripts/soak-service.ts: startApp, a SQLite file, rate limits
 * on), in a process of its own, behind the simulated Discord (in this process) with `--users` members
 * whose presences keep changing: tracks, statuses, custom statuses, seeks, games, members leaving and
 * coming back. Meanwhile this process drives:
 *
 * - REST at `--rate` requests a second: presence reads (monitored and not), `@me`, history, stats, top
 *   tracks, cards (with options, and with If-None-Match), the version, and KV PUT / PATCH / DELETE with
 *   API keys obtained from the bot;
 * - `--sockets` Lanyard sockets, a quarter of them zlib_json, that subscribe (one id, many, all), change
 *   their subscriptions, heartbeat, and end after a while (closing, or dropping the connection) to be
 *   replaced by new ones;
 * - bot commands in DMs, every couple of seconds.
 *
 * Every `--sample` seconds it asks the service for its memory, as it is and after a full collection; the
 * verdict reads the samples after `--warmup` (start-up, caches filling). At the end it prints, and writes to `--out` (bench/notes/SOAK.md), the errors (any 5xx, any
 * status the contract does not give for the request, network errors, sockets closed by the server, bot
 * commands left unanswered, service log lines at error or fatal), latency percentiles per kind of
 * traffic, memory over time, and the verdict: memory is flat when the least-squares slope of RSS after a
 * full collection, over the samples after warm-up, is below RSS_SLOPE_LIMIT_MIB_PER_MIN, and that of the
 * heap below HEAP_SLOPE_LIMIT_MIB_PER_MIN. Exits 1 on any error or growth.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { inflateSync } from 'node:zlib';
import type { GatewayActivity } from 'discord-api-types/v10';
import { WebSocket } from 'ws';
import { customStatusActivity, gameActivity, spotifyActivity } from '../src/simulator/activities.js';
import { DiscordSimulator, type PresenceInput } from '../src/simulator/index.js';

/**
 * Growth per minute after warm-up past which memory is not flat. At the default load a minute is 9,000
 * requests and 2,400 presence changes: a heap that keeps 120 bytes per request, or 440 per change, grows a
 * MiB a minute. RSS is noisier (the allocator takes and returns memory in steps of a few MiB), hence its
 * wider limit.
 */
const RSS_SLOPE_LIMIT_MIB_PER_MIN = 2;
const HEAP_SLOPE_LIMIT_MIB_PER_MIN = 1;

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '180' },
    warmup: { type: 'string' },
    sample: { type: 'string', default: '5' },
    users: { type: 'string', default: '300' },
    rate: { type: 'string', default: '150' },
    changes: { type: 'string', default: '40' },
    sockets: { type: 'string', default: '40' },
    'sqlite-cache-kib': { type: 'string', default: '2000' },
    out: { type: 'string', default: 'bench/notes/SOAK.md' },
  },
});
const SECONDS = Number(args.seconds);
/** Start-up, the first profile fetches and caches filling: not what the verdict is about. */
const WARMUP_SECONDS = Number(args.warmup ?? Math.min(60, Math.round(SECONDS / 3)));
const SAMPLE_SECONDS = Number(args.sample);
const USERS = Number(args.users);
/** REST requests a second, all kinds together. */
const REST_RATE = Number(args.rate);
/** Presence changes a second, spread over the users. */
const CHANGES_PER_SECOND = Number(args.changes);
const SOCKETS = Number(args.sockets);
/**
 * SQLite's page cache holds the database's pages up to its cap: 16,000 KiB as better-sqlite3 builds it.
 * The soak's database grows by about a MiB a minute (history, play counts), so with that cap RSS would
 * grow with it for a quarter of an hour before it stops: bounded, but within minutes it reads as a leak.
 * The soak caps the cache lower, so it is full within the warm-up.
 */
const SQLITE_CACHE_KIB = Number(args['sqlite-cache-kib']);
const OUT = args.out;
for (const [name, value] of Object.entries({ seconds: SECONDS, sample: SAMPLE_SECONDS, users: USERS })) {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name}: a positive number, please`);
}
// 0 switches a kind of traffic off, to tell which one a growth comes with.
for (const [name, value] of Object.entries({
  warmup: WARMUP_SECONDS,
  'sqlite-cache-kib': SQLITE_CACHE_KIB,
  rate: REST_RATE,
  changes: CHANGES_PER_SECOND,
  sockets: SOCKETS,
})) {
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name}: a number, 0 or more, please`);
}
if (WARMUP_SECONDS >= SECONDS) throw new Error('--warmup must be shorter than --seconds');

const REPO = fileURLToPath(new URL('..', import.meta.url));
const MAIN_GUILD = '700000000000000001';
/** A quarter of the users are in this one too: Discord sends their every update twice. */
const SECOND_GUILD = '700000000000000002';
/** Users with an API key: KV writers, `@me` readers, bot command senders. Never churned. */
const KEY_HOLDERS = 20;
/** KV key names writers use: a bounded set, well under the 512-key limit. */
const KV_KEYS = 40;
/** Concurrent REST requests at most. */
const REST_CONCURRENCY = 16;
const SOCKET_HEARTBEAT_MS = 10_000;
const BOT_COMMAND_EVERY_MS = 2_000;
const BOT_REPLY_TIMEOUT_MS = 10_000;
/** Members leave and come back this often. */
const CHURN_EVERY_MS = 3_000;
const CHURN_ABSENCE_MS = 4_000;
/** A presence read of a user whose membership changed this recently may be a 404. */
const MEMBERSHIP_GRACE_MS = 3_000;
if (USERS <= KEY_HOLDERS) throw new Error(`--users: more than ${KEY_HOLDERS}, please`);

const userId = (n: number) => String(90_000_000_000_000_000n + BigInt(n));
const USER_IDS = Array.from({ length: USERS }, (_, n) => userId(n));
const UNMONITORED = '123456789012345678';

/** While true, the load runs; sockets that end are replaced. */
let running = false;

const random = (n: number) => Math.floor(Math.random() * n);
const pick = <T>(items: readonly T[]): T => items[random(items.length)] as T;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MIB = 1024 * 1024;
/** Other work on the machine shows in the latencies: the report says how busy it was. */
const loadAtStart = loadavg()[0]?.toFixed(2);

// ---- what is recorded ------------------------------------------------------------------------------

const latencies = new Map<string, number[]>();
const errors = new Map<string, { count: number; example: string }>();
const counters = { rest: 0, socketsOpened: 0, socketUpdates: 0, presenceChanges: 0, churned: 0, bot: 0 };
const serviceLogs = new Map<string, { level: number; count: number }>();

function recordLatency(kind: string, ms: number): void {
  const samples = latencies.get(kind);
  if (samples) samples.push(ms);
  else latencies.set(kind, [ms]);
}

function recordError(kind: string, example: string): void {
  const known = errors.get(kind);
  if (known) known.count++;
  else errors.set(kind, { count: 1, example: example.slice(0, 200) });
}

interface MemorySample {
  t: number;
  rss: number;
  heapUsed: number;
  rssAfterGc: number;
  heapUsedAfterGc: number;
  heapTotalAfterGc: number;
  externalAfterGc: number;
  databaseBytes: number;
  /** The longest the service's event loop, and this process's, was held up since the sample before. */
  loopMaxMs: number;
  driverLoopMaxMs: number;
  users: number;
  sockets: number;
  rest: number;
}
const samples: MemorySample[] = [];

// ---- the simulated Discord and its users -----------------------------------------------------------

const TRACKS = [
  { song: 'Midnight City', artists: ['M83'], album: "Hurry Up, We're Dreaming", ms: 243_000 },
  { song: 'Digital Love', artists: ['Daft Punk'], album: 'Discovery', ms: 301_000 },
  { song: 'Intro', artists: ['The xx'], album: 'xx', ms: 128_000 },
  { song: 'Nude', artists: ['Radiohead'], album: 'In Rainbows', ms: 255_000 },
  { song: 'Blinding Lights', artists: ['The Weeknd'], album: 'After Hours', ms: 200_000 },
  { song: 'Dreams', artists: ['Fleetwood Mac'], album: 'Rumours', ms: 257_000 },
  { song: 'Teardrop', artists: ['Massive Attack'], album: 'Mezzanine', ms: 330_000 },
] as const;
const STATUSES = ['online', 'online', 'online', 'idle', 'dnd', 'offline'] as const;

/** What each user is doing; a change moves one part of it. */
interface UserState {
  status: (typeof STATUSES)[number];
  track: number;
  trackStart: number;
  text: number;
  game: boolean;
}
const states = USER_IDS.map<UserState>((_, n) => ({
  status: 'online',
  track: n % TRACKS.length,
  trackStart: Date.now() - random(60_000),
  text: 0,
  game: n % 5 === 0,
}));

function presenceOf(n: number): PresenceInput {
  const state = states[n] as UserState;
  if (state.status === 'offline') return { status: 'offline', activities: [] };
  const track = TRACKS[state.track % TRACKS.length] as (typeof TRACKS)[number];
  const activities: GatewayActivity[] = [
    customStatusActivity({ text: `soaking, take ${state.text}`, emoji: { name: '🌊' } }),
    spotifyActivity({
      song: track.song,
      artists: track.artists,
      album: track.album,
      imageId: `ab67616d0000b273${state.track.toString(16).padStart(24, '0')}`,
      trackId: `soak${state.track.toString(36).padStart(18, '0')}`,
      start: state.trackStart,
      end: state.trackStart + track.ms,
      userId: userId(n),
    }),
  ];
  if (state.game) {
    activities.push(
      gameActivity({ name: 'Celeste', applicationId: '412600000000000000', start: state.trackStart }),
    );
  }
  return { status: state.status, client_status: { desktop: state.status }, activities };
}

/** One step of a user's life: a new track mostly, else a status, a custom status, a seek or a game. */
function change(n: number): void {
  const state = states[n] as UserState;
  const roll = Math.random();
  if (roll < 0.4) {
    state.track++;
    state.trackStart = Date.now();
  } else if (roll < 0.6) {
    state.status = pick(STATUSES);
  } else if (roll < 0.8) {
    state.text = (state.text + 1) % 10;
  } else if (roll < 0.9) {
    state.trackStart -= 5_000;
  } else {
    state.game = !state.game;
  }
}

const member = (n: number) => ({
  user: { id: userId(n), username: `soak_${n}`, global_name: `Soak ${n}` },
  presence: presenceOf(n),
});

const present = new Set(USER_IDS.map((_, n) => n));
const membershipChangedAt = new Map<string, number>();

// ---- the service -----------------------------------------------------------------------------------

interface ServiceMessage {
  type: string;
  [key: string]: unknown;
}

function startService(env: Record<string, string>): {
  child: ChildProcess;
  next: (type: string, timeoutMs?: number) => Promise<ServiceMessage>;
} {
  const child = fork(join(REPO, 'scripts/soak-service.ts'), [], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<string, Array<(message: ServiceMessage) => void>>();
  child.on('message', (message: ServiceMessage) => {
    if (message.type === 'log') {
      const line = String(message.line);
      let parsed: { level?: number; msg?: string } = {};
      try {
        parsed = JSON.parse(line);
      } catch {}
      const key = parsed.msg ?? line.trim();
      const seen = serviceLogs.get(key);
      if (seen) seen.count++;
      else serviceLogs.set(key, { level: parsed.level ?? 0, count: 1 });
      if ((parsed.level ?? 0) >= 50) recordError('service logged an error', line);
      return;
    }
    if (message.type === 'fatal') recordError('service fatal', JSON.stringify(message));
    waiting.get(message.type)?.shift()?.(message);
  });
  const next = (type: string, timeoutMs = 30_000) =>
    new Promise<ServiceMessage>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the service sent no "${type}" in ${timeoutMs} ms`)),
        timeoutMs,
      );
      const list = waiting.get(type) ?? [];
      list.push((message) => {
        clearTimeout(timer);
        resolve(message);
      });
      waiting.set(type, list);
    });
  return { child, next };
}

// ---- REST ------------------------------------------------------------------------------------------

interface Planned {
  kind: string;
  path: string;
  init?: RequestInit;
  /** Statuses the contract gives this request. */
  ok: readonly number[];
  /** The user whose presence is read: a 404 is fine if they just left. */
  user?: string;
  etagKey?: string;
}

const CARD_OPTIONS = ['', '?theme=light', '?hideMusic=true', '?bg=0d1117&borderRadius=20', '?animated=false'];
const etags = new Map<string, string>();

function presentUser(): string {
  for (let tries = 0; tries < 20; tries++) {
    const n = random(USERS);
    if (present.has(n)) return userId(n);
  }
  return userId(0);
}

function plan(keys: readonly string[]): Planned {
  const roll = random(100);
  const user = presentUser();
  const key = pick(keys);
  const auth = { authorization: key };
  if (roll < 40) return { kind: 'GET presence', path: `/v1/users/${user}`, ok: [200], user };
  if (roll < 43) return { kind: 'GET presence (not monitored)', path: `/v1/users/${UNMONITORED}`, ok: [404] };
  if (roll < 48) return { kind: 'GET @me', path: '/v1/users/@me', init: { headers: auth }, ok: [200] };
  if (roll < 56) return { kind: 'GET history', path: `/v1/users/${user}/history`, ok: [200] };
  if (roll < 62) return { kind: 'GET stats', path: `/v1/users/${user}/stats`, ok: [200] };
  if (roll < 67)
    return { kind: 'GET top-tracks', path: `/v1/users/${user}/top-tracks?limit=${random(60)}`, ok: [200] };
  if (roll < 77) {
    const path = `/v1/users/${user}/card.svg${pick(CARD_OPTIONS)}`;
    const etag = etags.get(path);
    const revalidate = etag !== undefined && Math.random() < 0.5;
    return {
      kind: revalidate ? 'GET card (If-None-Match)' : 'GET card',
      path,
      init: revalidate ? { headers: { 'if-none-match': etag } } : {},
      ok: [200, 304],
      etagKey: path,
    };
  }
  if (roll < 79) return { kind: 'GET version', path: '/v1/version', ok: [200] };
  if (roll < 88) {
    return {
      kind: 'PUT kv',
      path: `/v1/users/@me/kv/soak_${random(KV_KEYS)}`,
      init: { method: 'PUT', headers: auth, body: 'x'.repeat(1 + random(300)) },
      ok: [204],
    };
  }
  if (roll < 94) {
    const values = Object.fromEntries(
      Array.from({ length: 1 + random(5) }, () => [`soak_${random(KV_KEYS)}`, `v${random(1e6)}`]),
    );
    return {
      kind: 'PATCH kv',
      path: '/v1/users/@me/kv',
      init: {
        method: 'PATCH',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(values),
      },
      ok: [204],
    };
  }
  return {
    kind: 'DELETE kv',
    path: `/v1/users/@me/kv/soak_${random(KV_KEYS)}`,
    init: { method: 'DELETE', headers: auth },
    ok: [204],
  };
}

async function request(base: string, planned: Planned): Promise<void> {
  const started = performance.now();
  try {
    const response = await fetch(`${base}${planned.path}`, planned.init);
    const body = await response.arrayBuffer();
    recordLatency(planned.kind, performance.now() - started);
    counters.rest++;
    const etag = response.headers.get('etag');
    if (planned.etagKey && etag) etags.set(planned.etagKey, etag);
    if (planned.ok.includes(response.status)) return;
    const left = planned.user ? membershipChangedAt.get(planned.user) : undefined;
    if (response.status === 404 && left !== undefined && Date.now() - left < MEMBERSHIP_GRACE_MS) return;
    const text = Buffer.from(body).toString('utf8').slice(0, 150);
    recordError(
      response.status >= 500 ? `HTTP ${response.status}` : `unexpected status (${planned.kind})`,
      `${planned.init?.method ?? 'GET'} ${planned.path} → ${response.status} ${text}`,
    );
  } catch (error) {
    recordError('HTTP request failed', `${planned.kind} ${planned.path}: ${(error as Error).message}`);
  }
}

/** REST_CONCURRENCY loops sharing one schedule of REST_RATE requests a second. */
async function driveRest(base: string, keys: readonly string[], until: () => boolean): Promise<void> {
  if (REST_RATE === 0) return;
  const started = performance.now();
  let issued = 0;
  const worker = async () => {
    while (!until()) {
      const due = started + (issued++ * 1000) / REST_RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (until()) return;
      await request(base, plan(keys));
    }
  };
  await Promise.all(Array.from({ length: REST_CONCURRENCY }, worker));
}

// ---- sockets ---------------------------------------------------------------------------------------

const liveSockets = new Set<WebSocket>();

/** One socket's life: connect, subscribe, change subscriptions, heartbeat, end; then the next one. */
function runSocket(base: string, index: number): void {
  if (!running) return;
  const compressed = index % 4 === 0;
  const url = `${base.replace(/^http/, 'ws')}/socket${compressed ? '?compression=zlib_json' : ''}`;
  const opened = performance.now();
  const ws = new WebSocket(url);
  liveSockets.add(ws);
  counters.socketsOpened++;
  const timers: NodeJS.Timeout[] = [];
  const initSentAt: number[] = [];
  let ending = false;
  const send = (frame: unknown) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  const subscribe = () => {
    const mode = index % 10;
    initSentAt.push(performance.now());
    if (mode === 0) send({ op: 2, d: { subscribe_to_all: true } });
    else if (mode < 4) send({ op: 2, d: { subscribe_to_id: presentUser() } });
    else send({ op: 2, d: { subscribe_to_ids: Array.from({ length: 10 + random(40) }, presentUser) } });
  };
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    let frame: { op?: number; t?: string };
    try {
      frame = JSON.parse(isBinary ? inflateSync(data).toString('utf8') : data.toString('utf8'));
    } catch (error) {
      recordError('socket frame not readable', (error as Error).message);
      return;
    }
    if (frame.op === 1) {
      recordLatency(compressed ? 'socket hello (zlib)' : 'socket hello', performance.now() - opened);
      subscribe();
      timers.push(setInterval(() => send({ op: 3 }), SOCKET_HEARTBEAT_MS));
      // Subscriptions change now and then: some ids go, others come.
      timers.push(
        setInterval(() => {
          if (Math.random() < 0.5)
            send({ op: 4, d: { unsubscribe_from_ids: [presentUser(), presentUser()] } });
          else subscribe();
        }, 3_000 + random(5_000)),
      );
      // Then it ends: mostly closing, sometimes the connection just drops.
      timers.push(
        setTimeout(() => {
          ending = true;
          if (Math.random() < 0.2) ws.terminate();
          else ws.close(1000);
        }, 15_000 + random(30_000)),
      );
    } else if (frame.t === 'INIT_STATE') {
      const sentAt = initSentAt.shift();
      if (sentAt !== undefined) recordLatency('socket subscribe → INIT_STATE', performance.now() - sentAt);
    } else if (frame.t === 'PRESENCE_UPDATE') {
      counters.socketUpdates++;
    }
  });
  ws.on('error', (error) => {
    if (!ending && running) recordError('socket error', error.message);
  });
  ws.on('close', (code, reason) => {
    for (const timer of timers) clearTimeout(timer);
    liveSockets.delete(ws);
    if (!ending && running) recordError('socket closed by the server', `${code} ${reason.toString()}`);
    setTimeout(() => runSocket(base, index), random(500));
  });
}

// ---- the bot ---------------------------------------------------------------------------------------

async function obtainKey(simulator: DiscordSimulator, user: string): Promise<string> {
  const sent = simulator.sendMessage({ author: user, content: '?apikey' });
  const reply = await simulator.waitForMessage(
    (message) => message.message_reference?.message_id === sent.id,
    BOT_REPLY_TIMEOUT_MS,
  );
  const key = /prs_[A-Za-z0-9_-]{43}/.exec(reply.content)?.[0];
  if (!key) throw new Error(`no key in the bot's reply: ${reply.content}`);
  return key;
}

async function botCommand(simulator: DiscordSimulator, user: string): Promise<void> {
  const content = pick(['?kv', `?get soak_${random(KV_KEYS)}`, `?set soak_bot ${random(1e6)}`, '?help']);
  const started = performance.now();
  const sent = simulator.sendMessage({ author: user, content });
  try {
    await simulator.waitForMessage(
      (message) => message.message_reference?.message_id === sent.id,
      BOT_REPLY_TIMEOUT_MS,
    );
    recordLatency('bot command → reply', performance.now() - started);
    counters.bot++;
  } catch {
    recordError('bot command unanswered', content);
  }
}

// ---- figures ---------------------------------------------------------------------------------------

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n;
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n;
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0);
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

const mib = (bytes: number) => (bytes / MIB).toFixed(1);
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

// ---- the run ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 41_250 });
  await simulator.start();
  simulator.createGuild({ id: MAIN_GUILD, name: 'Soak', members: USER_IDS.map((_, n) => member(n)) });
  simulator.createGuild({
    id: SECOND_GUILD,
    name: 'Soak 2',
    members: USER_IDS.slice(0, Math.ceil(USERS / 4)).map((_, n) => member(n)),
  });
  const dir = mkdtempSync(join(tmpdir(), 'presently-soak-'));
  const service = startService({
    DISCORD_TOKEN: simulator.token,
    DISCORD_API_URL: simulator.apiUrl,
    DISCORD_CDN_URL: simulator.cdnUrl,
    DATABASE_URL: `sqlite:${join(dir, 'soak.db')}`,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    SOAK_SQLITE_CACHE_KIB: String(SQLITE_CACHE_KIB),
    // Limits on, as in production, but far above this load: their counters are part of what is soaked.
    RATE_LIMIT_READ: String(REST_RATE * 60 * 10),
    RATE_LIMIT_WRITE: String(REST_RATE * 60 * 10),
    SOCKETS_PER_IP: String(SOCKETS * 4),
  });
  let serviceExited = false;
  service.child.once('exit', (code, signal) => {
    serviceExited = true;
    if (running) recordError('service exited', `code ${code}, signal ${signal}`);
  });
  const { url: base } = (await service.next('ready', 60_000)) as unknown as { url: string };
  process.stdout.write(`soak: service at ${base}, ${USERS} users; waiting for every presence\n`);
  for (const deadline = Date.now() + 60_000; ; await sleep(200)) {
    const status = (await fetch(`${base}/v1/users/${userId(USERS - 1)}`)).status;
    if (status === 200) break;
    if (Date.now() > deadline) throw new Error('the users did not arrive within a minute');
  }
  const keyHolders = USER_IDS.slice(0, KEY_HOLDERS);
  const keys = await Promise.all(keyHolders.map((user) => obtainKey(simulator, user)));
  process.stdout.write(
    `soak: ${SECONDS} s (warm-up ${WARMUP_SECONDS} s), ${REST_RATE} REST req/s, ${SOCKETS} sockets, ` +
      `${CHANGES_PER_SECOND} presence changes/s; memory every ${SAMPLE_SECONDS} s\n`,
  );

  const started = Date.now();
  const endsAt = started + SECONDS * 1000;
  running = true;
  const timers: NodeJS.Timeout[] = [];

  // Presence changes, as a steady stream in ticks of 100 ms.
  let owed = 0;
  timers.push(
    setInterval(() => {
      owed += CHANGES_PER_SECOND / 10;
      for (; owed >= 1; owed--) {
        const n = random(USERS);
        if (!present.has(n)) continue;
        change(n);
        simulator.setPresence(userId(n), presenceOf(n));
        counters.presenceChanges++;
      }
    }, 100),
  );
  // Members leave and come back (never the key holders: their `@me` must keep answering 200).
  timers.push(
    setInterval(() => {
      const n = KEY_HOLDERS + random(USERS - KEY_HOLDERS);
      if (!present.has(n)) return;
      const id = userId(n);
      present.delete(n);
      membershipChangedAt.set(id, Date.now());
      simulator.removeMember(MAIN_GUILD, id);
      if (n < USERS / 4) simulator.removeMember(SECOND_GUILD, id);
      counters.churned++;
      setTimeout(() => {
        simulator.addMember(MAIN_GUILD, member(n));
        if (n < USERS / 4) simulator.addMember(SECOND_GUILD, member(n));
        membershipChangedAt.set(id, Date.now());
        setTimeout(() => present.add(n), MEMBERSHIP_GRACE_MS);
      }, CHURN_ABSENCE_MS);
    }, CHURN_EVERY_MS),
  );
  timers.push(setInterval(() => void botCommand(simulator, pick(keyHolders)), BOT_COMMAND_EVERY_MS));
  for (let i = 0; i < SOCKETS; i++) setTimeout(() => runSocket(base, i), random(2_000));
  const rest = driveRest(base, keys, () => Date.now() >= endsAt);

  // Memory: every SAMPLE_SECONDS from the start (the warm-up shows in the table, not in the verdict).
  const driverLoop = monitorEventLoopDelay({ resolution: 10 });
  driverLoop.enable();
  let lastRest = 0;
  const sample = async () => {
    const t = (Date.now() - started) / 1000;
    service.child.send({ type: 'memory' });
    const memory = (await service.next('memory')) as unknown as Omit<
      MemorySample,
      't' | 'rest' | 'driverLoopMaxMs'
    >;
    const driverLoopMaxMs = driverLoop.max / 1e6;
    driverLoop.reset();
    samples.push({ ...memory, t, rest: counters.rest, driverLoopMaxMs });
    const rate = (counters.rest - lastRest) / SAMPLE_SECONDS;
    lastRest = counters.rest;
    const errorCount = [...errors.values()].reduce((sum, e) => sum + e.count, 0);
    process.stdout.write(
      `${t.toFixed(0).padStart(5)} s  rss ${mib(memory.rss)} MiB (${mib(memory.rssAfterGc)} after GC)  ` +
        `heap ${mib(memory.heapUsedAfterGc)} MiB  db ${mib(memory.databaseBytes)} MiB  ${rate.toFixed(0)} req/s  ${memory.sockets} sockets  ` +
        `${counters.socketUpdates} updates  ${errorCount} errors${t < WARMUP_SECONDS ? '  (warm-up)' : ''}\n`,
    );
  };
  while (Date.now() < endsAt) {
    await sleep(Math.min(SAMPLE_SECONDS * 1000, endsAt - Date.now()));
    if (serviceExited) break;
    await sample();
  }
  await rest;
  running = false;
  for (const timer of timers) clearInterval(timer);
  for (const ws of liveSockets) ws.close(1000);

  // A shutdown under load is part of the soak: it must drain and exit 0.
  const stopping = Date.now();
  const exit = new Promise<number | null>((resolve) => {
    if (serviceExited) resolve(service.child.exitCode);
    else service.child.once('exit', (code) => resolve(code));
  });
  service.child.kill('SIGTERM');
  const exitCode = await exit;
  const shutdownMs = Date.now() - stopping;
  if (exitCode !== 0) recordError('service shutdown', `exit code ${exitCode}`);
  await simulator.stop();
  rmSync(dir, { recursive: true, force: true });

  const report = buildReport({ base, exitCode, shutdownMs, elapsed: (Date.now() - started) / 1000 });
  process.stdout.write(`\n${report.text}`);
  const out = join(REPO, OUT);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, report.text);
  process.stdout.write(`\nreport written to ${OUT}\n`);
  process.exit(report.passed ? 0 : 1);
}

function buildReport(run: { base: string; exitCode: number | null; shutdownMs: number; elapsed: number }): {
  text: string;
  passed: boolean;
} {
  const after = samples.filter((s) => s.t >= WARMUP_SECONDS);
  const perMinute = (pick: (s: MemorySample) => number) =>
    after.length < 3 ? Number.NaN : slope(after.map((s) => [s.t / 60, pick(s) / MIB] as const));
  const rssSlope = perMinute((s) => s.rssAfterGc);
  const heapSlope = perMinute((s) => s.heapUsedAfterGc);
  const rawRssSlope = perMinute((s) => s.rss);
  const longest = (stall: (s: MemorySample) => number) => {
    const worst = after.reduce<MemorySample | undefined>(
      (a, b) => (a && stall(a) >= stall(b) ? a : b),
      undefined,
    );
    return worst
      ? `${stall(worst).toFixed(0)} ms (in the ${SAMPLE_SECONDS} s before t = ${worst.t.toFixed(0)} s)`
      : '–';
  };
  const flat = rssSlope < RSS_SLOPE_LIMIT_MIB_PER_MIN && heapSlope < HEAP_SLOPE_LIMIT_MIB_PER_MIN;
  const errorCount = [...errors.values()].reduce((sum, e) => sum + e.count, 0);
  const passed = flat && errorCount === 0;
  const first = after[0];
  const last = after.at(-1);

  const lines: string[] = [];
  const row = (cells: readonly (string | number)[]) => lines.push(`| ${cells.join(' | ')} |`);
  lines.push(
    '# Soak',
    '',
    `\`npm run soak -- --seconds ${SECONDS}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
      `Node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}); ` +
      `the service, the simulated Discord and the load share them (load average ${loadAtStart} at the ` +
      `start, ${loadavg()[0]?.toFixed(2)} at the end).`,
    '',
    `**Verdict: ${passed ? 'pass' : 'FAIL'}** — ${errorCount} errors; memory ${flat ? 'flat' : 'GROWING'} ` +
      `(RSS after GC ${rssSlope >= 0 ? '+' : ''}${rssSlope.toFixed(2)} MiB/min, limit ${RSS_SLOPE_LIMIT_MIB_PER_MIN}; ` +
      `heap ${heapSlope >= 0 ? '+' : ''}${heapSlope.toFixed(2)} MiB/min, limit ${HEAP_SLOPE_LIMIT_MIB_PER_MIN}; ` +
      `least squares over the ${after.length} samples after the ${WARMUP_SECONDS} s warm-up).`,
    '',
    '## Load',
    '',
    `- ${USERS} users (a quarter in two guilds), ${counters.presenceChanges.toLocaleString('en-US')} presence changes ` +
      `(${CHANGES_PER_SECOND}/s), ${counters.churned} members left and came back`,
    `- ${counters.rest.toLocaleString('en-US')} REST requests (${(counters.rest / run.elapsed).toFixed(0)}/s, ` +
      `target ${REST_RATE}/s), ${KEY_HOLDERS} API keys from the bot`,
    `- ${SOCKETS} sockets at a time (a quarter zlib_json), ${counters.socketsOpened} opened in all, ` +
      `${counters.socketUpdates.toLocaleString('en-US')} PRESENCE_UPDATE frames received`,
    `- ${counters.bot} bot commands answered`,
    `- SQLite page cache capped at ${SQLITE_CACHE_KIB.toLocaleString('en-US')} KiB (\`--sqlite-cache-kib\`; production: 16,000), ` +
      `database ${last ? mib(last.databaseBytes) : '–'} MiB at the end`,
    `- shutdown under load (SIGTERM): exit code ${run.exitCode} after ${run.shutdownMs} ms`,
    '',
    '## Errors',
    '',
  );
  if (errors.size === 0)
    lines.push('None: no 5xx, no unexpected status, no socket closed by the server, no unanswered command.');
  else {
    row(['kind', 'count', 'first seen']);
    row(['---', '---', '---']);
    for (const [kind, { count, example }] of errors)
      row([kind, count, `\`${example.replaceAll('|', '\\|')}\``]);
  }
  const logged = [...serviceLogs].sort((a, b) => b[1].count - a[1].count);
  if (logged.length > 0) {
    lines.push('', 'Service log lines at warn or above:', '');
    for (const [msg, { level, count }] of logged.slice(0, 10))
      lines.push(`- ${count} × level ${level}: ${msg}`);
  }
  lines.push('', '## Latency (ms)', '');
  row(['kind', 'count', 'p50', 'p90', 'p99', 'max']);
  row(['---', '---:', '---:', '---:', '---:', '---:']);
  for (const [kind, values] of [...latencies].sort((a, b) => b[1].length - a[1].length)) {
    row([
      kind,
      values.length,
      ms(quantile(values, 0.5)),
      ms(quantile(values, 0.9)),
      ms(quantile(values, 0.99)),
      ms(Math.max(...values)),
    ]);
  }
  lines.push(
    '',
    '## Memory (MiB)',
    '',
    `After warm-up: RSS after GC ${first ? mib(first.rssAfterGc) : '–'} → ${last ? mib(last.rssAfterGc) : '–'}, ` +
      `heap ${first ? mib(first.heapUsedAfterGc) : '–'} → ${last ? mib(last.heapUsedAfterGc) : '–'}; ` +
      `RSS as sampled (before the collection) ${rawRssSlope >= 0 ? '+' : ''}${rawRssSlope.toFixed(2)} MiB/min. ` +
      `Longest event-loop stall after warm-up (the collection each sample forces included): the service's ${longest((s) => s.loopMaxMs)}, ` +
      `this process's (the load's) ${longest((s) => s.driverLoopMaxMs)}.`,
    '',
  );
  row([
    't (s)',
    'RSS',
    'RSS after GC',
    'heap used after GC',
    'heap total',
    'external',
    'database',
    'loop stall (service / driver, ms)',
    'sockets',
    'users',
    '',
  ]);
  row(['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---']);
  // At most 40 rows: each stands for the samples since the row before, with the longest stall among them.
  const step = Math.max(1, Math.ceil(samples.length / 40));
  let stalls = { service: 0, driver: 0 };
  samples.forEach((s, i) => {
    stalls = {
      service: Math.max(stalls.service, s.loopMaxMs),
      driver: Math.max(stalls.driver, s.driverLoopMaxMs),
    };
    if (i % step !== 0 && i !== samples.length - 1) return;
    const stall = `${stalls.service.toFixed(0)} / ${stalls.driver.toFixed(0)}`;
    stalls = { service: 0, driver: 0 };
    row([
      s.t.toFixed(0),
      mib(s.rss),
      mib(s.rssAfterGc),
      mib(s.heapUsedAfterGc),
      mib(s.heapTotalAfterGc),
      mib(s.externalAfterGc),
      mib(s.databaseBytes),
      stall,
      s.sockets,
      s.users,
      s.t < WARMUP_SECONDS ? 'warm-up' : '',
    ]);
  });
  lines.push('');
  return { text: lines.join('\n'), passed };
}

await main();
