import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchChild, type Message, startChild } from '../lib/child.js';
import { MEMORY_FLAGS, type MemoryUsage, memoryOf } from '../lib/memory.js';
import { isOfflineInPopulation, POPULATION_MIX } from '../lib/population.js';
import type { Row } from '../lib/results.js';
import { formatNumber, median, spread } from '../lib/stats.js';
import { benchUserId } from '../lib/workload.js';

/** BENCH_STARTUP_MEMBERS: a smaller guild, to try the scenario out (the rows say how many). */
const MEMBERS = Number(process.env.BENCH_STARTUP_MEMBERS ?? 250_000);
const TIMEOUT_MS = 900_000;

interface Ready extends Message {
  token: string;
  apiUrl: string;
  cdnUrl: string;
  buildSeconds: number;
}

interface Stats extends Message {
  listingSeconds: number;
  listingBytes: number;
  listingFrames: number;
  /** What the simulated gateway sent on the wire, compressed or not. */
  gatewayBytes: number;
  identifies: number;
  resumes: number;
  listings: number;
}

interface LogLine {
  msg: string;
  atSeconds: number;
  [key: string]: unknown;
}

interface Served extends Message {
  /** From the start of the client (startApp, or creating the bare client) until all are served. */
  seconds: number;
  /** CPU the client used over the same time. */
  cpuSeconds: number;
  /** From the process's own start (module loading included). */
  processSeconds: number;
  /** The service: when startApp returned, listening. */
  listeningSeconds?: number;
  size: number;
  /** The service: when the registry held them all (the REST read follows). */
  inRegistrySeconds?: number;
  logs?: LogLine[];
  /** The bare client. */
  guildCreateSeconds?: number;
  firstChunkSeconds?: number;
  presences?: number;
}

/** The service: every pending member rendered and announced, after they were served. */
interface Settled extends Message {
  seconds: number;
  cpuSeconds: number;
}

/** service-zlib: the service with GATEWAY_COMPRESSION=zlib-stream. */
type Side = 'service' | 'bare' | 'service-zlib';

/** A second service process on the first one's database, started once the first has shut down. */
interface Restart {
  served: Served;
  /** The simulator's counts when the first process had shut down, and once the second was connected. */
  before: Stats;
  after: Stats;
}

interface Run {
  side: Side;
  served: Served;
  settled: Settled | null;
  stats: Stats;
  memory: MemoryUsage | null;
  restart: Restart | null;
}

/**
 * A fresh simulated Discord with the guild, and one client loading it. `restart`: the service is then shut
 * down and started again on its database, within the resume window.
 */
