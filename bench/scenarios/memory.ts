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
/** The same process before it is filled: the read rate's baseline, and what "before filling" holds. */
const FEW = 1_000;
/** Fresh processes, one after the other (two at once would share the cores and double the memory). */
const RUNS = 2;
/** A million users take a few GB of heap; the limit leaves the collector room, the machine has more. */
const HEAP_MB = 12_288;
const LOAD: WrkLoad = { connections: 100, threads: 2, seconds: 5 };
const WARMUP: WrkLoad = { ...LOAD, seconds: 3 };
const ROUNDS = 3;
const KB = 1_000;
const FILL_TIMEOUT_MS = 900_000;

interface Filled extends Message {
  seconds: number;
  cpuSeconds: number;
  size: number;
  bodyBytes: number;
}

interface Reads {
  rates: number[];
  p50: number[];
  p99: number[];
  cpuPerRequest: number[];
}

interface Run {
  before: MemoryUsage;
  few: MemoryUsage;
  full: MemoryUsage;
  fewReads: Reads;
  fullReads: Reads;
  /** The full process again, reads spread over the first FEW users only. */
  hotReads: Reads;
  fewBody: number;
  fullBody: number;
  fill: Filled;
}

async function fill(child: BenchChild, from: number, to: number): Promise<Filled> {
  child.send({ type: 'fill', from, to });
  return child.next<Filled>('filled', FILL_TIMEOUT_MS);
}

/** Warm-up, then ROUNDS rounds of reads spread over the first `users` users. */
async function reads(child: BenchChild, url: string, users: number): Promise<Reads> {
  const script = spreadIdsScript(users);
  try {
    const result: Reads = { rates: [], p50: [], p99: [], cpuPerRequest: [] };
    await wrk(url, WARMUP, script);
    for (let round = 0; round < ROUNDS; round++) {
      const cpuBefore = await child.cpuMicros();
      const load = await wrk(url, LOAD, script);
      const cpu = (await child.cpuMicros()) - cpuBefore;
      if (load.errors > 0) throw new Error(`memory: ${load.errors} errors reading ${users} users`);
      result.rates.push(load.requestsPerSecond);
      result.p50.push(load.p50Ms);
      result.p99.push(load.p99Ms);
      result.cpuPerRequest.push(cpu / load.requests);
    }
    return result;
  } finally {
    rmSync(dirname(script), { recursive: true, force: true });
  }
}

/**
 * One process: its memory before filling, reads over FEW users, then filled to USERS, its memory and the
 * same reads over all of them.
 */
async function once(): Promise<Run> {
  const child = startChild('populated-service', [], {}, [...MEMORY_FLAGS, `--max-old-space-size=${HEAP_MB}`]);
  try {
    const { url } = await child.next<Message & { url: string }>('ready');
    const before = await memoryOf(child);
    const fewFill = await fill(child, 0, FEW);
    const fewReads = await reads(child, url, FEW);
    const few = await memoryOf(child);
    const rest = await fill(child, FEW, USERS);
    const full = await memoryOf(child);
    const fullReads = await reads(child, url, USERS);
    const hotReads = await reads(child, url, FEW);
    if (rest.size < USERS) throw new Error(`memory: only ${rest.size} users are monitored`);
    return {
      before,
      few,
      full,
      fewReads,
      fullReads,
      hotReads,
      fewBody: fewFill.bodyBytes / FEW,
      fullBody: (fewFill.bodyBytes + rest.bodyBytes) / USERS,
      fill: rest,
    };
  } finally {
    await child.stop();
  }
}

const kb = (bytes: number) => `${formatNumber(bytes / KB)} KB`;
const mb = (bytes: number) => `${formatNumber(bytes / 1e6)} MB`;

/**
 * 1,000,000 monitored users with varied, realistic presences in one service process (startApp), filled
 * through the registry's domain API rather than the simulated gateway (a million members through the
 * simulator would mostly measure the simulator). RSS and heap per user after a full GC, and the REST read
 * rate with reads spread over every user, against the same process before it was filled (FEW users).
 */
