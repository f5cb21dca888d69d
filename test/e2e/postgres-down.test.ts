import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { POSTGRES_TIMEOUTS } from '../../src/store/postgres/queries.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/**
 * PostgreSQL goes away under a running service (a relay between them is cut), or hangs (the relay stops
 * forwarding): presences are still served from memory, a KV write is refused 503 at once or within its
 * time limit, readiness says the store is down, and the history seen meanwhile waits and is written once
 * the server is back.
 */

const hasPostgres = await postgresAvailable('the service while PostgreSQL is down');
const GUILD = '600000000000000002';
const USER = '80351110224678912';
/** Longer than a refused connection takes to fail; far shorter than a request left hanging. */
const ANSWER_WITHIN_MS = 5_000;

describe.skipIf(!hasPostgres)('the service while PostgreSQL is down', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let simulator: DiscordSimulator;
  let harness: Harness;
  let key: string;
  /** The same schema, reached without the relay. */
  let direct: PostgresStore;

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = new URL(await database.schema());
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    await simulator.start();
    simulator.createGuild({
      id: GUILD,
      name: 'Outage Guild',
      members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
    });
    harness = await startHarness({
      discord: simulator,
      env: { DATABASE_URL: proxied.toString() },
      logger: pino({ level: 'silent' }),
    });
    await eventually(() => expect(harness.app.registry.isMonitored(USER)).toBe(true));
    key = await insertApiKey(harness.app.store, USER);
    expect((await put('city', 'Lyon')).status).toBe(204);
    direct = await openPostgresStore(url.toString());
  }, 30_000);

  afterAll(async () => {
    await harness?.close();
    await simulator?.stop();
    await proxy?.close();
    await direct?.close();
    await database?.drop();
  });

  const put = (name: string, value: string) =>
    fetch(`${harness.base}/v1/users/@me/kv/${name}`, {
      method: 'PUT',
      headers: { authorization: key },
      body: value,
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    });

  it('serves presences, refuses KV writes 503, is not ready, and writes the history seen meanwhile', async () => {
    await proxy.cut();

    const presence = await fetch(`${harness.base}/v1/users/${USER}`);
    expect(presence.status).toBe(200);
    expect(await presence.json()).toMatchObject({ data: { discord_status: 'online', kv: { city: 'Lyon' } } });

    const refused = await put('city', 'Paris');
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({
      success: false,
      error: { code: 'try_again_later', message: 'the store cannot be reached; try again shortly' },
    });

    const ready = await fetch(`${harness.base}/v1/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { error: { message: string } }).error.message).toMatch(/store: /);

    simulator.setPresence(USER, { status: 'dnd' });
    await eventually(async () => {
      const seen = (await (await fetch(`${harness.base}/v1/users/${USER}`)).json()) as {
        data: { discord_status: string };
      };
      expect(seen.data.discord_status).toBe('dnd');
    });

    await proxy.restore();
    await eventually(async () => {
      const { status } = await direct.history.history(USER, 10);
      expect(status.map((entry) => entry.status)).toContain('dnd');
    }, 10_000);
    expect((await put('city', 'Paris')).status).toBe(204);
    expect((await direct.kv.getKv(USER)).kv).toEqual({ city: 'Paris' });
    await eventually(async () => expect((await fetch(`${harness.base}/v1/ready`)).status).toBe(200));
  }, 30_000);

  it(
    'answers once its time limits pass while PostgreSQL holds its connections and answers nothing',
    async () => {
      proxy.hang();
      const answers = await Promise.all([
        // Answered while the relay still holds every connection: the limits, not the server, end them.
        put('city', 'Rome'),
        put('mood', 'calm'),
        fetch(`${harness.base}/v1/users/@me`, {
          headers: { authorization: key },
          signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
        }),
      ]);
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(await answer.json()).toMatchObject({ error: { code: 'try_again_later' } });
      }
      const presence = await fetch(`${harness.base}/v1/users/${USER}`);
      expect(await presence.json()).toMatchObject({ data: { kv: { city: 'Paris' } } });
      expect((await fetch(`${harness.base}/v1/ready`)).status).toBe(503);

      simulator.setPresence(USER, { status: 'idle' });
      await proxy.restore();
      await eventually(async () => {
        const { status } = await direct.history.history(USER, 10);
        expect(status[0]?.status).toBe('idle');
      }, POSTGRES_TIMEOUTS.batchMs + 10_000);
      expect((await put('city', 'Rome')).status).toBe(204);
      expect((await direct.kv.getKv(USER)).kv).toEqual({ city: 'Rome' });
    },
    POSTGRES_TIMEOUTS.batchMs + 30_000,
  );
});
