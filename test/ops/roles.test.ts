import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { type PrivateRedis, redisAvailable, startPrivateRedis } from '../support/redis.js';

/**
 * Health, readiness and metrics of the scale-out roles: an ingest node (gateway, no REST) and an API node
 * (REST and sockets, no gateway) sharing a Redis of the test's own, which the test stops and starts again.
 */

const hasRedis = await redisAvailable('health and readiness of the roles');
const GUILD = '300000000000000001';
const USER = '80351110224678912';

async function ready(app: App): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${app.url}/v1/ready`);
  return { status: response.status, body: await response.json() };
}

describe.skipIf(!hasRedis)('an ingest node and an API node', () => {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  let redis: PrivateRedis;
  let ingest: App;
  let api: App;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    await simulator.start();
    simulator.createGuild({
      id: GUILD,
      name: 'Guild',
      members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
    });
    const start = (role: string) =>
      startApp(
        loadConfig({
          ROLE: role,
          REDIS_URL: redis.url,
          DISCORD_TOKEN: simulator.token,
          DISCORD_API_URL: simulator.apiUrl,
          DISCORD_CDN_URL: simulator.cdnUrl,
          HOST: '127.0.0.1',
          PORT: '0',
        }),
        { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) },
      );
    ingest = await start('ingest');
    api = await start('api');
  }, 30_000);

  afterAll(async () => {
    await Promise.all([ingest?.close(), api?.close()]);
    await simulator.stop();
    redis?.remove();
  }, 30_000);

  it('each answers health, readiness with its own checks, and metrics', async () => {
    for (const app of [ingest, api]) {
      const health = await fetch(`${app.url}/v1/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ success: true, data: { status: 'ok' } });
    }
    await eventually(async () =>
      expect(await ready(ingest)).toEqual({
        status: 200,
        body: {
          success: true,
          data: {
            status: 'ready',
            checks: { store: 'ok', gateway: 'ok' },
            shards: [{ id: 0, state: 'ready', last_event_ms: expect.any(Number) }],
          },
        },
      }),
    );
    await eventually(async () =>
      expect(await ready(api)).toEqual({
        status: 200,
        body: { success: true, data: { status: 'ready', checks: { store: 'ok', replica: 'ok' } } },
      }),
    );

    // The ingest node sees Discord; the API node serves what it shares.
    const seen = await scrape(ingest.url);
    expect(sampleValue(seen, 'presently_gateway_shards_ready')).toBe(1);
    expect(sampleValue(seen, 'presently_gateway_events_total', { type: 'READY' })).toBe(1);
    expect(sampleValue(seen, 'presently_monitored_users')).toBe(1);
    await eventually(async () => expect((await fetch(`${api.url}/v1/users/${USER}`)).status).toBe(200));
    const served = await scrape(api.url);
    expect(sampleValue(served, 'presently_monitored_users')).toBe(1);
    expect(sampleValue(served, 'presently_gateway_shards')).toBe(0);
    expect(
      sampleValue(served, 'presently_http_requests_total', {
        method: 'GET',
        route: '/v1/users/:id',
        status: '200',
      }),
    ).toBeGreaterThan(0);
    expect(
      sampleValue(served, 'presently_store_operation_duration_seconds_count', {
        backend: 'redis',
        operation: 'ping',
      }),
    ).toBeGreaterThan(0);
    // An ingest node has no REST API, but answers the operational routes.
    expect((await fetch(`${ingest.url}/v1/users/${USER}`)).status).toBe(404);
  });

  it('are not ready while Redis is away, and ready again once it is back and the replica re-read', async () => {
    redis.kill();
    const failed = (checks: RegExp) => ({
      status: 503,
      body: { success: false, error: { code: 'not_ready', message: expect.stringMatching(checks) } },
    });
    await eventually(async () => {
      expect(await ready(ingest)).toEqual(failed(/^not ready: store: [^;]+$/));
      // Changes published meanwhile are lost to the API node: its replica is behind until it re-reads.
      expect(await ready(api)).toEqual(failed(/^not ready: store: .+; replica: /));
    });
    // Still alive: a liveness probe must not restart a node because Redis is away.
    expect((await fetch(`${api.url}/v1/health`)).status).toBe(200);
    await redis.start();
    await eventually(async () => {
      expect((await ready(ingest)).status).toBe(200);
      expect((await ready(api)).status).toBe(200);
    }, 15_000);
  }, 30_000);
});
