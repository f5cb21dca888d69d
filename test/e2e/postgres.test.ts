import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AppOptions, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { playingOnSpotify } from '../support/playing.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';
import { type Received, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * The service on PostgreSQL, end to end: alone, and beside Redis, which then keeps only what is live. A KV
 * write is read back, and is still there, with the key that wrote it, after the service restarts; alone,
 * webhook events waiting for delivery wait in PostgreSQL across a restart.
 */

const hasPostgres = await postgresAvailable('the service on PostgreSQL');
const hasRedis = hasPostgres && (await redisAvailable('the service on Redis and PostgreSQL'));
const GUILD = '600000000000000001';
const USER = '80351110224678912';

let database: TestDatabase | undefined;
let simulator: DiscordSimulator | undefined;
const harnesses: Harness[] = [];
const prefixes: string[] = [];
const redis = hasRedis ? new Redis(REDIS_TEST_URL) : null;
let receiver: WebhookReceiver | undefined;

beforeAll(async () => {
  if (hasPostgres) database = await createTestDatabase();
});
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.close();
  await simulator?.stop();
  simulator = undefined;
  for (const prefix of prefixes.splice(0)) if (redis) await dropPrefix(redis, prefix);
  await receiver?.close();
  receiver = undefined;
});
afterAll(async () => {
  redis?.disconnect();
  await database?.drop();
});

/** A simulated Discord where USER is online, outliving the services started on it. */
async function discord(): Promise<DiscordSimulator> {
  simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  await simulator.start();
  simulator.createGuild({
    id: GUILD,
    name: 'Postgres Guild',
    members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
  });
  return simulator;
}

/** The service on `env`, once it monitors USER. */
async function start(env: Record<string, string>, webhooks?: AppOptions['webhooks']): Promise<Harness> {
  const harness = await startHarness({
    discord: simulator as DiscordSimulator,
    env,
    ...(webhooks ? { webhooks } : {}),
  });
  harnesses.push(harness);
  await eventually(() => expect(harness.app.registry.isMonitored(USER)).toBe(true));
  return harness;
}

async function stop(harness: Harness): Promise<void> {
  harnesses.splice(harnesses.indexOf(harness), 1);
  await harness.close();
}

const putKv = (harness: Harness, key: string, name: string, value: string) =>
  fetch(`${harness.base}/v1/users/@me/kv/${name}`, {
    method: 'PUT',
    headers: { authorization: key },
    body: value,
  });

async function kvShown(harness: Harness): Promise<Record<string, string>> {
  const response = await fetch(`${harness.base}/v1/users/${USER}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { kv: Record<string, string> } }).data.kv;
}

function pool(harness: Harness) {
  expect(harness.app.store).toBeInstanceOf(PostgresStore);
  return (harness.app.store as PostgresStore).pool;
}

/**
 * Ready, with these checks passing; a KV write, read back, then again after a restart, written again with
 * the same key.
 */
async function survivesRestart(env: Record<string, string>, checks: Record<string, 'ok'>): Promise<Harness> {
  await discord();
  const first = await start(env);
  await eventually(async () => {
    const ready = await fetch(`${first.base}/v1/ready`);
    expect(await ready.json()).toMatchObject({ success: true, data: { checks } });
  });
  const key = await insertApiKey(first.app.store, USER);
  expect((await putKv(first, key, 'city', 'Lyon')).status).toBe(204);
  expect(await kvShown(first)).toEqual({ city: 'Lyon' });
  await stop(first);

  const second = await start(env);
  await eventually(async () => expect(await kvShown(second)).toEqual({ city: 'Lyon' }));
  expect((await putKv(second, key, 'mood', 'calm')).status).toBe(204);
  expect(await kvShown(second)).toEqual({ city: 'Lyon', mood: 'calm' });
  const { rows } = await pool(second).query('SELECT key FROM kv WHERE user_id = $1 ORDER BY key', [USER]);
  expect(rows).toEqual([{ key: 'city' }, { key: 'mood' }]);
  return second;
}

describe.skipIf(!hasPostgres)('the service on PostgreSQL', () => {
  it('alone: keeps KV and keys across a restart, and records history there', async () => {
    const harness = await survivesRestart(
      { DATABASE_URL: await (database as TestDatabase).schema() },
      { store: 'ok', gateway: 'ok' },
    );
    await eventually(async () => {
      const { rows } = await pool(harness).query('SELECT status FROM status_history WHERE user_id = $1', [
        USER,
      ]);
      expect(rows).toContainEqual({ status: 'online' });
    });
  });
});

describe.skipIf(!hasPostgres)('privacy settings on PostgreSQL', () => {
  it('are applied from the first presence after a restart, and the private user stays private', async () => {
    await discord();
    const env = { DATABASE_URL: await (database as TestDatabase).schema() };
    const first = await start(env);
    const key = await insertApiKey(first.app.store, USER);
    expect(await (await fetch(`${first.base}/v1/users/${USER}`)).text()).toContain(
      '"active_on_discord_desktop":true',
    );
    const changed = await fetch(`${first.base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ hide_platforms: true, visibility: 'private' }),
    });
    expect(changed.status).toBe(200);
    expect((await fetch(`${first.base}/v1/users/${USER}`)).status).toBe(404);
    await stop(first);

    const second = await start(env);
    // Rendered under the settings from the start: no version of the presence ever showed the platforms.
    const own = await fetch(`${second.base}/v1/users/@me`, { headers: { authorization: key } });
    expect(((await own.json()) as { data: { privacy: unknown } }).data.privacy).toEqual({
      hidden: ['platforms'],
    });
    expect((await fetch(`${second.base}/v1/users/${USER}`)).status).toBe(404);
    expect(
      second.changes.every(
        (change) =>
          change.kind === 'unmonitored' || !change.current.body.includes('"active_on_discord_desktop":true'),
      ),
    ).toBe(true);
  });
});

