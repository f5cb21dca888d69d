import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RetentionSweep } from '../../src/account/retention.js';
import { type App, type AppOptions, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { type DurableStore, durableStores } from '../support/durable-stores.js';
import { eventually } from '../support/eventually.js';
import { KV_LIMITS } from '../support/kv.js';
import { dropPrefix, REDIS_TEST_URL, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';

/**
 * Retention with two ingest nodes, one shard each, RETENTION_DAYS=0: a user who leaves the guild of one
 * node while still in the other's is kept, by the node that let him go and by its sweep however late its
 * clock, and is erased once the last node lets him go. Run on this machine's Redis, what lasts kept in
 * Redis, then in PostgreSQL.
 */

const stores = await durableStores('retention across ingest nodes');

/** Guild ids land on a shard by `(id >> 22) % shard_count`. */
const GUILD_ON_0 = String(2000n << 22n);
const GUILD_ON_1 = String(2001n << 22n);
const DAN = '80351110224678921'; // both shards: published by the node of shard 0
const CAROL = '80351110224678922'; // shard 1 only
const DAY = 86_400_000;

for (const store of stores) {
  describe.skipIf(!store.available)(`retention with two ingest nodes, ${store.name}`, () =>
    retentionAcrossNodes(store),
  );
}

function retentionAcrossNodes(store: DurableStore): void {
  const prefix = uniquePrefix();
  const simulator = new DiscordSimulator({ shardCount: 2, heartbeatIntervalMs: 1_000 });
  const apps: App[] = [];
  let first: App;
  let second: App;
  let durable: Awaited<ReturnType<DurableStore['open']>>;
  /** How far ahead the first node's retention clock runs. */
  let ahead = 0;

  const start = async (extra: Record<string, string>, options: Partial<AppOptions> = {}) => {
    const app = await startApp(
      loadConfig(
        scaleOutEnv('ingest', simulator, prefix, {
          HOST: '127.0.0.1',
          PORT: '0',
          RETENTION_DAYS: '0',
          SHARD_COUNT: '2',
          ...durable.env,
          ...extra,
        }),
      ),
      { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }), ...options },
    );
    apps.push(app);
    return app;
  };

  const sweepOf = (app: App): RetentionSweep => {
    if (!app.retention) throw new Error('expected a retention sweep on an ingest node');
    return app.retention;
  };
  const kvOf = async (userId: string) => (await first.store.kv.getKv(userId)).kv;

  beforeAll(async () => {
    durable = await store.open();
    await simulator.start();
    simulator.createGuild({
      id: GUILD_ON_0,
      name: 'Shard zero',
      members: [{ user: { id: DAN, username: 'dan' }, presence: { status: 'online' } }],
    });
    simulator.createGuild({
      id: GUILD_ON_1,
      name: 'Shard one',
      members: [
        { user: { id: DAN, username: 'dan' }, presence: { status: 'online' } },
        { user: { id: CAROL, username: 'carol' }, presence: { status: 'online' } },
      ],
    });
    [first, second] = await Promise.all([
      start({ SHARD_IDS: '0' }, { retention: { now: () => Date.now() + ahead } }),
      start({ SHARD_IDS: '1' }),
    ]);
    // Both nodes have listed their guilds and written the moments of those they monitor.
    await eventually(async () => {
      expect(first.registry?.isMonitored(DAN)).toBe(true);
      expect(second.registry?.isMonitored(CAROL)).toBe(true);
      expect((await first.store.retention.due(Number.MAX_SAFE_INTEGER, 10)).sort()).toEqual(
        [DAN, CAROL].sort(),
      );
    }, 15_000);
    for (const userId of [DAN, CAROL]) {
      await first.store.kv.writeKv(userId, { set: new Map([['mood', 'kept']]), delete: [] }, KV_LIMITS);
      await first.store.privacy.patchPrivacy(userId, { hide_platforms: true });
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await simulator.stop();
    const redis = new Redis(REDIS_TEST_URL);
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await durable?.drop();
  }, 30_000);

  it('keeps a user still in a guild of another node, whatever the sweeping node sees', async () => {
    simulator.removeMember(GUILD_ON_0, DAN);
    await eventually(() => expect(first.registry?.isMonitored(DAN)).toBe(false));
    await sweepOf(first).flush();
    await sweepOf(second).flush();
    // Two days on by the first node's clock, Dan's and Carol's moments are old; the second node sees both.
    ahead = 2 * DAY;
    expect(await sweepOf(first).sweep()).toEqual({ erased: 0, monitored: 2 });
    expect(await kvOf(DAN)).toEqual({ mood: 'kept' });
    expect(await kvOf(CAROL)).toEqual({ mood: 'kept' });
  });

  it('erases him once the last node lets him go, and nobody else', async () => {
    simulator.removeMember(GUILD_ON_1, DAN);
    await eventually(async () => {
      expect(await kvOf(DAN)).toEqual({});
      expect(await first.store.privacy.getPrivacy(DAN)).toBeUndefined();
    }, 10_000);
    expect(await kvOf(CAROL)).toEqual({ mood: 'kept' });
    expect(await first.store.privacy.getPrivacy(CAROL)).toEqual({ hide_platforms: true });
    expect(await first.store.retention.due(Number.MAX_SAFE_INTEGER, 10)).toContain(CAROL);
  });
}
