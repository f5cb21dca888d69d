import { type BenchChild, type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { startService } from '../lib/service.js';
import { formatNumber, median, spread } from '../lib/stats.js';
import { type WrkLoad, wrk } from '../lib/wrk.js';

const LOAD: WrkLoad = { connections: 100, threads: 2, seconds: 3 };
const WARMUP: WrkLoad = { ...LOAD, seconds: 3 };
/**
 * Processes per side: one Node process of the same code can run a steady 20% faster or slower than the
 * next (JIT choices, placement), so each side is a few processes.
 */
const PROCESSES = 2;
/** Rounds per process. The rounds go round the processes of both sides in turn; each figure is the median round. */
const ROUNDS = 5;

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

async function measureRound(side: Side, server: Server, index: number): Promise<void> {
  const cpuBefore = await server.child.cpuMicros();
  const result = await wrk(server.url, LOAD);
  const cpuMicros = (await server.child.cpuMicros()) - cpuBefore;
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

async function startServer(children: BenchChild[]): Promise<Server> {
  const { child, ready } = await startService(children);
  return { child, url: `${ready.url}/v1/users/${ready.userId}` };
}

async function startBare(children: BenchChild[], body: string, headers: string): Promise<Server> {
  const child = startChild('bare-http', [], { BODY: body, HEADERS: headers });
  children.push(child);
  return { child, url: (await child.next<Message & { url: string }>('ready')).url };
}

/**
 * `GET /v1/users/:id` of a realistic presence from the service, against `node:http` answering the same
 * bytes (and headers). Every server is a process of its own, and wrk is another.
 */
export async function restRead(): Promise<Row[]> {
  const children: BenchChild[] = [];
  try {
    const services = await Promise.all(Array.from({ length: PROCESSES }, () => startServer(children)));
    const response = await fetch((services[0] as Server).url);
    const body = await response.text();
    if (response.status !== 200)
      throw new Error(`rest-read: the service answered ${response.status}: ${body}`);
    const headers = JSON.stringify(Object.fromEntries(response.headers));
    const bares = await Promise.all(
      Array.from({ length: PROCESSES }, () => startBare(children, body, headers)),
    );

    const served = sideOf(services);
    const floor = sideOf(bares);
    for (const server of [...services, ...bares]) await wrk(server.url, WARMUP);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < PROCESSES; i++) {
        const pair: Array<[Side, Server]> = [
          [served, services[i] as Server],
          [floor, bares[i] as Server],
        ];
        if ((round + i) % 2 === 1) pair.reverse();
        for (const [side, server] of pair) await measureRound(side, server, i);
      }
    }

    const rate = (side: Side) => median(side.perRound);
    const cpu = (side: Side) => median(side.cpuPerRequest);
    const ratio = rate(served) / rate(floor);
    const rounds = (side: Side) => spread(side.perRound, formatNumber);
    // Each service round next to the bare round run just before or after it: the machine's swings over a
    // run mostly cancel in these.
    const paired = served.perRound.map((value, k) => value / (floor.perRound[k] as number));
    const byProcess = (side: Side) => side.cpuByProcess.map((cpus) => formatNumber(median(cpus))).join(', ');
    return [
      {
        scenario: 'rest-read',
        figure: `GET /v1/users/:id, ${formatNumber(Buffer.byteLength(body))} B body, wrk ${LOAD.connections} connections`,
        value: rate(served),
        unit: 'req/s',
        baseline: { label: 'bare node:http, same bytes', value: rate(floor) },
        target: { text: '≥ 0.9×', met: ratio >= 0.9 },
        notes:
          `median of ${ROUNDS * PROCESSES} rounds of ${LOAD.seconds} s per side (${PROCESSES} processes each, ` +
          `rounds alternating) after ${WARMUP.seconds} s of warm-up each; rounds ${rounds(served)} vs ` +
          `${rounds(floor)} req/s; ratio of adjacent rounds ${formatNumber(median(paired))}× in the median ` +
          `(${spread(paired, formatNumber)}); server CPU per request ${formatNumber(cpu(served))} µs vs ` +
          `${formatNumber(cpu(floor))} µs (by process ${byProcess(served)} vs ${byProcess(floor)})`,
      },
      {
        scenario: 'rest-read',
        figure: 'p50 latency',
        value: median(served.p50),
        unit: 'ms',
        baseline: { label: 'bare node:http', value: median(floor.p50) },
        target: null,
      },
      {
        scenario: 'rest-read',
        figure: 'p99 latency',
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
