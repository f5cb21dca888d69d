import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { type BenchChild, type Message, startChild } from '../lib/child.js';
import { MEMORY_FLAGS, type MemoryUsage, memoryOf } from '../lib/memory.js';
import { POPULATION_MIX } from '../lib/population.js';
import type { Row } from '../lib/results.js';
import { spreadIdsScript } from '../lib/spread-ids.js';
import { formatNumber, median, spread } from '../lib/stats.js';
import { type WrkLoad, wrk } from '../lib/wrk.js';

/** BENCH_MEMORY_USERS: fewer users, to try the scenario out (the rows say how many). */
const USERS = Number(process.env.BENCH_MEMORY_USERS ?? 1_000_000);
/** The read rate's baseline: the same service holding this many users. */
const FEW = 1_000;
/** Runs one after the other, each with fresh processes (two full ones at once would share the cores). */
const RUNS = 2;
/** A million users take a few GB of heap; the limit leaves the collector room, the machine has more. */
const HEAP_MB = 12_288;
const FLAGS = [...MEMORY_FLAGS, `--max-old-space-size=${HEAP_MB}`];
const LOAD: WrkLoad = { connections: 100, threads: 2, seconds: 4 };
const WARMUP: WrkLoad = { ...LOAD, seconds: 3 };
/**
 * Rounds per side. Rounds of one process vary a lot (stalls of a few hundred ms come and go; the rate of a
 * process drifts over minutes), so the sides take turns, round after round, and each figure is a median.
 */
const ROUNDS = 5;
const KB = 1_000;
const FILL_TIMEOUT_MS = 900_000;

interface Filled extends Message {
  seconds: number;
  cpuSeconds: number;
  size: number;
  bodyBytes: number;
}

interface Side {
  child: BenchChild;
  url: string;
  script: string;
  rates: number[];
  p50: number[];
  p99: number[];
  cpuPerRequest: number[];
}

interface Run {
  before: MemoryUsage;
  few: MemoryUsage;
  full: MemoryUsage;
  /** A second process holding FEW users, reads spread over them: the baseline. */
  small: Side;
  /** The full process, reads spread over all its users. */
  all: Side;
  /** The full process, reads spread over its first FEW users only. */
  hot: Side;
  /** Bare node:http holding USERS bodies in a Map, reads spread over all, and the same holding FEW. */
  bareAll: Side;
  bareFew: Side;
  /** The same with the bodies off the JS heap (bare-arena-http). */
  arenaAll: Side;
  arenaFew: Side;
  fewBody: number;
  fullBody: number;
  fill: Filled;
  /** ns per registry.body of a random user: the full process over all, the small one over its FEW. */
  lookups: { all: number; small: number };
}

/** Look-ups per round, and rounds, of the registry's part of a read alone (`lookups`). */
const LOOKUPS = 262_144;
const LOOKUP_ROUNDS = 9;

/** The registry's part of a read alone, in-process (populated-service `lookups`): ns per read. */
async function lookups(child: BenchChild, users: number): Promise<number> {
  child.send({ type: 'lookups', users, count: LOOKUPS, rounds: LOOKUP_ROUNDS });
  return (await child.next<Message & { nanoseconds: number }>('lookups', FILL_TIMEOUT_MS)).nanoseconds;
}

async function fill(child: BenchChild, from: number, to: number): Promise<Filled> {
  child.send({ type: 'fill', from, to });
  return child.next<Filled>('filled', FILL_TIMEOUT_MS);
}

/**
 * With BENCH_PROFILE_DIR=<dir>, the first run's full process writes a heap snapshot with FEW users
 * (before-fill) and one with USERS (after-fill), a CPU profile of filling in between (fill), and one of
 * a last round of reads spread over all its users (reads), for bench/heap-summary.ts and a profile viewer.
 * A snapshot of a million users is several GB: profile with BENCH_MEMORY_USERS=100000 or so.
 */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;

async function heapSnapshot(child: BenchChild, name: string): Promise<void> {
  child.send({ type: 'heap-snapshot', name });
  await child.next('heap-snapshot', FILL_TIMEOUT_MS);
}

