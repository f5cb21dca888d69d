import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';
import { type PrivateRedis, redisAvailable, startPrivateRedis } from '../support/redis.js';

/**
 * Redis's password is changed under running nodes (`CONFIG SET requirepass`, then `CLIENT KILL`): every
 * reconnect is refused. The nodes stay up and say they are not ready because of Redis; once Redis takes
 * their password again they recover by themselves, and presences flow again. The Redis is the test's own.
 */

const hasRedis = await redisAvailable('a Redis password rotated under the nodes');
const PASSWORD = 'the-password-the-nodes-have';
const ROTATED = 'a-password-the-nodes-do-not-have';
const GUILD = '300000000000000001';
const USER = '80351110224678912';

interface Ready {
  status: number;
  problems: string;
}

async function ready(node: NodeProcess): Promise<Ready> {
  const response = await fetch(`${node.url}/v1/ready`);
  return { status: response.status, problems: await response.text() };
}

async function statusOf(node: NodeProcess): Promise<string | undefined> {
  const body = (await (await fetch(`${node.url}/v1/users/${USER}`)).json()) as {
    data?: { discord_status: string };
  };
  return body.data?.discord_status;
}

describe.skipIf(!hasRedis)('a Redis password rotated under the nodes', () => {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  const nodes: NodeProcess[] = [];
  let redis: PrivateRedis;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startPrivateRedis({ password: PASSWORD });
    admin = new Redis(redis.port, '127.0.0.1', { password: PASSWORD });
    await simulator.start();
    simulator.createGuild({
      id: GUILD,
      name: 'Guild',
      members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
    });
    const env = (role: string) => ({
      ROLE: role,
      REDIS_URL: redis.url.replace('redis://', `redis://:${PASSWORD}@`),
      DISCORD_TOKEN: simulator.token,
      DISCORD_API_URL: simulator.apiUrl,
      DISCORD_CDN_URL: simulator.cdnUrl,
    });
    nodes.push(
      ...(await Promise.all([
        startNodeProcess('ingest', env('ingest'), { readyTimeoutMs: 30_000 }),
        startNodeProcess('api', env('api'), { readyTimeoutMs: 30_000 }),
      ])),
    );
    const api = nodes[1] as NodeProcess;
    await eventually(async () => expect(await statusOf(api)).toBe('online'), 15_000);
    for (const node of nodes) {
      await eventually(async () => expect((await ready(node)).status).toBe(200), 15_000);
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await simulator.stop();
    admin?.disconnect();
    redis?.remove();
  }, 30_000);

  it('keeps every node up and not ready until the password is right again, then recovers', async () => {
    const api = nodes[1] as NodeProcess;
    await admin.config('SET', 'requirepass', ROTATED);
    // Every connection but the admin's is dropped: each node reconnects with the password it has.
    await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await admin.client('KILL', 'TYPE', 'pubsub');
    for (const node of nodes) {
      await eventually(async () => {
        const answer = await ready(node);
        expect(answer.status).toBe(503);
        expect(answer.problems).toMatch(/redis/i);
      }, 20_000);
    }
    simulator.setPresence(USER, { status: 'dnd' });
    // Every node has been refused by Redis (its log says so), and its connections have kept trying for a
    // while: background work and the subscription meet the refusal too.
    for (const node of nodes) {
      await eventually(() => expect(node.output()).toContain('WRONGPASS'), 20_000);
    }
    const refused = async () =>
      Number((await admin.info('errorstats')).match(/errorstat_WRONGPASS:count=(\d+)/)?.[1] ?? 0);
    const refusedAtFirst = await refused();
    await eventually(async () => expect(await refused()).toBeGreaterThan(refusedAtFirst + 40), 30_000);
    for (const node of nodes) expect(node.child.exitCode, node.output()).toBeNull();

    await admin.config('SET', 'requirepass', PASSWORD);
    for (const node of nodes) {
      await eventually(async () => expect((await ready(node)).status).toBe(200), 20_000);
    }
    await eventually(async () => expect(await statusOf(api)).toBe('dnd'), 20_000);
    simulator.setPresence(USER, { status: 'idle' });
    await eventually(async () => expect(await statusOf(api)).toBe('idle'), 20_000);
    for (const node of nodes) expect(node.child.exitCode, node.output()).toBeNull();
  }, 120_000);
});
