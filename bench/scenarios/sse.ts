import { type BenchChild, type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { startService } from '../lib/service.js';
import { formatNumber } from '../lib/stats.js';
import { benchUserId } from '../lib/workload.js';

const SUBSCRIBERS = 2_000;
const WARMUP_ROUNDS = 50;
/** Measured updates per side, in blocks that alternate between the streams and the sockets. */
const BLOCKS = 3;
const ROUNDS_PER_BLOCK = 100;
/** The sockets listen to bench user 0, the streams to user 1: an update reaches one side only. */
const SOCKET_USER = 0;
const STREAM_USER = 1;

interface Side {
  client: BenchChild;
  user: number;
  seq: number;
  seconds: number;
  serverCpuMicros: number;
  clientCpuMicros: number;
}

interface Latencies extends Message {
  count: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * One presence update fanned out to 2,000 Server-Sent Events streams against the same update fanned out
 * to 2,000 sockets, by one service in the same run: the streams and the sockets stay open throughout,
 * each side listening to a user of its own, and the measured blocks alternate.
 */
export async function sse(): Promise<Row[]> {
  const children: BenchChild[] = [];
  try {
    const { child: service, ready } = await startService(children, { fanout: true, users: 2 });

    /** One update at a time; the next when every subscriber of the side has it. */
    const rounds = async (side: Side, count: number): Promise<void> => {
      for (let i = 0; i < count; i++) {
        service.send({ type: 'update', seq: ++side.seq, user: side.user });
        await side.client.next('round', 30_000);
      }
    };
    const measureBlock = async (side: Side): Promise<void> => {
      side.client.send({ type: 'measure', on: true });
      const [serverBefore, clientBefore] = [await service.cpuMicros(), await side.client.cpuMicros()];
      const started = process.hrtime.bigint();
      await rounds(side, ROUNDS_PER_BLOCK);
      side.seconds += Number(process.hrtime.bigint() - started) / 1e9;
      side.serverCpuMicros += (await service.cpuMicros()) - serverBefore;
      side.clientCpuMicros += (await side.client.cpuMicros()) - clientBefore;
      side.client.send({ type: 'measure', on: false });
    };
    const connect = async (script: string, user: number, env: Record<string, string>): Promise<Side> => {
      const client = startChild(script, [], { URL: ready.url, USER_ID: benchUserId(user), ...env });
      children.unshift(client);
      await client.next('ready');
      return { client, user, seq: 0, seconds: 0, serverCpuMicros: 0, clientCpuMicros: 0 };
    };

    const streams = await connect('sse-client', STREAM_USER, { STREAMS: String(SUBSCRIBERS) });
    const sockets = await connect('fanout-client', SOCKET_USER, {
      SOCKETS: String(SUBSCRIBERS),
      MODE: 'lanyard',
    });
    await rounds(streams, WARMUP_ROUNDS);
    await rounds(sockets, WARMUP_ROUNDS);
    for (let block = 0; block < BLOCKS; block++) {
      const order = block % 2 === 0 ? [streams, sockets] : [sockets, streams];
      for (const side of order) await measureBlock(side);
    }
    const [s, b] = await Promise.all(
      [streams, sockets].map(async (side) => {
        side.client.send({ type: 'report' });
        return side.client.next<Latencies>('latencies');
      }),
    );
    const measured = BLOCKS * ROUNDS_PER_BLOCK;
    const expected = measured * SUBSCRIBERS;
    const latency = s as Latencies;
    const socketLatency = b as Latencies;
    if (latency.count !== expected || socketLatency.count !== expected) {
      throw new Error(
        `sse: ${latency.count} and ${socketLatency.count} deliveries timed, ${expected} expected`,
      );
    }
    const rate = (side: Side) => (measured * SUBSCRIBERS) / side.seconds;
    const cpuPerUpdate = (side: Side) => side.serverCpuMicros / measured / 1000;
    const clientCpuPerUpdate = (side: Side) => side.clientCpuMicros / measured / 1000;
    const subscribers = formatNumber(SUBSCRIBERS);
    return [
      {
        scenario: 'sse',
        figure: `deliveries/s, one update to ${subscribers} event streams`,
        value: rate(streams),
        unit: '/s',
        baseline: { label: `${subscribers} sockets, same service and run`, value: rate(sockets) },
        target: null,
        notes:
          `${measured} updates per side after ${WARMUP_ROUNDS} of warm-up, in ${BLOCKS} alternating blocks; ` +
          'server and clients share the cores, so this is the pair’s rate: the client process used ' +
          `${formatNumber(clientCpuPerUpdate(streams))} ms of CPU per update (sockets ${formatNumber(clientCpuPerUpdate(sockets))} ms)`,
      },
      {
        scenario: 'sse',
        figure: `server CPU per update (${subscribers} events sent)`,
        value: cpuPerUpdate(streams),
        unit: 'ms',
        baseline: { label: `${subscribers} socket frames`, value: cpuPerUpdate(sockets) },
        target: null,
        notes: 'the cost of fan-out alone, whatever the clients do; above 1× is the streams costing more',
      },
      {
        scenario: 'sse',
        figure: 'p99 delivery latency (send → every stream)',
        value: latency.p99Ms,
        unit: 'ms',
        baseline: { label: 'sockets', value: socketLatency.p99Ms },
        target: null,
        notes: `p50 ${formatNumber(latency.p50Ms)} ms, sockets ${formatNumber(socketLatency.p50Ms)} ms`,
      },
    ];
  } finally {
    // Clients first: a server going away first would end 4,000 connections at them.
    for (const child of children) await child.stop();
  }
}