/** Runs `work` with the child's CPU profiled into <BENCH_PROFILE_DIR>/<name>.cpuprofile. */
async function cpuProfiled<T>(child: BenchChild, name: string, work: () => Promise<T>): Promise<T> {
  child.send({ type: 'cpu-profile-start' });
  await child.next('cpu-profile-started');
  const result = await work();
  child.send({ type: 'cpu-profile-stop', name });
  await child.next('cpu-profile');
  return result;
}

/** Bare node:http holding `users` bodies of `bodyBytes`: in a Map (bare-map-http) or off the heap. */
async function startBare(
  children: BenchChild[],
  server: 'bare-map-http' | 'bare-arena-http',
  users: number,
  bodyBytes: number,
): Promise<{ child: BenchChild; url: string }> {
  const child = startChild(
    server,
    [],
    { USERS: String(users), BODY_BYTES: String(Math.round(bodyBytes)) },
    FLAGS,
  );
  children.push(child);
  const { url } = await child.next<Message & { url: string }>('ready', FILL_TIMEOUT_MS);
  return { child, url };
}

/** A service (populated-service) with a simulated Discord of its own, in another process. */
async function start(children: BenchChild[]): Promise<{ child: BenchChild; url: string }> {
  const discord = startChild('discord', [], { MEMBERS: '1' });
  children.push(discord);
  const endpoints = await discord.next<Message & { token: string; apiUrl: string; cdnUrl: string }>('ready');
  const env = { TOKEN: endpoints.token, API_URL: endpoints.apiUrl, CDN_URL: endpoints.cdnUrl };
  const child = startChild('populated-service', [], env, FLAGS);
  children.push(child);
  const { url } = await child.next<Message & { url: string }>('ready');
  return { child, url };
}

const side = (child: BenchChild, url: string, users: number): Side => ({
  child,
  url,
  script: spreadIdsScript(users),
  rates: [],
  p50: [],
  p99: [],
  cpuPerRequest: [],
});

async function measure(on: Side): Promise<void> {
  const cpuBefore = await on.child.cpuMicros();
  const load = await wrk(on.url, LOAD, on.script);
  const cpu = (await on.child.cpuMicros()) - cpuBefore;
  if (load.errors > 0)
    throw new Error(`memory: ${load.errors} errors from ${on.child.name} at ${on.url} (${load.errorKinds})`);
  on.rates.push(load.requestsPerSecond);
  on.p50.push(load.p50Ms);
  on.p99.push(load.p99Ms);
  on.cpuPerRequest.push(cpu / load.requests);
}

/**
 * One run: a process's memory before filling, with FEW users and with USERS; then a second process with
 * FEW users, and reads taking turns between it and the full one (over all users, and over its first FEW).
 */
