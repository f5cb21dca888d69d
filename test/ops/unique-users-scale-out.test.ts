import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';

/**
 * `presently_unique_users` in scale-out: two ingest nodes, one shard each, and an API node on this
 * machine's Redis. A user in servers on both shards is seen by both ingest nodes, and counted once by the
 * API node, whose replica holds each shared presence once.
 */

const hasRedis = await redisAvailable('presently_unique_users in scale-out');

/** Guild ids land on a shard by `(id >> 22) % shard_count`. */
const GUILD_ON_0 = String(1000n << 22n);
const GUILD_ON_1 = String(1001n << 22n);
const ALICE = '80351110224678912'; // both shards
const BOB = '80351110224678913'; // shard 0 only
const CAROL = '80351110224678914'; // shard 1 only

describe.skipIf(!hasRedis)('presently_unique_users across nodes', () => {
  const prefix = uniquePrefix();
  const simulator = new DiscordSimulator({ shardCount: 2, heartbeatIntervalMs: 1_000 });
  const apps: App[] = [];
  let ingest0: App;
  let ingest1: App;
  let api: App;

  const start = async (role: string, extra: Record<string, string> = {}) => {
    const app = await startApp(
      loadConfig(
        scaleOutEnv(role, simulator, prefix, {
          HOST: '127.0.0.1',
          PORT: '0',
          RATE_LIMIT_READ: '0',
          ...extra,
        }),
      ),
      { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) },
    );
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    await simulator.start();
    simulator.createGuild({
      id: GUILD_ON_0,
      name: 'Shard zero',
      members: [
        { user: { id: ALICE, username: 'alice' }, presence: { status: 'online' } },
        { user: { id: BOB, username: 'bob' }, presence: { status: 'online' } },
      ],
    });
    simulator.createGuild({
      id: GUILD_ON_1,
      name: 'Shard one',
      members: [
        { user: { id: ALICE, username: 'alice' }, presence: { status: 'online' } },
        { user: { id: CAROL, username: 'carol' }, presence: { status: 'online' } },
      ],
    });
    [ingest0, ingest1, api] = await Promise.all([
      start('ingest', { SHARD_COUNT: '2', SHARD_IDS: '0' }),
      start('ingest', { SHARD_COUNT: '2', SHARD_IDS: '1' }),
      start('api'),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await simulator.stop();
    const redis = new Redis(REDIS_TEST_URL);
    await dropPrefix(redis, prefix);
    redis.disconnect();
  }, 30_000);

  it('the API node counts each user once; an ingest node counts only its own shard’s', async () => {
    await eventually(async () => {
      for (const node of [ingest0, ingest1]) {
        expect(sampleValue(await scrape(node.url), 'presently_unique_users')).toBe(2);
      }
      expect(sampleValue(await scrape(api.url), 'presently_unique_users')).toBe(3);
    }, 15_000);
    // Summed over the ingest nodes, Alice would be counted twice: the count to read is the API node's,
    // which is also the largest of every node's.
    simulator.removeMember(GUILD_ON_1, ALICE);
    await eventually(async () => {
      expect(sampleValue(await scrape(ingest1.url), 'presently_unique_users')).toBe(1);
    }, 15_000);
    expect(sampleValue(await scrape(api.url), 'presently_unique_users')).toBe(3);
    simulator.removeMember(GUILD_ON_0, BOB);
    await eventually(async () => {
      expect(sampleValue(await scrape(api.url), 'presently_unique_users')).toBe(2);
    }, 15_000);
  });
});