async function once(side: Side, restart = false): Promise<Run> {
  const children: BenchChild[] = [];
  const cleanups: Array<() => void> = [];
  try {
    const discord = startChild('discord', [], { MEMBERS: String(MEMBERS) });
    children.push(discord);
    const ready = await discord.next<Ready>('ready', TIMEOUT_MS);
    const env = {
      TOKEN: ready.token,
      API_URL: ready.apiUrl,
      CDN_URL: ready.cdnUrl,
      MEMBERS: String(MEMBERS),
      LAST_ID: benchUserId(MEMBERS - 1),
    };
    const isService = side !== 'bare';
    const dataDir = mkdtempSync(join(tmpdir(), 'presently-bench-startup-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const serviceEnv = {
      ...env,
      DATA_DIR: dataDir,
      GATEWAY_COMPRESSION: side === 'service-zlib' ? 'zlib-stream' : 'off',
    };
    const client = isService
      ? startChild('startup-service', [], serviceEnv, MEMORY_FLAGS)
      : startChild('startup-bare', [], env);
    children.push(client);
    const served = await client.next<Served>('served', TIMEOUT_MS);
    if (served.size < MEMBERS) throw new Error(`startup: ${side} got ${served.size} of ${MEMBERS} members`);
    const settled = isService ? await client.next<Settled>('settled', TIMEOUT_MS) : null;
    const memory = isService ? await memoryOf(client) : null;
    const stats = await statsOf(discord);
    let restarted: Restart | null = null;
    if (restart) {
      // A deploy: SIGTERM (the state saved on the way out), then a new process on the same file.
      await client.stop();
      const before = await statsOf(discord);
      const again = startChild('startup-service', [], serviceEnv, MEMORY_FLAGS);
      children.push(again);
      const servedAgain = await again.next<Served>('served', TIMEOUT_MS);
      if (servedAgain.size < MEMBERS)
        throw new Error(`startup: the restart got ${servedAgain.size} of ${MEMBERS}`);
      await again.next<Message>('connected', TIMEOUT_MS);
      restarted = { served: servedAgain, before, after: await statsOf(discord) };
    }
    return { side, served, settled, stats, memory, restart: restarted };
  } finally {
    for (const child of children.reverse()) await child.stop();
    for (const cleanup of cleanups) cleanup();
  }
}

async function statsOf(discord: BenchChild): Promise<Stats> {
  discord.send({ type: 'stats' });
  return discord.next<Stats>('stats');
}

const s = (seconds: number) => `${formatNumber(seconds)} s`;

/** What the service logged about loading members, as an operator would have read it. */
function progressNote(logs: readonly LogLine[]): string {
  const progress = logs.filter((line) => line.msg === 'loading guild members');
  const loaded = logs.find((line) => line.msg === 'guild members loaded');
  const all = logs.find((line) => line.msg === 'every guild loaded');
  const at = (line: LogLine) =>
    `${s(line.atSeconds)} (${formatNumber(Number(line.loaded))} of ${formatNumber(Number(line.of))}, ` +
    `chunk ${line.chunk}, ${formatNumber(Number(line.perSecond))}/s)`;
  const first = progress[0];
  const last = progress[progress.length - 1];
  return (
    `${progress.length} lines 'loading guild members' (at most one per 5 s)` +
    (first && last ? `, the first at ${at(first)}, the last at ${at(last)}` : '') +
    (loaded
      ? `; 'guild members loaded' at ${s(loaded.atSeconds)} (${formatNumber(Number(loaded.members))} members, ` +
        `${loaded.seconds} s, ${formatNumber(Number(loaded.perSecond))}/s)`
      : "; no 'guild members loaded' line") +
    (all ? `; 'every guild loaded' at ${s(all.atSeconds)}` : '')
  );
}

/**
 * A guild of 250,000 members (the population's mix) delivered by the simulated Discord, in its own
 * process, as GUILD_MEMBERS_CHUNKs of 1,000 through the real @discordjs/ws client into the real service
 * (startApp): seconds from startApp until all are served, against the same listing received by a bare
 * @discordjs/ws client that only parses it. Two runs each, interleaved, each with a fresh simulator. Each
 * service run is then restarted within Discord's resume window (a deploy), and two more runs load the guild
 * through the gateway's transport compression.
 */
export async function startup(): Promise<Row[]> {
  const runs: Run[] = [];
  const order = ['service', 'bare', 'service-zlib', 'bare', 'service', 'service-zlib'] as const;
  for (const side of order) runs.push(await once(side, side === 'service'));
  const service = runs.filter((run) => run.side === 'service');
  const bare = runs.filter((run) => run.side === 'bare');
  const seconds = (list: Run[]) => median(list.map((run) => run.served.seconds));
  const first = service[0] as Run;
  const logs = first.served.logs ?? [];
  const guildCreate = logs.find((line) => line.msg === 'guild available; requesting its members');
  const online = Array.from({ length: MEMBERS }, (_, n) => n).filter((n) => !isOfflineInPopulation(n)).length;
  const stats = first.stats;
  const memory = first.memory;
  const rate = (list: Run[]) => MEMBERS / seconds(list);
  const serviceSeconds = service.map((run) => run.served.seconds);
  const bareSeconds = bare.map((run) => run.served.seconds);
  const bareFirst = bare[0] as Run;
  const cpu = (list: Run[]) => median(list.map((run) => run.served.cpuSeconds));
  const settled = service.map((run) => run.settled as Settled);
  const zlib = runs.filter((run) => run.side === 'service-zlib');
  const restarts = service.map((run) => run.restart as Restart);
  const restartSeconds = median(restarts.map((restart) => restart.served.seconds));
  const afterListening = restarts.map(
    (restart) => restart.served.seconds - (restart.served.listeningSeconds ?? 0),
  );
  const spent = (key: 'identifies' | 'listings' | 'resumes') =>
    restarts.map((restart) => restart.after[key] - restart.before[key]);
  const wire = (list: Run[]) => median(list.map((run) => run.stats.gatewayBytes));

  return [
    {
      scenario: 'startup',
      figure: `seconds from start until all ${formatNumber(MEMBERS)} members of one guild are served`,
      value: seconds(service),
      unit: 's',
      baseline: { label: 'bare @discordjs/ws client only parsing the same chunks', value: seconds(bare) },
      target: { text: '≤ 3×', met: seconds(service) <= 3 * seconds(bare) },
      notes:
        `from startApp until the registry holds all ${formatNumber(MEMBERS)} and GET /v1/users/:id of the ` +
        `last member answers 200 (registry full at ${s(median(service.map((run) => run.served.inRegistrySeconds ?? 0)))}); ` +
        `runs ${spread(serviceSeconds, s)} vs bare ${spread(bareSeconds, s)} (2 each, interleaved, a fresh ` +
        `simulator process each); from the process's own start ` +
        `${spread(
          service.map((run) => run.served.processSeconds),
          s,
        )} vs ${spread(
          bare.map((run) => run.served.processSeconds),
          s,
        )}. The simulated Discord (its own process) sends GUILD_CREATE (no members: Discord lists none ` +
        `above 75,000) at ${s(guildCreate?.atSeconds ?? Number.NaN)} (bare: ${s(bareFirst.served.guildCreateSeconds ?? Number.NaN)}), ` +
        `then on op 8 ${stats.listingFrames} GUILD_MEMBERS_CHUNKs, ${formatNumber(stats.listingBytes / 1e6)} MB ` +
        `of JSON, with ${formatNumber(online)} presences (the rest offline); making and queueing them took it ` +
        `${s(stats.listingSeconds)}, all at once. Members: ${POPULATION_MIX}. The service stores in a SQLite ` +
        `file (WAL, synchronous=FULL). A pending member (listed, not rendered yet) is served at once and rendered and announced to ` +
        `history, the KV and profile loader and subscribers in the background (next row). RSS settled after ` +
        `full GCs with the guild loaded and rendered ` +
        `${memory ? `${formatNumber(memory.rss / 1e6)} MB, heap used ${formatNumber(memory.heapUsed / 1e6)} MB` : '?'}. ` +
        `Progress the service logged: ${progressNote(logs)}`,
    },
    {
      scenario: 'startup',
      figure: `seconds from start until all ${formatNumber(MEMBERS)} are rendered and announced`,
      value: median(settled.map((run) => run.seconds)),
      unit: 's',
      baseline: { label: 'bare @discordjs/ws client, all parsed', value: seconds(bare) },
      target: null,
      notes:
        `every pending member rendered, its monitored change heard by history, the KV and profile loader ` +
        `and subscribers; runs ${spread(
          settled.map((run) => run.seconds),
          s,
        )}, the service's CPU until then ${spread(
          settled.map((run) => run.cpuSeconds),
          s,
        )}`,
    },
    {
      scenario: 'startup',
      figure: 'members loaded per second (until all served)',
      value: rate(service),
      unit: '/s',
      baseline: { label: 'bare @discordjs/ws client', value: rate(bare) },
      target: null,
    },
    {
      scenario: 'startup',
      figure: `CPU the client used until all ${formatNumber(MEMBERS)} were served`,
      value: cpu(service),
      unit: 's',
      baseline: { label: 'bare @discordjs/ws client', value: cpu(bare) },
      target: null,
      notes:
        `the bare client's time is bounded by the simulator making the listing (${s(stats.listingSeconds)}, ` +
        `in its own process, on the other core), not by its own work: its CPU is the floor of receiving and ` +
        `parsing these chunks. Runs ${spread(
          service.map((run) => run.served.cpuSeconds),
          s,
        )} vs ${spread(
          bare.map((run) => run.served.cpuSeconds),
          s,
        )}`,
    },
    {
      scenario: 'startup',
      figure: `seconds from start until all ${formatNumber(MEMBERS)} are served, restarted within the resume window`,
      value: restartSeconds,
      unit: 's',
      baseline: { label: 'a cold start of the same service, this run', value: seconds(service) },
      target: {
        text: 'no IDENTIFY, no listing, all served ≤ 2 s after listening',
        met:
          spent('identifies').every((n) => n === 0) &&
          spent('listings').every((n) => n === 0) &&
          afterListening.every((after) => after <= 2),
      },
      notes:
        `the service of the row above shut down (SIGTERM: its sessions kept resumable and saved with every ` +
        `presence in the SQLite file), then a new process on the same file: ${formatNumber(restartSeconds / seconds(service))}× ` +
        `the cold start's time, runs ${spread(
          restarts.map((restart) => restart.served.seconds),
          s,
        )}; served ${spread(afterListening, s)} after it listened (the snapshot is taken back before); ` +
        `IDENTIFYs sent ${spent('identifies').join(', ')}, whole-guild listings ${spent('listings').join(', ')}, ` +
        `RESUMEs ${spent('resumes').join(', ')}; CPU until served ${spread(
          restarts.map((restart) => restart.served.cpuSeconds),
          s,
        )}`,
    },
    {
      scenario: 'startup',
      figure: `seconds from start until all ${formatNumber(MEMBERS)} are served, GATEWAY_COMPRESSION=zlib-stream`,
      value: seconds(zlib),
      unit: 's',
      baseline: { label: 'uncompressed (the default), this run', value: seconds(service) },
      target: null,
      notes:
        `the same listing through Discord's transport compression, inflated by @discordjs/ws with node:zlib: ` +
        `client CPU until served ${spread(
          zlib.map((run) => run.served.cpuSeconds),
          s,
        )} vs ${spread(
          service.map((run) => run.served.cpuSeconds),
          s,
        )} uncompressed; bytes the gateway sent on the wire ${formatNumber(wire(zlib) / 1e6)} MB vs ` +
        `${formatNumber(wire(service) / 1e6)} MB; runs ${spread(
          zlib.map((run) => run.served.seconds),
          s,
        )}`,
    },
  ];
}
