import { type BenchChild, type Message, startChild } from '../lib/child.js';
import { forwardedForScript } from '../lib/forwarded-for.js';
import { previousTree } from '../lib/previous.js';
import type { Row } from '../lib/results.js';
import { type ServiceOptions, startService } from '../lib/service.js';
import { formatNumber, median, spread } from '../lib/stats.js';
import { type WrkLoad, wrk } from '../lib/wrk.js';

const LOAD: WrkLoad = { connections: 100, threads: 2, seconds: 3 };
const WARMUP: WrkLoad = { ...LOAD, seconds: 3 };
/**
 * Processes per side: one Node process of the same code can run a steady 20% faster or slower than the
 * next (JIT choices, placement), so each side is a few processes.
 */
const PROCESSES = 2;
/** Rounds per process, going round the processes of every side in turn; a figure is the median round. */
const ROUNDS = 5;
/**
 * Clients the requests come from, named in X-Forwarded-For by wrk as a reverse proxy would: a public
 * instance's polling sites, many enough that none of them reaches the read limit (RATE_LIMIT_READ, 1,200 a
 * minute) at the rates measured here, over the whole run.
 */
const CLIENTS = 5_000;
/** wrk's address, the proxy the service believes. */
const TRUST_PROXY = '127.0.0.1';

interface Server {
  child: BenchChild;
  url: string;
}

interface Side {
  servers: Server[];
  perRound: number[];
  cpuPerRequest: number[];
  /** CPU per request of each process's rounds, by process: one process in a slower state shows here. */
  cpuByProcess: number[][];
  p50: number[];
  p99: number[];
}

async function measureRound(side: Side, server: Server, index: number, script: string): Promise<void> {
  const cpuBefore = await server.child.cpuMicros();
  const result = await wrk(server.url, LOAD, script);
  const cpuMicros = (await server.child.cpuMicros()) - cpuBefore;
  // A 429 counts here too: no client may reach its limit.
  if (result.errors > 0)
    throw new Error(`rest-read: ${result.errors} errors from ${server.child.name} (${result.errorKinds})`);
  side.perRound.push(result.requestsPerSecond);
  side.cpuPerRequest.push(cpuMicros / result.requests);
  side.cpuByProcess[index]?.push(cpuMicros / result.requests);
  side.p50.push(result.p50Ms);
  side.p99.push(result.p99Ms);
}

const sideOf = (servers: Server[]): Side => ({
  servers,
  perRound: [],
  cpuPerRequest: [],
  cpuByProcess: servers.map(() => []),
  p50: [],
  p99: [],
});

async function startServer(children: BenchChild[], options: ServiceOptions): Promise<Server> {
  const { child, ready } = await startService(children, options);
  return { child, url: `${ready.url}/v1/users/${ready.userId}` };
}

async function startBare(children: BenchChild[], body: string, headers: string): Promise<Server> {
  const child = startChild('bare-http', [], { BODY: body, HEADERS: headers });
  children.push(child);
  return { child, url: (await child.next<Message & { url: string }>('ready')).url };
}

/**
 * `GET /v1/users/:id` of a realistic presence from the service as it runs by default (read limits on, behind
 * a proxy naming CLIENTS clients), against `node:http` answering the same bytes (and headers), and the
 * service with its limits off. Every server is a process of its own, and wrk is another; every side gets
 * the same requests.
 */