async function once(profile: boolean): Promise<Run> {
  const children: BenchChild[] = [];
  const sides: Side[] = [];
  try {
    const full = await start(children);
    const before = await memoryOf(full.child);
    const fewFill = await fill(full.child, 0, FEW);
    const few = await memoryOf(full.child);
    if (profile) await heapSnapshot(full.child, 'before-fill');
    const filling = () => fill(full.child, FEW, USERS);
    const rest = profile ? await cpuProfiled(full.child, 'fill', filling) : await filling();
    if (profile) await heapSnapshot(full.child, 'after-fill');
    const fullMemory = await memoryOf(full.child);
    if (rest.size < USERS) throw new Error(`memory: only ${rest.size} users are monitored`);
    const small = await start(children);
    await fill(small.child, 0, FEW);
    const fullBody = (fewFill.bodyBytes + rest.bodyBytes) / USERS;
    const bareAll = await startBare(children, 'bare-map-http', USERS, fullBody);
    const bareFew = await startBare(children, 'bare-map-http', FEW, fullBody);
    const arenaAll = await startBare(children, 'bare-arena-http', USERS, fullBody);
    const arenaFew = await startBare(children, 'bare-arena-http', FEW, fullBody);

    const run: Run = {
      before,
      few,
      full: fullMemory,
      small: side(small.child, small.url, FEW),
      all: side(full.child, full.url, USERS),
      hot: side(full.child, full.url, FEW),
      bareAll: side(bareAll.child, bareAll.url, USERS),
      bareFew: side(bareFew.child, bareFew.url, FEW),
      arenaAll: side(arenaAll.child, arenaAll.url, USERS),
      arenaFew: side(arenaFew.child, arenaFew.url, FEW),
      fewBody: fewFill.bodyBytes / FEW,
      fullBody,
      fill: rest,
      lookups: { all: 0, small: 0 },
    };
    sides.push(run.small, run.all, run.hot, run.bareAll, run.bareFew, run.arenaAll, run.arenaFew);
    for (const each of sides) await wrk(each.url, WARMUP, each.script);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < sides.length; i++) await measure(sides[(round + i) % sides.length] as Side);
    }
    if (profile) await cpuProfiled(full.child, 'reads', () => wrk(full.url, LOAD, run.all.script));
    run.lookups = { all: await lookups(full.child, USERS), small: await lookups(small.child, FEW) };
    return run;
  } finally {
    for (const each of sides) rmSync(dirname(each.script), { recursive: true, force: true });
    for (const child of children.reverse()) await child.stop();
  }
}

const kb = (bytes: number) => `${formatNumber(bytes / KB)} KB`;
const mb = (bytes: number) => `${formatNumber(bytes / 1e6)} MB`;

/**
 * 1,000,000 monitored users with varied, realistic presences in one service process (startApp), filled
 * through the registry's domain API rather than the simulated gateway (a million members through the
 * simulator would mostly measure the simulator). RSS and heap per user settled after full GCs, and the REST read
 * rate with reads spread over every user, against the same service holding FEW users.
 */
