import { type BenchChild, type Message, startChild } from '../lib/child.js';
import { markerText } from '../lib/fanout-marker.js';
import { previousTree } from '../lib/previous.js';
import type { Row } from '../lib/results.js';
import { startService } from '../lib/service.js';
import { formatNumber } from '../lib/stats.js';

const SOCKETS = 2_000;
const WARMUP_ROUNDS = 50;
/** Measured updates per side, in blocks that alternate between the service and the baseline. */
const BLOCKS = 3;
const ROUNDS_PER_BLOCK = 100;

interface Side {
  /** The simulated Discord whose PRESENCE_UPDATE starts each update. */
  discord: BenchChild;
  server: BenchChild;
  client: BenchChild;
  seq: number;
  seconds: number;
  serverCpuMicros: number;
  clientCpuMicros: number;
}

interface Latencies extends Message {
  count: number;
  p50Ms: number;
  p99Ms: number;
  cpuMicros: number;
}

/** One update at a time, sent by Discord; the next when every socket has it. */
async function rounds(side: Side, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    side.discord.send({ type: 'update', seq: ++side.seq });
    await side.client.next('round', 30_000);
  }
}

async function measureBlock(side: Side): Promise<void> {
  side.client.send({ type: 'measure', on: true });
  const [serverBefore, clientBefore] = [await side.server.cpuMicros(), await side.client.cpuMicros()];
  const started = process.hrtime.bigint();
  await rounds(side, ROUNDS_PER_BLOCK);
  side.seconds += Number(process.hrtime.bigint() - started) / 1e9;
  side.serverCpuMicros += (await side.server.cpuMicros()) - serverBefore;
  side.clientCpuMicros += (await side.client.cpuMicros()) - clientBefore;
  side.client.send({ type: 'measure', on: false });
}

async function connect(
  discord: BenchChild,
  server: BenchChild,
  url: string,
  mode: 'lanyard' | 'bare',
  userId = '',
): Promise<Side> {
  const client = startChild('fanout-client', [], {
    URL: url,
    SOCKETS: String(SOCKETS),
    MODE: mode,
    USER_ID: userId,
  });
  await client.next('ready');
  return { discord, server, client, seq: 0, seconds: 0, serverCpuMicros: 0, clientCpuMicros: 0 };
}

/**
 * One presence update fanned out to 2,000 sockets subscribed to that user, end to end: a simulated
 * Discord sends the PRESENCE_UPDATE, the service takes it through its gateway client, the ingest, the
 * registry and its socket gateway; the baseline is a bare `ws` server taking the same frame from a
 * simulated Discord of its own through the same gateway client and broadcasting the service's bytes.
 * Each side has its own Discord, so an update reaches only the side measured. Both servers and both
 * client processes stay up for the whole run; the measured blocks alternate, so both see the same machine.
 */
