import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, type AppOptions, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { hashApiKey } from '../../src/keys/api-key.js';
import type { DiscordStatus } from '../../src/presence/model.js';
import { customStatusActivity } from '../../src/simulator/activities.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { type Frame, SocketClient } from '../socket/client.js';
import { insertApiKey } from '../support/api-key.js';
import { type DurableStore, durableStores } from '../support/durable-stores.js';
import { eventually } from '../support/eventually.js';
import { dropPrefix, REDIS_TEST_URL, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * `DELETE /v1/users/@me` in scale-out: the request reaches one API node, while the user's presence is
 * held by the ingest node (which records their history, holding its batches until the test says) and
 * served by every API node, each with its own directories of settings and webhooks. An ingest node and
 * two API nodes, on this machine's Redis, run in this process; what lasts is kept in Redis, then in
 * PostgreSQL.
 */

const stores = await durableStores('erasing everything across nodes');

const GUILD = '530000000000000001';
const ANA = '530000000000000101';
/** The ingest node writes history only when the test flushes it. */
const HELD = 3_600_000;

type PresenceData = { kv: Record<string, string>; custom_status: { text: string } | null };

for (const store of stores) {
  describe.skipIf(!store.available)(`DELETE /v1/users/@me across nodes, ${store.name}`, () =>
    eraseAcrossNodes(store),
  );
}

function eraseAcrossNodes(store: DurableStore): void {
  const prefix = uniquePrefix();
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  const apps: App[] = [];
  let ingest: App;
  let first: App;
  let second: App;
  let receiver: WebhookReceiver;
  let redis: Redis;
  let durable: Awaited<ReturnType<DurableStore['open']>>;

  const start = async (role: string, options: Partial<AppOptions> = {}) => {
    const app = await startApp(
      loadConfig(
        scaleOutEnv(role, simulator, prefix, {
          HOST: '127.0.0.1',
          PORT: '0',
          RATE_LIMIT_READ: '0',
          RATE_LIMIT_WRITE: '0',
          WEBHOOKS_ALLOW_PRIVATE: 'true',
          ...durable.env,
        }),
      ),
      { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }), ...options },
    );
    apps.push(app);
    return app;
  };

  const call = async (app: App, method: string, path: string, key?: string, body?: unknown) => {
    const response = await fetch(`${app.url}${path}`, {
      method,
      headers: {
        ...(key === undefined ? {} : { authorization: key }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, data: text === '' ? undefined : JSON.parse(text).data };
  };
  const presenceOn = async (app: App) => (await call(app, 'GET', `/v1/users/${ANA}`)).data as PresenceData;
  const setStatus = (status: DiscordStatus) =>
    simulator.setPresence(ANA, {
      status,
      activities: [customStatusActivity({ text: 'ANA-STATUS', createdAt: Date.now() })],
    });

  beforeAll(async () => {
    durable = await store.open();
    redis = new Redis(REDIS_TEST_URL);
    receiver = await startWebhookReceiver(() => 'hang');
    await simulator.start();
    simulator.createGuild({
      id: GUILD,
      name: 'Erasures',
      members: [{ user: { id: ANA, username: 'ana' }, presence: { status: 'online' } }],
    });
    setStatus('online');
    [ingest, first, second] = await Promise.all([
      start('ingest', { history: { flushMs: HELD } }),
      start('api'),
      start('api'),
    ]);
    await eventually(async () => {
      for (const app of [first, second])
        expect((await call(app, 'GET', `/v1/users/${ANA}`)).status).toBe(200);
    }, 15_000);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await simulator.stop();
    await receiver?.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await durable?.drop();
  }, 30_000);

  it('erased on one API node, it is gone from every node at once, and no node writes any of it back', async () => {
    const key = await insertApiKey(first.store, ANA);
    expect((await call(first, 'PATCH', '/v1/users/@me/kv', key, { secret_plan: 'KV-OF-ANA' })).status).toBe(
      204,
    );
    expect(
      (await call(first, 'PATCH', '/v1/users/@me/privacy', key, { hide_custom_status: true })).status,
    ).toBe(200);
    const hook = await call(first, 'POST', '/v1/users/@me/webhooks', key, {
      url: `${receiver.url}/ana`,
      events: ['presence'],
    });
    expect(hook.status).toBe(201);
    const webhookId = (hook.data as { id: string }).id;
    // Every node sees it all: the KV, the hidden custom status, the webhook (its events queue in Redis,
    // the receiver holding the first).
    await eventually(async () => {
      for (const app of [first, second]) {
        const shown = await presenceOn(app);
        expect(shown.kv).toEqual({ secret_plan: 'KV-OF-ANA' });
        expect(shown.custom_status).toBeNull();
      }
    });
    // The ingest node hears of the new webhook through the bus, a moment after the 201: changes go on
    // until one reaches the receiver, which holds it.
    let next: DiscordStatus = 'idle';
    await eventually(
      async () => {
        setStatus(next);
        next = next === 'idle' ? 'online' : 'idle';
        expect(receiver.held).toBe(1);
      },
      5_000,
      100,
    );
    setStatus('dnd');
    await eventually(async () =>
      expect(await redis.llen(`${prefix}webhook-queue:{${webhookId}}`)).toBeGreaterThan(1),
    );
    // Seen by the ingest node, held in its batch: these must not come back once erased.
    await eventually(async () => expect((await presenceOn(second)).custom_status).toBeNull());

    const socket = await SocketClient.connect(second.url);
    await socket.subscribe({ subscribe_to_id: ANA });

    const erased = await call(first, 'DELETE', '/v1/users/@me', key);
    expect(erased.status).toBe(204);
    // The node that answered shows it with the answer; the key is refused on every node at once.
    expect((await presenceOn(first)).kv).toEqual({});
    for (const app of [first, second])
      expect((await call(app, 'GET', '/v1/users/@me', key)).status).toBe(401);
    // The other node's subscribers get the presence without the KV, then with the default settings.
    await socket.until(
      (frame: Frame) =>
        frame.t === 'PRESENCE_UPDATE' &&
        Object.keys((frame.d as PresenceData).kv).length === 0 &&
        (frame.d as PresenceData).custom_status?.text === 'ANA-STATUS',
    );
    await socket.close();
    await eventually(async () => {
      const shown = await presenceOn(second);
      expect(shown.kv).toEqual({});
      expect(shown.custom_status?.text).toBe('ANA-STATUS');
    });

    // What the ingest node held queued is not written; the store holds nothing of Ana.
    await ingest.history?.flush();
    for (const app of [ingest, first, second]) {
      expect(await app.store.history.history(ANA, 100)).toEqual({ status: [], tracks: [] });
      expect((await app.store.kv.getKv(ANA)).kv).toEqual({});
      expect(await app.store.apiKeys.findKey(hashApiKey(key))).toBeUndefined();
      expect(await app.store.webhooks.webhooksOf(ANA)).toEqual([]);
      expect(await app.store.privacy.getPrivacy(ANA)).toBeUndefined();
    }
    const history = await call(second, 'GET', `/v1/users/${ANA}/history`);
    expect(history.data).toEqual({ status_history: [], track_history: [] });
    // The events waiting in Redis for the webhook are gone with it.
    expect(await redis.llen(`${prefix}webhook-queue:{${webhookId}}`)).toBe(0);
    receiver.release(200);

    // A change after the erasure is recorded as any other.
    setStatus('online');
    await eventually(async () =>
      expect((await call(second, 'GET', `/v1/users/${ANA}/stats`)).data).toMatchObject({
        current_status: 'online',
      }),
    );
    await ingest.history?.flush();
    expect((await ingest.store.history.history(ANA, 100)).status.map((entry) => entry.status)).toEqual([
      'online',
    ]);
  });
}
