import { type BenchChild, startChild } from '../lib/child.js';
import { quantile, type Row } from '../lib/results.js';

const SOCKETS = 2_000;
const WARMUP_ROUNDS = 30;
const ROUNDS = 300;

interface Run {
  deliveriesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** One update at a time to every socket; the next once all have it: deliveries/s and delivery latency. */
async function measure(server: BenchChild, client: BenchChild): Promise<Run> {
  let seq = 0;
  const round = async () => {
    seq++;
    server.send({ type: 'update', seq });
    await client.next('round');
  };
  for (let i = 0; i < WARMUP_ROUNDS; i++) await round();
  client.send({ type: 'measure' });
  const started = process.hrtime.bigint();
  for (let i = 0; i < ROUNDS; i++) await round();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  client.send({ type: 'report' });
  const { latencies } = await client.next<{ type: string; latencies: number[] }>('latencies');
  return {
    deliveriesPerSecond: (ROUNDS * SOCKETS) / seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
  };
}

async function run(target: 'service' | 'bare', presenceJson: string): Promise<{ run: Run; json: string }> {
  const server = startChild(target === 'service' ? 'service' : 'bare-ws', [], {
    PRESENCE_JSON: presenceJson,
  });
  const ready = await server.next<{ type: string; url: string; userId?: string; json?: string }>('ready');
  const client = startChild('fanout-client', [], {
    URL: ready.url,
    SOCKETS: String(SOCKETS),
    PROTOCOL: target === 'service' ? 'lanyard' : 'bare',
    USER_ID: ready.userId ?? '',
  });
  try {
    await client.next('ready');
    return { run: await measure(server, client), json: ready.json ?? presenceJson };
  } finally {
    await client.stop();
    await server.stop();
  }
}

export async function fanout(): Promise<Row[]> {
  const service = await run('service', '');
  const bare = await run('bare', service.json);
  const ratio = service.run.deliveriesPerSecond / bare.run.deliveriesPerSecond;
  return [
    {
      scenario: 'fanout',
      figure: `deliveries/s, one update to ${SOCKETS.toLocaleString('en-US')} subscribers`,
      value: service.run.deliveriesPerSecond,
      unit: '/s',
      baseline: { label: 'bare ws broadcast of the same bytes', value: bare.run.deliveriesPerSecond },
      target: { text: '≥ 0.9× baseline', met: ratio >= 0.9 },
    },
    {
      scenario: 'fanout',
      figure: 'p99 delivery latency (p50 in notes)',
      value: service.run.p99Ms,
      unit: 'ms',
      baseline: { label: 'bare ws', value: bare.run.p99Ms },
      target: null,
      notes: `p50 ${service.run.p50Ms} ms (bare ws ${bare.run.p50Ms} ms); ${ROUNDS} updates after ${WARMUP_ROUNDS} of warm-up`,
    },
  ];
}
