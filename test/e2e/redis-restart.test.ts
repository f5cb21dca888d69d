import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { obtainApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
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
    const apiKey = await obtainApiKey({ simulator, base: api.url }, USER);

    // Writes back to back, each as soon as the last is answered, over a few keys (a user has at most 512):
    // per key, the values written in order, and the last one acknowledged.
    const KEYS = 50;
    const written: string[][] = Array.from({ length: KEYS }, () => []);
    const lastAcknowledged: (string | undefined)[] = [];
    let acknowledgedCount = 0;
    let refusedCount = 0;
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const key = i % KEYS;
        written[key]?.push(`v${i}`);
        try {
          const response = await fetch(`${api.url}/v1/users/${USER}/kv/k${key}`, {
            method: 'PUT',
            headers: { authorization: apiKey },
            body: `v${i}`,
            signal: AbortSignal.timeout(20_000),
          });
          if (response.status === 204) {
            lastAcknowledged[key] = `v${i}`;
            acknowledgedCount++;
          } else refusedCount++;
        } catch {
          // not acknowledged: it may or may not have landed
          refusedCount++;
        }
      }
    })();

    await eventually(() => expect(acknowledgedCount).toBeGreaterThan(10));
    redis.kill();
    // Both nodes see Redis gone (their readiness names it) before the presence changes.
    for (const node of nodes) {
      await eventually(async () => expect((await fetch(`${node.url}/v1/ready`)).status).toBe(503), 20_000);
    }
    simulator.setPresence(USER, { status: 'dnd' });
    // Redis stays away while writes keep failing: a few refused after the change.
    const refusedAtChange = refusedCount;
    await eventually(() => expect(refusedCount).toBeGreaterThan(refusedAtChange + 3), 20_000);
    await redis.start();

    await eventually(async () => expect((await read()).data?.discord_status).toBe('dnd'), 20_000);
    const countAtRecovery = acknowledgedCount;
    await eventually(() => expect(acknowledgedCount).toBeGreaterThan(countAtRecovery + 5), 20_000);
    writing = false;
    await writer;

    // Every key holds its last acknowledged value, or one written after it (a write that was not
    // acknowledged may still have landed): never an older one.
    await eventually(async () => {
      const kv: Record<string, string> = (await read()).data?.kv ?? {};
      lastAcknowledged.forEach((value, key) => {
        if (value === undefined) return;
        const values = written[key] ?? [];
        expect(values.indexOf(kv[`k${key}`] ?? ''), `k${key}`).toBeGreaterThanOrEqual(values.indexOf(value));
      });
    }, 20_000);
  }, 150_000);
});