export async function memory(): Promise<Row[]> {
  const runs: Run[] = [];
  for (let run = 0; run < RUNS; run++) runs.push(await once());

  const rssPerUser = runs.map((run) => (run.full.rss - run.before.rss) / USERS);
  const heapPerUser = runs.map((run) => (run.full.heapUsed - run.before.heapUsed) / USERS);
  const buffersPerUser = runs.map((run) => (run.full.arrayBuffers - run.before.arrayBuffers) / USERS);
  const rssAfterFew = runs.map((run) => (run.full.rss - run.few.rss) / (USERS - FEW));
  const fullRate = runs.map((run) => median(run.fullReads.rates));
  const fewRate = runs.map((run) => median(run.fewReads.rates));
  const hotRate = runs.map((run) => median(run.hotReads.rates));
  const ratios = runs.map((run) => median(run.fullReads.rates) / median(run.fewReads.rates));
  const first = runs[0] as Run;
  const body = median(runs.map((run) => run.fullBody));
  const rss = median(rssPerUser);
  const rate = median(fullRate);
  const fewMedian = median(fewRate);
  const cpu = (pick: (run: Run) => Reads) => median(runs.flatMap((run) => pick(run).cpuPerRequest));
  const p = (pick: (run: Run) => number[]) => median(runs.flatMap(pick));
  const fillRates = runs.map((run) => (USERS - FEW) / run.fill.seconds);

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
        `(RSS after a full GC with ${formatNumber(USERS)} users − RSS of the same process before filling) / ` +
        `${formatNumber(USERS)}; ${RUNS} runs, each a fresh process (--max-old-space-size=${HEAP_MB}): ` +
        `${spread(rssPerUser, kb)} per user; RSS ${mb(first.before.rss)} before → ${mb(first.full.rss)} ` +
        `(first run); counted from 1,000 users and warm reads instead: ${spread(rssAfterFew, kb)}. ` +
        `Filled through the registry's domain API inside the real service (startApp): registry.memberSeen ` +
        `with the member's user and rawPresenceFrom of their presence, both parsed from JSON, as the ingest ` +
        `does for a member listing, so history, KV and profile look-ups and the profile queue run for each ` +
        `user as for the gateway's; not through the simulated gateway. Mix: ${POPULATION_MIX}; REST body ` +
        `${formatNumber(body)} B on average. Filling took ${spread(
          runs.map((run) => run.fill.seconds),
          (s) => `${formatNumber(s)} s`,
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
        `heap used after a full GC ${mb(first.before.heapUsed)} → ${mb(first.full.heapUsed)} (first run), ` +
        `${spread(heapPerUser, kb)} per user over the runs; Buffer contents (arrayBuffers, outside the heap) ` +
        `${spread(buffersPerUser, kb)} per user; heap total ${mb(first.before.heapTotal)} → ` +
        `${mb(first.full.heapTotal)}; the rest of RSS is the allocator's and V8's own per-object overhead ` +
        '(e.g. each Buffer’s backing store)',
    },
    {
      scenario: 'memory',
      figure: `GET /v1/users/:id at ${formatNumber(USERS)} users, ids spread over all, wrk ${LOAD.connections} connections`,
      value: rate,
      unit: 'req/s',
      baseline: {
        label: `same process with ${formatNumber(FEW)} users, ids spread over them`,
        value: fewMedian,
      },
      target: { text: '≥ 0.9× (unchanged)', met: median(ratios) >= 0.9 },
      notes:
        `each run reads spread over ${formatNumber(FEW)} users (wrk Lua script, a random user per request), ` +
        `then is filled to ${formatNumber(USERS)} and reads spread over all of them: median of ${ROUNDS} ` +
        `rounds of ${LOAD.seconds} s after ${WARMUP.seconds} s of warm-up; ratios per run ` +
        `${spread(ratios, (r) => `${r.toFixed(2)}×`)} (rates ${spread(fullRate, formatNumber)} vs ` +
        `${spread(fewRate, formatNumber)} req/s); p50 ${formatNumber(p((run) => run.fullReads.p50))} ms vs ` +
        `${formatNumber(p((run) => run.fewReads.p50))} ms, p99 ${formatNumber(p((run) => run.fullReads.p99))} ms vs ` +
        `${formatNumber(p((run) => run.fewReads.p99))} ms; server CPU per request ` +
        `${formatNumber(cpu((run) => run.fullReads))} µs vs ${formatNumber(cpu((run) => run.fewReads))} µs; ` +
        `the full process reading only the first ${formatNumber(FEW)} users afterwards: ` +
        `${spread(hotRate, formatNumber)} req/s, ${formatNumber(cpu((run) => run.hotReads))} µs per request; ` +
        `body ${formatNumber(body)} B vs ${formatNumber(median(runs.map((run) => run.fewBody)))} B on average; ` +
        "in both phases the service fetches the new users' profiles in the background (GET /users/:id to the " +
        'simulator, at its rate limit), as it does after users arrive',
    },
  ];
}