export async function fanout(): Promise<Row[]> {
  const children: BenchChild[] = [];
  try {
    const previous = previousTree();
    // The previous version's service is started first, this one's right after: a process started earlier
    // can run a steady few per cent slower here, and that must not favour this version.
    const before =
      previous === null ? null : await startService(children, { fanout: true, tree: previous.dir });
    const { child: service, discord, ready } = await startService(children, { fanout: true });
    // The d of the service's PRESENCE_UPDATE, as its socket gateway builds it.
    const d = `{"user_id":${JSON.stringify(ready.userId)},${ready.json.slice(1)}`;
    if (!d.includes(markerText(0, 0))) throw new Error('fanout: the service presence carries no marker');
    const bareDiscord = startChild('discord', [], {
      WORKLOAD: 'realistic',
      START: String(Date.now()),
      MARKER: markerText(0, 0),
    });
    children.push(bareDiscord);
    const endpoints = await bareDiscord.next<Message & { token: string; apiUrl: string }>('ready');
    const bare = startChild('bare-ws', [], {
      PRESENCE_JSON: d,
      USER_ID: ready.userId,
      TOKEN: endpoints.token,
      API_URL: endpoints.apiUrl,
    });
    children.unshift(bare);
    const bareUrl = (await bare.next<Message & { url: string }>('ready')).url;

    const served = await connect(discord, service, ready.url, 'lanyard', ready.userId);
    children.unshift(served.client);
    const floor = await connect(bareDiscord, bare, bareUrl, 'bare');
    children.unshift(floor.client);
    let earlier: Side | null = null;
    if (before !== null) {
      earlier = await connect(before.discord, before.child, before.ready.url, 'lanyard', before.ready.userId);
      children.unshift(earlier.client);
    }
    const sides = earlier === null ? [served, floor] : [served, floor, earlier];

    for (const side of sides) await rounds(side, WARMUP_ROUNDS);
    for (let block = 0; block < BLOCKS; block++) {
      // Each side goes first in turn, so none always follows the same one.
      const shift = block % sides.length;
      for (const side of [...sides.slice(shift), ...sides.slice(0, shift)]) await measureBlock(side);
    }
    const [s, b] = await Promise.all(
      [served, floor].map(async (side) => {
        side.client.send({ type: 'report' });
        return side.client.next<Latencies>('latencies');
      }),
    );
    const measured = BLOCKS * ROUNDS_PER_BLOCK;
    const rate = (side: Side) => (measured * SOCKETS) / side.seconds;
    const cpuPerUpdate = (side: Side) => side.serverCpuMicros / measured / 1000;
    const clientCpuPerUpdate = (side: Side) => side.clientCpuMicros / measured / 1000;
    const ratio = rate(served) / rate(floor);
    const latency = s as Latencies;
    const bareLatency = b as Latencies;
    const expected = measured * SOCKETS;
    if (latency.count !== expected || bareLatency.count !== expected) {
      throw new Error(
        `fanout: ${latency.count} and ${bareLatency.count} deliveries timed, ${expected} expected`,
      );
    }
    const againstPrevious: Row[] =
      earlier === null || previous === null
        ? []
        : [
            {
              scenario: 'fanout',
              figure: `deliveries/s to ${formatNumber(SOCKETS)} sockets of a user with no privacy settings, against ${previous.version}`,
              value: rate(served),
              unit: '/s',
              baseline: { label: `the service at ${previous.version}`, value: rate(earlier) },
              target: { text: '≥ 0.95×', met: rate(served) >= 0.95 * rate(earlier) },
              notes:
                `server CPU per update ${formatNumber(cpuPerUpdate(served))} ms against ` +
                `${formatNumber(cpuPerUpdate(earlier))} ms at ${previous.version}; the same blocks, in turn`,
            },
          ];
    return [
      ...againstPrevious,
      {
        scenario: 'fanout',
        figure: `deliveries/s, one Discord PRESENCE_UPDATE to ${formatNumber(SOCKETS)} subscribed sockets, end to end`,
        value: rate(served),
        unit: '/s',
        baseline: { label: 'bare ws, same frame in, same bytes out', value: rate(floor) },
        target: { text: '≥ 0.9×', met: ratio >= 0.9 },
        notes:
          `${measured} updates per side after ${WARMUP_ROUNDS} of warm-up, in ${BLOCKS} alternating blocks; ` +
          'servers, clients and the simulated Discords share the 2 cores, so this is their rate together: the client process used ' +
          `${formatNumber(clientCpuPerUpdate(served))} ms of CPU per update (bare ${formatNumber(clientCpuPerUpdate(floor))} ms)`,
      },
      {
        scenario: 'fanout',
        figure: `server CPU per update (Discord frame in, ${formatNumber(SOCKETS)} frames sent)`,
        value: cpuPerUpdate(served),
        unit: 'ms',
        baseline: { label: 'bare ws', value: cpuPerUpdate(floor) },
        target: { text: '≤ 1.1×', met: cpuPerUpdate(served) <= 1.1 * cpuPerUpdate(floor) },
        notes:
          'the server process alone, whatever the client does: taking the gateway frame, and for the service ' +
          'the ingest, the registry and one serialization, then the frames; above 1× is the service spending more',
      },
      {
        scenario: 'fanout',
        figure: 'p99 delivery latency (Discord frame → every socket)',
        value: latency.p99Ms,
        unit: 'ms',
        baseline: { label: 'bare ws', value: bareLatency.p99Ms },
        target: null,
        notes: `p50 ${formatNumber(latency.p50Ms)} ms, bare ws ${formatNumber(bareLatency.p50Ms)} ms`,
      },
    ];
  } finally {
    // Clients first: a server going away first would close 2,000 sockets at them.
    for (const child of children) await child.stop();
  }
}
