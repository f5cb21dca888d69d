import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, type AppOptions, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { DiscordStatus } from '../../src/presence/model.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { type DurableStore, durableStores } from '../support/durable-stores.js';
import { eventually } from '../support/eventually.js';
import { dropPrefix, REDIS_TEST_URL, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';

/**
 * `?forget confirm` in scale-out: the user's history is recorded by the ingest node that owns them, while
 * the command reaches whichever node receives the message (DMs come on shard 0). Two ingest nodes, one
 * shard each, and an API node, all on this machine's Redis, run in this process so that the recording
 * node's batches can be held: it writes what it holds only when the test says. History is kept in Redis,
 * then in PostgreSQL.
 */

const stores = await durableStores('?forget across ingest nodes');

/** Guild ids land on a shard by `(id >> 22) % shard_count`. */
const GUILD_ON_0 = String(1000n << 22n);
const GUILD_ON_1 = String(1001n << 22n);
const BOB = '80351110224678913'; // shard 0 only
const CAROL = '80351110224678914'; // shard 1 only: recorded by the node of shard 1
/** The recording node writes history only when the test flushes it. */
const HELD = 3_600_000;

for (const store of stores) {
  describe.skipIf(!store.available)(`?forget confirm with two ingest nodes, ${store.name}`, () =>
    forgetAcrossNodes(store),
  );
}

function forgetAcrossNodes(store: DurableStore): void {
  const prefix = uniquePrefix();
  const simulator = new DiscordSimulator({ shardCount: 2, heartbeatIntervalMs: 1_000 });
  const apps: App[] = [];
  let recording: App;
  let api: App;
  let durable: Awaited<ReturnType<DurableStore['open']>>;

  const start = async (role: string, extra: Record<string, string>, options: Partial<AppOptions> = {}) => {
    const app = await startApp(
      loadConfig(
        scaleOutEnv(role, simulator, prefix, {
          HOST: '127.0.0.1',
          PORT: '0',
          RATE_LIMIT_READ: '0',
          ...durable.env,
          ...extra,
        }),
      ),
      { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }), ...options },
    );
    apps.push(app);
    return app;
  };

  const statusOf = async (userId: string): Promise<string | undefined> => {
    const response = await fetch(`${api.url}/v1/users/${userId}`);
    const body = (await response.json()) as { data?: { discord_status: string } };
    return body.data?.discord_status;
  };

  const statusHistory = async (userId: string): Promise<DiscordStatus[]> => {
    const response = await fetch(`${api.url}/v1/users/${userId}/history`);
    const body = (await response.json()) as { data: { status_history: { status: DiscordStatus }[] } };
    return body.data.status_history.map((entry) => entry.status);
  };

  /** The status reaches the API node, so the recording node has published it and queued it for history. */
  const change = async (userId: string, status: DiscordStatus) => {
    simulator.setPresence(userId, { status });
    await eventually(async () => expect(await statusOf(userId)).toBe(status), 10_000);
  };

  beforeAll(async () => {
    durable = await store.open();
    await simulator.start();
    simulator.createGuild({
      id: GUILD_ON_0,
      name: 'Shard zero',
      members: [{ user: { id: BOB, username: 'bob' }, presence: { status: 'online' } }],
    });
    simulator.createGuild({
      id: GUILD_ON_1,
      name: 'Shard one',
      members: [{ user: { id: CAROL, username: 'carol' }, presence: { status: 'online' } }],
    });
    // DMs, and so the command, reach the node of shard 0, which does not record Carol.
    [, recording, api] = await Promise.all([
      start('ingest', { SHARD_COUNT: '2', SHARD_IDS: '0' }),
      start('ingest', { SHARD_COUNT: '2', SHARD_IDS: '1' }, { history: { flushMs: HELD } }),
      start('api', {}),
    ]);
    await eventually(async () => {
      expect(await statusOf(BOB)).toBe('online');
      expect(await statusOf(CAROL)).toBe('online');
    }, 15_000);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await simulator.stop();
    const redis = new Redis(REDIS_TEST_URL);
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await durable?.drop();
  }, 30_000);

  it('nothing the recording node held from before the answer is written afterwards', async () => {
    // Recorded by the node of shard 1, once it has read what was stored of her: in the store, since the
    // API node also shows the statuses it has just seen.
    await eventually(async () => {
      await recording.history?.flush();
      const { status } = await recording.store.history.history(CAROL, 10);
      expect(status.map((entry) => entry.status)).toEqual(['online']);
    });
    await change(CAROL, 'idle');

    const dm = simulator.dmChannelFor(CAROL);
    const sent = simulator.sendMessage({ channelId: dm, author: CAROL, content: '?forget confirm' });
    const answer = await simulator.waitForMessage(
      (message) => message.message_reference?.message_id === sent.id,
      10_000,
    );
    expect(answer.channel_id).toBe(dm);
    expect(answer.content).toMatch(/^Done: erased 1 status entries/);
    expect(await statusHistory(CAROL)).toEqual([]);

    // A change after the answer, queued behind the one from before it: once it is written, so was the queue.
    await change(CAROL, 'dnd');
    await recording.history?.flush();
    expect(await statusHistory(CAROL)).toEqual(['dnd']);
  });
}