export async function memory(): Promise<Row[]> {
  const runs: Run[] = [];
  for (let run = 0; run < RUNS; run++) runs.push(await once(PROFILE_DIR !== undefined && run === 0));

  const rssPerUser = runs.map((run) => (run.full.rss - run.before.rss) / USERS);
  const heapPerUser = runs.map((run) => (run.full.heapUsed - run.before.heapUsed) / USERS);
  const buffersPerUser = runs.map((run) => (run.full.arrayBuffers - run.before.arrayBuffers) / USERS);
  const rssAfterFew = runs.map((run) => (run.full.rss - run.few.rss) / (USERS - FEW));
  const first = runs[0] as Run;
  const body = median(runs.map((run) => run.fullBody));
  const rss = median(rssPerUser);
  const fillRates = runs.map((run) => (USERS - FEW) / run.fill.seconds);

  /** Every round of one side over the runs. */
  const all = (pick: (run: Run) => Side, field: 'rates' | 'p50' | 'p99' | 'cpuPerRequest') =>
    runs.flatMap((run) => pick(run)[field]);
  const rate = median(all((run) => run.all, 'rates'));
  const smallRate = median(all((run) => run.small, 'rates'));
  const ratios = runs.map((run) => median(run.all.rates) / median(run.small.rates));
  const bareRate = median(all((run) => run.bareAll, 'rates'));
  const bareFewRate = median(all((run) => run.bareFew, 'rates'));
  const bareRatios = runs.map((run) => median(run.bareAll.rates) / median(run.bareFew.rates));
  const arenaRate = median(all((run) => run.arenaAll, 'rates'));
  const arenaFewRate = median(all((run) => run.arenaFew, 'rates'));
  const arenaRatios = runs.map((run) => median(run.arenaAll.rates) / median(run.arenaFew.rates));
  const rounds = (pick: (run: Run) => Side) => spread(all(pick, 'rates'), formatNumber);
  const ms = (pick: (run: Run) => Side, field: 'p50' | 'p99') =>
    `${formatNumber(median(all(pick, field)))} ms`;
  const cpu = (pick: (run: Run) => Side) => `${formatNumber(median(all(pick, 'cpuPerRequest')))} µs`;

  return [
    {
      scenario: 'memory',
      figure: `RSS per monitored user, ${formatNumber(USERS)} users with varied presences, one service process`,
      value: rss / KB,
      unit: 'KB',
      baseline: {
        label: 'the REST body (envelope bytes) per user, what must be held at least',
        value: body / KB,
      },
      target: { text: '≤ 2 KB', met: rss <= 2 * KB },
      notes:
        `(RSS settled after full GCs with ${formatNumber(USERS)} users − RSS of the same process before filling) / ` +
        `${formatNumber(USERS)}; ${RUNS} runs, each a fresh process (--max-old-space-size=${HEAP_MB}): ` +
        `${spread(rssPerUser, kb)} per user; RSS ${mb(first.before.rss)} before → ${mb(first.full.rss)} ` +
        `(first run); counted from ${formatNumber(FEW)} users instead: ${spread(rssAfterFew, kb)}. ` +
        `Filled through the registry's domain API inside the real service (startApp): registry.memberSeen ` +
        `with the member's user and rawPresenceFrom of their presence, both parsed from JSON, as the ingest ` +
        `does for a member listing, so history, KV and profile look-ups and the profile queue run for each ` +
        `user as for the gateway's; not through the simulated gateway. The store is a SQLite file. Mix: ` +
        `${POPULATION_MIX}; REST body ${formatNumber(body)} B on average. Filling took ${spread(
          runs.map((run) => run.fill.seconds),
          (seconds) => `${formatNumber(seconds)} s`,
        )} (${spread(fillRates, formatNumber)} users/s, building the payloads included)`,
    },
    {
      scenario: 'memory',
      figure: 'JS heap used per monitored user',
      value: median(heapPerUser) / KB,
      unit: 'KB',
      baseline: null,
      target: null,
      notes:
        `heap used settled after full GCs ${mb(first.before.heapUsed)} → ${mb(first.full.heapUsed)} (first run), ` +
        `${spread(heapPerUser, kb)} per user over the runs; Buffer contents (arrayBuffers, outside the heap) ` +
        `${spread(buffersPerUser, kb)} per user; heap total ${mb(first.before.heapTotal)} → ` +
        `${mb(first.full.heapTotal)}; the rest of RSS is V8's and the allocator's own: heap pages committed ` +
        'beyond what is used, and the native side of the objects (buffers, SQLite, sockets)',
    },
    {
      scenario: 'memory',
      figure: `GET /v1/users/:id at ${formatNumber(USERS)} users, ids spread over all, wrk ${LOAD.connections} connections`,
      value: rate,
      unit: 'req/s',
      baseline: {
        label: `the same service holding ${formatNumber(FEW)} users, ids spread over them`,
        value: smallRate,
      },
      target: { text: '≥ 0.9× (unchanged)', met: rate / smallRate >= 0.9 },
      notes:
        `per run, a process with ${formatNumber(USERS)} users and one with ${formatNumber(FEW)} take turns, ` +
        `${ROUNDS} rounds of ${LOAD.seconds} s each after ${WARMUP.seconds} s of warm-up (wrk Lua script: a ` +
        `random user per request); medians of all ${ROUNDS * RUNS} rounds; ratio per run ` +
        `${spread(ratios, (ratio) => `${ratio.toFixed(2)}×`)}; rounds ${rounds((run) => run.all)} vs ` +
        `${rounds((run) => run.small)} req/s; p50 ${ms((run) => run.all, 'p50')} vs ${ms((run) => run.small, 'p50')}, ` +
        `p99 ${ms((run) => run.all, 'p99')} vs ${ms((run) => run.small, 'p99')}; server CPU per request ` +
        `${cpu((run) => run.all)} vs ${cpu((run) => run.small)}. The full process reading only its first ` +
        `${formatNumber(FEW)} users in the same turns: ${formatNumber(median(all((run) => run.hot, 'rates')))} ` +
        `req/s (rounds ${rounds((run) => run.hot)}), ${cpu((run) => run.hot)} per request. Body ` +
        `${formatNumber(body)} B vs ${formatNumber(median(runs.map((run) => run.fewBody)))} B on average. The ` +
        `full process keeps fetching its new users' profiles in the background (GET /users/:id to the ` +
        `simulator, at its rate limit), as a service does for hours after a million users arrive`,
    },
    {
      scenario: 'memory',
      figure: `server CPU per GET /v1/users/:id at ${formatNumber(USERS)} users`,
      value: median(all((run) => run.all, 'cpuPerRequest')),
      unit: 'µs',
      baseline: {
        label: `the same service holding ${formatNumber(FEW)} users`,
        value: median(all((run) => run.small, 'cpuPerRequest')),
      },
      target: null,
      notes: `bare node:http holding the bodies in a Map: ${cpu((run) => run.bareAll)} vs ${cpu((run) => run.bareFew)}; off the JS heap: ${cpu((run) => run.arenaAll)} vs ${cpu((run) => run.arenaFew)}`,
    },
    {
      scenario: 'memory',
      figure: `the registry's part of GET /v1/users/:id alone at ${formatNumber(USERS)} users`,
      value: median(runs.map((run) => run.lookups.all)),
      unit: 'ns',
      baseline: {
        label: `the same service holding ${formatNumber(FEW)} users`,
        value: median(runs.map((run) => run.lookups.small)),
      },
      target: null,
      notes:
        'in the service processes above once their reads are done, the look-up src/http/fast-read.ts makes ' +
        "(registry.body: the id's slot, the body copied out of the arena and its tag), of a random user, in a " +
        `loop of 262,144 in the process; the median of 9 rounds, per run ${spread(
          runs.map((run) => run.lookups.all),
          (ns) => `${formatNumber(ns)} ns`,
        )} vs ${spread(
          runs.map((run) => run.lookups.small),
          (ns) => `${formatNumber(ns)} ns`,
        )}: what going to memory for one user among a million costs, without the socket`,
    },
    {
      scenario: 'memory',
      figure: `bare node:http holding ${formatNumber(USERS)} bodies in a Map, ids spread over all, wrk ${LOAD.connections} connections`,
      value: bareRate,
      unit: 'req/s',
      baseline: { label: `the same holding ${formatNumber(FEW)}`, value: bareFewRate },
      target: null,
      notes:
        `what a heap of ${formatNumber(USERS)} held bodies costs node itself, in the same turns as the service ` +
        `(bench/processes/bare-map-http.ts: a Map of one ${formatNumber(body)}-byte string per user, node:http ` +
        `answering from it, nothing else); ratio per run ${spread(bareRatios, (ratio) => `${ratio.toFixed(2)}×`)}; ` +
        `rounds ${rounds((run) => run.bareAll)} vs ${rounds((run) => run.bareFew)} req/s; server CPU per ` +
        `request ${cpu((run) => run.bareAll)} vs ${cpu((run) => run.bareFew)}`,
    },
    {
      scenario: 'memory',
      figure: `bare node:http holding ${formatNumber(USERS)} bodies off the JS heap, ids spread over all, wrk ${LOAD.connections} connections`,
      value: arenaRate,
      unit: 'req/s',
      baseline: { label: `the same holding ${formatNumber(FEW)}`, value: arenaFewRate },
      target: null,
      notes:
        `the bare server above with nothing per user on the JS heap (bench/processes/bare-arena-http.ts: the ` +
        `bodies in one Buffer, an open-addressing index in typed arrays), in the same turns: what reading ` +
        `among ${formatNumber(USERS)} bodies costs for the bytes alone, without ${formatNumber(USERS)} objects on ` +
        `the heap; ` +
        `ratio per run ${spread(arenaRatios, (ratio) => `${ratio.toFixed(2)}×`)}; rounds ` +
        `${rounds((run) => run.arenaAll)} vs ${rounds((run) => run.arenaFew)} req/s; server CPU per request ` +
        `${cpu((run) => run.arenaAll)} vs ${cpu((run) => run.arenaFew)}`,
    },
  ];
}
