import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordSimulator } from '../../src/discord/simulator/index.js';
import { obtainApiKey } from '../support/api-key.js';
import { eventually, sleep } from '../support/eventually.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';
import { type PrivateRedis, redisAvailable, startPrivateRedis } from '../support/redis.js';

/**
 * Redis goes away during traffic and comes back: the nodes recover by themselves, serve the current state
 * again within seconds, and every KV write they acknowledged is still there. The Redis here is a private
 * one on its own port, with the durable settings the README asks for (AOF, fsync on every write).
 */

const hasRedis = await redisAvailable('Redis restart');
const GUILD = '300000000000000001';
const USER = '80351110224678912';

describe.skipIf(!hasRedis)('Redis restarted under traffic', () => {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  const nodes: NodeProcess[] = [];
  let redis: PrivateRedis;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    await simulator.start();
    simulator.createGuild({
      id: GUILD,
      name: 'Guild',
      members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
    });
    const env = (role: string) => ({
      ROLE: role,
      REDIS_URL: redis.url,
      DISCORD_TOKEN: simulator.token,
      DISCORD_API_URL: simulator.apiUrl,
      DISCORD_CDN_URL: simulator.cdnUrl,
      RATE_LIMIT_WRITE: '0',
    });
    nodes.push(
      ...(await Promise.all([
        startNodeProcess('ingest', env('ingest')),
        startNodeProcess('api', env('api')),
      ])),
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await simulator.stop();
    redis.remove();
  }, 30_000);

  it('recovers, serves the current state within seconds and loses no acknowledged write', async () => {
    const api = nodes[1] as NodeProcess;
    const read = async () => {
      const response = await fetch(`${api.url}/v1/users/${USER}`);
      return (await response.json()) as { data?: { discord_status: string; kv: Record<string, string> } };
    };
    await eventually(async () => expect((await read()).data?.discord_status).toBe('online'), 15_000);
    const key = await obtainApiKey({ simulator, base: api.url }, USER);

    const acknowledged: string[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        try {
          const response = await fetch(`${api.url}/v1/users/${USER}/kv/k${i}`, {
            method: 'PUT',
            headers: { authorization: key },
            body: `v${i}`,
            signal: AbortSignal.timeout(20_000),
          });
          if (response.status === 204) acknowledged.push(`k${i}`);
        } catch {
          // not acknowledged: it may or may not have landed, and the test does not count it
        }
        await sleep(20);
      }
    })();

    await eventually(() => expect(acknowledged.length).toBeGreaterThan(10));
    redis.kill();
    await sleep(300);
    simulator.setPresence(USER, { status: 'dnd' });
    await sleep(1_000);
    await redis.start();

    await eventually(async () => expect((await read()).data?.discord_status).toBe('dnd'), 10_000);
    const countAtRecovery = acknowledged.length;
    await eventually(() => expect(acknowledged.length).toBeGreaterThan(countAtRecovery + 5), 10_000);
    writing = false;
    await writer;

    await eventually(async () => {
      const kv: Record<string, string> = (await read()).data?.kv ?? {};
      for (const name of acknowledged) expect(kv[name], name).toBe(`v${name.slice(1)}`);
    }, 10_000);
  }, 90_000);
});