describe.skipIf(!hasPostgres)('webhook events on PostgreSQL alone', () => {
  const RETRY_MS = 60_000;
  const play = (song: string) =>
    (simulator as DiscordSimulator).setPresence(USER, {
      status: 'online',
      activities: [playingOnSpotify(song)],
    });
  const songOf = (received: Received) => (received.body.data as { song: string } | null)?.song;

  it('wait in the database across a restart, and are delivered after it in order', async () => {
    const env = { DATABASE_URL: await (database as TestDatabase).schema(), WEBHOOKS_ALLOW_PRIVATE: 'true' };
    const hook = await startWebhookReceiver((_, index) => (index === 0 ? 503 : 200));
    receiver = hook;
    await discord();
    // The first delivery fails and is due again a minute later; the events behind it wait.
    const first = await start(env, { worker: { backoff: () => RETRY_MS, pollMs: 20 } });
    const key = await insertApiKey(first.app.store, USER);
    const created = await fetch(`${first.base}/v1/users/@me/webhooks`, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${hook.url}/hook`, events: ['now_playing'] }),
    });
    expect(created.status).toBe(201);
    const { id } = ((await created.json()) as { data: { id: string } }).data;
    const sent = ['one', 'two', 'three'];
    for (const song of sent) play(song);
    const refused = await hook.nth(0);
    expect(songOf(refused)).toBe('one');
    const queued = async () =>
      (
        await pool(first).query<{ delivery_id: string }>(
          'SELECT delivery_id FROM webhook_queue WHERE webhook_id = $1 ORDER BY seq',
          [id],
        )
      ).rows.map((row) => row.delivery_id);
    await eventually(async () => expect(await queued()).toHaveLength(sent.length));
    expect((await queued())[0]).toBe(refused.deliveryId);
    await stop(first);
    expect(hook.received).toHaveLength(1);

    // Started again with its clock past the retry: the refused event goes first, then the others.
    await start(env, { worker: { now: () => Date.now() + RETRY_MS, pollMs: 20 } });
    await eventually(() => expect(hook.received.length).toBeGreaterThanOrEqual(1 + sent.length));
    expect(hook.received.slice(1, 1 + sent.length).map(songOf)).toEqual(sent);
    expect(hook.received[1]?.deliveryId).toBe(refused.deliveryId);
  });
});

describe.skipIf(!hasPostgres)('a password in DATABASE_URL', () => {
  const PASSWORD = 'hunter2-database-password';
  /** The URL with a password (the test server trusts its clients, so any is taken), on `port` if given. */
  async function withPassword(port?: string): Promise<string> {
    const url = new URL(await (database as TestDatabase).schema());
    url.password = PASSWORD;
    if (port) url.port = port;
    return url.toString();
  }
  const env = (url: string) => ({ DATABASE_URL: url, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'trace' });

  it('reaches no log line', async () => {
    await discord();
    const lines: string[] = [];
    const harness = await startHarness({
      discord: simulator as DiscordSimulator,
      env: env(await withPassword()),
      logger: createLogger('trace', false, { write: (line: string) => void lines.push(line) }),
    });
    harnesses.push(harness);
    const logs = lines.join('');
    expect(logs).toContain('"database":"postgres://postgres:***@127.0.0.1:');
    expect(logs).not.toContain(PASSWORD);
  });

  it('is not in the error of a start that cannot reach the server', async () => {
    const starting = startApp(loadConfig(env(await withPassword('1'))), {
      logger: createLogger('silent', false),
    });
    await expect(starting).rejects.toThrow(
      /could not open the PostgreSQL store at postgres:\/\/postgres:\*\*\*@/,
    );
    await expect(starting).rejects.not.toThrow(PASSWORD);
  });
});

describe.skipIf(!hasRedis)('the service on Redis and PostgreSQL', () => {
  it('keeps what lasts in PostgreSQL and only what is live in Redis', async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const harness = await survivesRestart(
      {
        DATABASE_URL: await (database as TestDatabase).schema(),
        REDIS_URL: REDIS_TEST_URL,
        REDIS_PREFIX: prefix,
      },
      { store: 'ok', redis: 'ok', replica: 'ok', gateway: 'ok' },
    );
    await eventually(async () => {
      const { rows } = await pool(harness).query('SELECT status FROM status_history WHERE user_id = $1', [
        USER,
      ]);
      expect(rows).toContainEqual({ status: 'online' });
    });
    // The shared presence is in Redis; KV, key hashes and history are not.
    const keys = await (redis as Redis).keys(`${prefix}*`);
    expect(keys.some((key) => key.startsWith(`${prefix}presence`))).toBe(true);
    const durable =
      /^(store-version|kv|api-key|user-api-key|profile|history|status-history|track-history|play|stats)/;
    expect(keys.filter((key) => durable.test(key.slice(prefix.length)))).toEqual([]);
  });
});
