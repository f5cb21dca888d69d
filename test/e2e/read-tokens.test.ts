import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { customStatusActivity } from '../../src/simulator/activities.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { SseReader } from '../sse/reader.js';
import { insertApiKey } from '../support/api-key.js';
import { type DurableStore, durableStores } from '../support/durable-stores.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { dropPrefix, REDIS_TEST_URL, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';

/**
 * Read tokens through the service as it runs, as a user would go about it: private by a DM to the bot, a
 * token made over REST and given to a page, which reads the presence, the card and the live stream with
 * it; then everything erased, the token with it. In scale-out, a token made on one API node reads on the
 * other, and removed on the first, it stops on the second at once, its stream there too; what lasts is
 * kept in Redis, then in PostgreSQL.
 */

const GUILD = '540000000000000001';
const ZOE = '540000000000000101';
const STATUS = 'ZOE-PRIVATE-STATUS';

type Call = { status: number; data: Record<string, unknown> | undefined; headers: Headers };

async function call(base: string, method: string, path: string, key?: string, body?: unknown): Promise<Call> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(key === undefined ? {} : { authorization: key }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    data: text === '' ? undefined : JSON.parse(text).data,
    headers: response.headers,
  };
}

const zoe = { user: { id: ZOE, username: 'zoe', global_name: 'Zoe', avatar: null } };
const zoesPresence = () => ({
  status: 'online' as const,
  activities: [customStatusActivity({ text: STATUS })],
});

describe('read tokens, end to end', () => {
  let h: Harness;
  let key: string;
  const readers: SseReader[] = [];

  beforeAll(async () => {
    h = await startHarness({
      setup: (sim) =>
        sim.createGuild({ id: GUILD, name: 'Tokens', members: [{ ...zoe, presence: zoesPresence() }] }),
    });
    await eventually(async () => expect((await call(h.base, 'GET', `/v1/users/${ZOE}`)).status).toBe(200));
    key = await insertApiKey(h.app.store, ZOE);
  });
  afterAll(async () => {
    for (const reader of readers) reader.close();
    await h?.close();
  });

  it('a private user hands a page a token: it reads them, nothing else does, until they erase everything', async () => {
    const dm = h.simulator.dmChannelFor(ZOE);
    const sent = h.simulator.sendMessage({ channelId: dm, author: ZOE, content: '?privacy private' });
    await h.simulator.waitForMessage(
      (message) => message.channel_id === dm && message.message_reference?.message_id === sent.id,
    );
    expect((await call(h.base, 'GET', `/v1/users/${ZOE}`)).status).toBe(404);

    const made = await call(h.base, 'POST', '/v1/users/@me/read-tokens', key, { label: 'my site' });
    expect(made.status).toBe(201);
    const token = made.data?.token as string;
    const read = await call(h.base, 'GET', `/v1/users/${ZOE}?token=${token}`);
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.data)).toContain(STATUS);
    const card = await fetch(`${h.base}/v1/users/${ZOE}/card.svg?token=${token}`);
    expect(await card.text()).toContain('Zoe');
    const stream = await SseReader.connect(h.base, `/v1/users/${ZOE}/events?token=${token}`);
    readers.push(stream);
    await stream.eventCount(1);
    h.simulator.setPresence(ZOE, { ...zoesPresence(), status: 'idle' });
    await stream.until((event) => JSON.parse(event.data).discord_status === 'idle');

    // Everything erased: the token with it, and the stream it opened ends.
    expect((await call(h.base, 'DELETE', '/v1/users/@me', key)).status).toBe(204);
    await stream.waitFor(() => stream.ended, 'the stream to end with the erasure');
    // The erasure made Zoe public again: she is read as anyone is, and the token is refused nowhere, only
    // worth nothing more (nothing tells it from no token).
    expect(await h.app.store.readTokens.readTokensOf(ZOE)).toEqual([]);
    const after = await call(h.base, 'GET', `/v1/users/${ZOE}?token=${token}`);
    expect(after.status).toBe(200);
    expect(after.headers.get('cache-control')).toBeNull();
  });
});

const stores = await durableStores('read tokens across nodes');

for (const store of stores) {
  describe.skipIf(!store.available)(`read tokens across API nodes, ${store.name}`, () => acrossNodes(store));
}

function acrossNodes(store: DurableStore): void {
  const prefix = uniquePrefix();
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  const apps: App[] = [];
  const readers: SseReader[] = [];
  let first: App;
  let second: App;
  let redis: Redis;
  let durable: Awaited<ReturnType<DurableStore['open']>>;

  const start = async (role: string) => {
    const app = await startApp(
      loadConfig(
        scaleOutEnv(role, simulator, prefix, {
          HOST: '127.0.0.1',
          PORT: '0',
          RATE_LIMIT_READ: '0',
          RATE_LIMIT_WRITE: '0',
          ...durable.env,
        }),
      ),
      { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) },
    );
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    durable = await store.open();
    redis = new Redis(REDIS_TEST_URL);
    await simulator.start();
    simulator.createGuild({ id: GUILD, name: 'Tokens', members: [{ ...zoe, presence: zoesPresence() }] });
    [, first, second] = await Promise.all([start('ingest'), start('api'), start('api')]);
    await eventually(async () => {
      for (const app of [first, second])
        expect((await call(app.url, 'GET', `/v1/users/${ZOE}`)).status).toBe(200);
    }, 15_000);
  }, 60_000);

  afterAll(async () => {
    for (const reader of readers) reader.close();
    await Promise.all(apps.map((app) => app.close()));
    await simulator.stop();
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await durable?.drop();
  }, 30_000);

  it('made on one node, it reads on the other; removed on the first, it stops on the second at once', async () => {
    const key = await insertApiKey(first.store, ZOE);
    expect(
      (await call(first.url, 'PATCH', '/v1/users/@me/privacy', key, { visibility: 'private' })).status,
    ).toBe(200);
    await eventually(async () =>
      expect((await call(second.url, 'GET', `/v1/users/${ZOE}`)).status).toBe(404),
    );
    const made = await call(first.url, 'POST', '/v1/users/@me/read-tokens', key);
    const { id, token } = made.data as { id: string; token: string };

    const read = await call(second.url, 'GET', `/v1/users/${ZOE}`, `Bearer ${token}`);
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.data)).toContain(STATUS);
    const stream = await SseReader.connect(second.url, `/v1/users/${ZOE}/events?token=${token}`);
    readers.push(stream);
    await stream.eventCount(1);
    simulator.setPresence(ZOE, { ...zoesPresence(), status: 'dnd' });
    await stream.until((event) => JSON.parse(event.data).discord_status === 'dnd', 0, 10_000);

    expect((await call(first.url, 'DELETE', `/v1/users/@me/read-tokens/${id}`, key)).status).toBe(204);
    // No waiting: the answer of the removal is the moment it stops everywhere.
    expect((await call(second.url, 'GET', `/v1/users/${ZOE}?token=${token}`)).status).toBe(404);
    await stream.waitFor(() => stream.ended, 'the stream on the other node to end', 10_000);
    expect((await call(second.url, 'GET', '/v1/users/@me/read-tokens', key)).data).toEqual({
      read_tokens: [],
      limit: 10,
    });
  });
}
