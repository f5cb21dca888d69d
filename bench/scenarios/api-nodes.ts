import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { type NodeProcess, startNodeProcess } from '../../test/support/node-process.js';
import { processCpuMicros } from '../lib/proc-cpu.js';
import type { Row } from '../lib/results.js';
import { BENCH_GUILD, benchUserId, realisticPresence } from '../lib/workload.js';
import { wrk } from '../lib/wrk.js';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const LOAD = { connections: 100, threads: 2, seconds: 10 };

/**
 * Scale-out reads: an ingest node and API nodes as processes on Redis. The same total load (100
 * connections from wrk) against one API node, then split over two: read throughput as nodes are added.
 */
export async function apiNodes(): Promise<Row[]> {
  const prefix = `presently-bench:${randomBytes(4).toString('hex')}:`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  await redis.connect().catch(() => {
    throw new Error(`the api-nodes scenario needs Redis at ${REDIS_URL} (BENCH_REDIS_URL)`);
  });
  const simulator = new DiscordSimulator();
  await simulator.start();
  const userId = benchUserId(0);
  simulator.createGuild({
    id: BENCH_GUILD,
    name: 'Bench',
    members: [{ user: { id: userId, username: 'bench_user_0' }, presence: realisticPresence(0) }],
  });
  const env = (role: string) => ({
    ROLE: role,
    REDIS_URL,
    REDIS_PREFIX: prefix,
    DISCORD_TOKEN: simulator.token,
    DISCORD_API_URL: simulator.apiUrl,
    DISCORD_CDN_URL: simulator.cdnUrl,
    RATE_LIMIT_READ: '0',
  });
  const nodes: NodeProcess[] = [];
  try {
    nodes.push(
      ...(await Promise.all([
        startNodeProcess('ingest', env('ingest')),
        startNodeProcess('api-1', env('api')),
        startNodeProcess('api-2', env('api')),
      ])),
    );
    const [, first, second] = nodes as [NodeProcess, NodeProcess, NodeProcess];
    for (const node of [first, second]) {
      for (let i = 0; (await fetch(`${node.url}/v1/users/${userId}`)).status !== 200; i++) {
        if (i > 200) throw new Error(`${node.name} never served the bench user`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const path = `/v1/users/${userId}`;
    await wrk(`${first.url}${path}`, { ...LOAD, seconds: 3 });
    const apiCpu = async () =>
      (await processCpuMicros(first.child.pid as number)) +
      (await processCpuMicros(second.child.pid as number));
    let cpuBefore = await apiCpu();
    const one = await wrk(`${first.url}${path}`, LOAD);
    const oneCpu = (await apiCpu()) - cpuBefore;
    const half = { connections: LOAD.connections / 2, threads: 1, seconds: LOAD.seconds };
    cpuBefore = await apiCpu();
    const [a, b] = await Promise.all([wrk(`${first.url}${path}`, half), wrk(`${second.url}${path}`, half)]);
    const twoCpu = (await apiCpu()) - cpuBefore;
    const two = a.requestsPerSecond + b.requestsPerSecond;
    return [
      {
        scenario: 'api-nodes',
        figure: 'GET /v1/users/:id over two API nodes (Redis scale-out)',
        value: two,
        unit: 'req/s',
        baseline: { label: 'one API node, same load', value: one.requestsPerSecond },
        target: { text: '> 1×', met: two > one.requestsPerSecond },
        notes:
          'all processes (wrk, ingest node, API nodes, Redis) share this machine’s cores, so the second node ' +
          'adds only the CPU the first left idle; on separate machines each node brings its own',
      },
      {
        scenario: 'api-nodes',
        figure: 'API nodes’ CPU per request, two API nodes',
        value: twoCpu / (a.requests + b.requests),
        unit: 'µs',
        baseline: { label: 'one API node, same load', value: oneCpu / one.requests },
        target: null,
        notes: 'both API processes’ CPU over the run (/proc), divided by the requests answered',
      },
    ];
  } finally {
    await Promise.all(nodes.map((node) => node.stop()));
    await simulator.stop();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}