export async function restRead(): Promise<Row[]> {
  const children: BenchChild[] = [];
  try {
    const limited = { defaultLimits: true, trustProxy: TRUST_PROXY };
    const previous = previousTree();
    // This version's processes and the previous one's are started in turn: a process started earlier can
    // run a steady few per cent slower here, which must not land on one side.
    const services: Server[] = [];
    const before: Server[] = [];
    for (let i = 0; i < PROCESSES; i++) {
      services.push(await startServer(children, limited));
      if (previous !== null) before.push(await startServer(children, { ...limited, tree: previous.dir }));
    }
    const unlimited = await Promise.all(Array.from({ length: PROCESSES }, () => startServer(children, {})));
    const response = await fetch((services[0] as Server).url);
    const body = await response.text();
    if (response.status !== 200)
      throw new Error(`rest-read: the service answered ${response.status}: ${body}`);
    if (response.headers.get('ratelimit-limit') === null)
      throw new Error('rest-read: the service answered without its read limit');
    const headers = JSON.stringify(Object.fromEntries(response.headers));
    const bares = await Promise.all(
      Array.from({ length: PROCESSES }, () => startBare(children, body, headers)),
    );
    const script = forwardedForScript(CLIENTS);

    const served = sideOf(services);
    const off = sideOf(unlimited);
    const floor = sideOf(bares);
    const earlier = before.length === 0 ? null : sideOf(before);
    const sides = earlier === null ? [served, off, floor] : [served, off, floor, earlier];
    for (const side of sides) for (const server of side.servers) await wrk(server.url, WARMUP, script);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < PROCESSES; i++) {
        // Each side goes first in turn, so none always follows the same one.
        const shift = (round + i) % sides.length;
        for (const side of [...sides.slice(shift), ...sides.slice(0, shift)]) {
          await measureRound(side, side.servers[i] as Server, i, script);
        }
      }
    }

    const rate = (side: Side) => median(side.perRound);
    const cpu = (side: Side) => median(side.cpuPerRequest);
    const ratio = rate(served) / rate(floor);
    const rounds = (side: Side) => spread(side.perRound, formatNumber);
    // Each service round next to the bare round of the same turn: the machine's swings over a run mostly
    // cancel in these.
    const paired = (side: Side) => side.perRound.map((value, k) => value / (floor.perRound[k] as number));
    const byProcess = (side: Side) => side.cpuByProcess.map((cpus) => formatNumber(median(cpus))).join(', ');
    const bytes = formatNumber(Buffer.byteLength(body));
    const howMeasured =
      `median of ${ROUNDS * PROCESSES} rounds of ${LOAD.seconds} s per side (${PROCESSES} processes each, ` +
      `rounds alternating) after ${WARMUP.seconds} s of warm-up each; wrk sends X-Forwarded-For naming ` +
      `${formatNumber(CLIENTS)} clients in turn (TRUST_PROXY=${TRUST_PROXY}), the same requests to every side`;
    const againstPrevious: Row[] =
      earlier === null || previous === null
        ? []
        : [
            {
              scenario: 'rest-read',
              figure: `GET /v1/users/:id of a user with no privacy settings, default limits, against ${previous.version}`,
              value: rate(served),
              unit: 'req/s',
              baseline: { label: `the service at ${previous.version}, same requests`, value: rate(earlier) },
              target: { text: '≥ 0.95×', met: rate(served) >= 0.95 * rate(earlier) },
              notes:
                `rounds ${rounds(earlier)} req/s at ${previous.version}; server CPU per request ` +
                `${formatNumber(cpu(served))} µs against ${formatNumber(cpu(earlier))} µs (${byProcess(earlier)})`,
            },
          ];
    return [
      ...againstPrevious,
      {
        scenario: 'rest-read',
        figure: `GET /v1/users/:id, ${bytes} B body, default limits (RATE_LIMIT_READ per client), ${formatNumber(CLIENTS)} clients, wrk ${LOAD.connections} connections`,
        value: rate(served),
        unit: 'req/s',
        baseline: { label: 'bare node:http, same bytes', value: rate(floor) },
        target: { text: '≥ 0.9×', met: ratio >= 0.9 },
        notes:
          `${howMeasured}; rounds ${rounds(served)} vs ${rounds(floor)} req/s; ratio of rounds of the same ` +
          `turn ${formatNumber(median(paired(served)))}× in the median (${spread(paired(served), formatNumber)})`,
      },
      {
        scenario: 'rest-read',
        figure: 'server CPU per request, default limits',
        value: cpu(served),
        unit: 'µs',
        baseline: { label: 'bare node:http', value: cpu(floor) },
        target: null,
        notes: `by process ${byProcess(served)} vs ${byProcess(floor)} µs; limits off ${formatNumber(cpu(off))} µs (${byProcess(off)})`,
      },
      {
        scenario: 'rest-read',
        figure: 'GET /v1/users/:id, rate limits off (RATE_LIMIT_READ=0), same requests',
        value: rate(off),
        unit: 'req/s',
        baseline: { label: 'bare node:http, same bytes', value: rate(floor) },
        target: null,
        notes:
          `rounds ${rounds(off)} req/s; ratio of rounds of the same turn ${formatNumber(median(paired(off)))}× ` +
          `in the median; its answers lack the three RateLimit headers the others send`,
      },
      {
        scenario: 'rest-read',
        figure: 'p50 latency, default limits',
        value: median(served.p50),
        unit: 'ms',
        baseline: { label: 'bare node:http', value: median(floor.p50) },
        target: null,
      },
      {
        scenario: 'rest-read',
        figure: 'p99 latency, default limits',
        value: median(served.p99),
        unit: 'ms',
        baseline: { label: 'bare node:http', value: median(floor.p99) },
        target: null,
        notes: `median of the rounds' p99 (rounds ${spread(served.p99, formatNumber)} vs ${spread(floor.p99, formatNumber)} ms)`,
      },
    ];
  } finally {
    for (const child of children) await child.stop();
  }
}
