import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RetentionSweep } from '../../src/account/retention.js';
import { hashApiKey } from '../../src/keys/api-key.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Retention through the service as it runs: a member removed from the simulated guild has everything kept
 * of them erased, at once with RETENTION_DAYS=0, or by the sweep once the retention has passed (its clock
 * moved by the test); the history, stats and top tracks of an erased user answer as an unknown id's.
 */

const GUILD = '610000000000000001';
const NOVA = '610000000000000101';
const MIRA = '610000000000000102';
const UNKNOWN = '610000000000000199';
const DAY = 86_400_000;
const STARTED = Date.now();

async function startService(
  env: Record<string, string>,
  now?: () => number,
  monitored: string[] = [NOVA, MIRA],
): Promise<Harness> {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  await simulator.start();
  simulator.createGuild({
    id: GUILD,
    name: 'Retention',
    members: [NOVA, MIRA].map((id) => ({
      user: { id, username: `user${id.slice(-3)}` },
      presence: {
        status: 'online' as const,
        activities: [
          spotifyActivity({
            song: 'Midnight City',
            artists: ['M83'],
            album: 'Hurry Up',
            imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
            trackId: '1eyzqe2QqGZUmfcPZtrIyt',
            start: STARTED - 1_000,
            end: STARTED + 600_000,
            userId: id,
          }),
        ],
      },
    })),
  });
  const h = await startHarness({
    discord: simulator,
    env: { WEBHOOKS_ALLOW_PRIVATE: 'true', ...env },
    ...(now ? { retention: { now } } : {}),
  });
  const close = h.close;
  h.close = async () => {
    await close();
    await simulator.stop();
  };
  // Every guild listed, and the first refresh has written the moments of those monitored.
  await eventually(async () => {
    expect((await h.app.store.retention.due(Number.MAX_SAFE_INTEGER, 10)).sort()).toEqual(monitored.sort());
    expect((await fetch(`${h.base}/v1/ready`)).status).toBe(200);
  }, 10_000);
  return h;
}

async function call(h: Harness, method: string, path: string, key?: string, body?: unknown) {
  const response = await fetch(`${h.base}${path}`, {
    method,
    headers: {
      ...(key === undefined ? {} : { authorization: key }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as { data?: unknown }) };
}

/** KV, settings and a webhook through the API, and history recorded: what retention must erase. */
async function everything(h: Harness, userId: string, given?: string): Promise<string> {
  const key = given ?? (await insertApiKey(h.app.store, userId));
  expect((await call(h, 'PATCH', '/v1/users/@me/kv', key, { mood: 'kept' })).status).toBe(204);
  expect((await call(h, 'PATCH', '/v1/users/@me/privacy', key, { hide_platforms: true })).status).toBe(200);
  const created = await call(h, 'POST', '/v1/users/@me/webhooks', key, {
    url: 'http://127.0.0.1:9/hook',
    events: ['kv'],
  });
  expect(created.status).toBe(201);
  await eventually(async () => {
    await h.app.history.flush();
    const kept = await h.app.store.history.history(userId, 10);
    expect(kept.status.length).toBeGreaterThan(0);
    expect(kept.tracks.length).toBeGreaterThan(0);
  });
  return key;
}

/** What the store holds of the user. */
async function heldOf(h: Harness, userId: string, key: string) {
  const { store } = h.app;
  return {
    kv: (await store.kv.getKv(userId)).kv,
    key: await store.apiKeys.findKey(hashApiKey(key)),
    webhooks: (await store.webhooks.webhooksOf(userId)).length,
    privacy: await store.privacy.getPrivacy(userId),
    history: await store.history.history(userId, 100),
  };
}

/** History, stats and top tracks as anyone reads them. */
async function answersFor(h: Harness, userId: string) {
  const read = async (what: string) => (await call(h, 'GET', `/v1/users/${userId}/${what}`)).body;
  return { history: await read('history'), stats: await read('stats'), top: await read('top-tracks') };
}

async function expectErased(h: Harness, userId: string, key: string): Promise<void> {
  await eventually(async () => {
    await h.app.history.flush();
    expect(await heldOf(h, userId, key)).toEqual({
      kv: {},
      key: undefined,
      webhooks: 0,
      privacy: undefined,
      history: { status: [], tracks: [] },
    });
  });
  expect(await answersFor(h, userId)).toEqual(await answersFor(h, UNKNOWN));
  expect((await call(h, 'GET', '/v1/users/@me', key)).status).toBe(401);
}

function sweepOf(h: Harness): RetentionSweep {
  const { retention } = h.app;
  if (!retention) throw new Error('expected a retention sweep on a node of ROLE all');
  return retention;
}

describe('RETENTION_DAYS=0', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService({ RETENTION_DAYS: '0' });
  }, 30_000);
  afterAll(() => h?.close());

  it('erases everything of a member removed from the guild at once, and nothing of the others', async () => {
    const nova = await everything(h, NOVA);
    const mira = await everything(h, MIRA);
    h.simulator.removeMember(GUILD, NOVA);
    await expectErased(h, NOVA, nova);
    const kept = await heldOf(h, MIRA, mira);
    expect(kept).toMatchObject({ kv: { mood: 'kept' }, webhooks: 1, privacy: { hide_platforms: true } });
    expect(kept.history.status.length).toBeGreaterThan(0);
    expect(await h.app.store.retention.due(Number.MAX_SAFE_INTEGER, 10)).toEqual([MIRA]);
  });

  it('erases nobody while the guild is unavailable (an outage), and keeps whoever is back after it', async () => {
    const mira = await everything(h, MIRA);
    const { kv, webhooks, privacy } = await heldOf(h, MIRA, mira);
    h.simulator.deleteGuild(GUILD, { unavailable: true });
    await eventually(() => expect(h.app.registry.isMonitored(MIRA)).toBe(false));
    // The leave is written, and the sweep that follows an outage's leaves erases nobody.
    expect(await sweepOf(h).sweep()).toMatchObject({ erased: 0 });
    expect((await heldOf(h, MIRA, mira)).kv).toEqual({ mood: 'kept' });

    h.simulator.restoreGuild(GUILD);
    await eventually(() => expect(h.app.registry.isMonitored(MIRA)).toBe(true));
    expect(await sweepOf(h).sweep()).toMatchObject({ erased: 0 });
    expect(await heldOf(h, MIRA, mira)).toMatchObject({ kv, webhooks, privacy });
  });
});

describe('RETENTION_DAYS=30', () => {
  let h: Harness;
  let offset = 0;
  beforeAll(async () => {
    h = await startService({ RETENTION_DAYS: '30' }, () => Date.now() + offset);
  }, 30_000);
  afterAll(() => h?.close());

  it('erases a member removed from the guild once 30 days have passed, not before', async () => {
    const nova = await everything(h, NOVA);
    const mira = await everything(h, MIRA);
    h.simulator.removeMember(GUILD, NOVA);
    await eventually(() => expect(h.app.registry.isMonitored(NOVA)).toBe(false));
    await sweepOf(h).flush();

    offset = 29 * DAY;
    expect(await sweepOf(h).sweep()).toMatchObject({ erased: 0 });
    expect((await heldOf(h, NOVA, nova)).kv).toEqual({ mood: 'kept' });

    // Mira is still there, monitored all along: a sweep keeps her, however old her moment.
    offset = 30 * DAY + 60_000;
    expect(await sweepOf(h).sweep()).toMatchObject({ erased: 1 });
    await expectErased(h, NOVA, nova);
    expect((await heldOf(h, MIRA, mira)).kv).toEqual({ mood: 'kept' });
    const metrics = await (await fetch(`${h.base}/metrics`)).text();
    expect(metrics).toMatch(/^presently_retention_erased_total 1$/m);
  });
});

describe('MONITOR=opt-in, RETENTION_DAYS=30', () => {
  let h: Harness;
  let offset = 0;
  beforeAll(async () => {
    h = await startService({ MONITOR: 'opt-in', RETENTION_DAYS: '30' }, () => Date.now() + offset, []);
  }, 30_000);
  afterAll(() => h?.close());

  it('erases a user who opted out once 30 days have passed', async () => {
    const key = await insertApiKey(h.app.store, NOVA);
    expect((await call(h, 'PATCH', '/v1/users/@me/privacy', key, { opted_in: true })).status).toBe(200);
    await eventually(() => expect(h.app.registry.isMonitored(NOVA)).toBe(true));
    await everything(h, NOVA, key);
    expect((await call(h, 'PATCH', '/v1/users/@me/privacy', key, { opted_in: false })).status).toBe(200);
    expect(h.app.registry.isMonitored(NOVA)).toBe(false);
    await sweepOf(h).flush();

    offset = 29 * DAY;
    expect(await sweepOf(h).sweep()).toMatchObject({ erased: 0 });
    expect((await h.app.store.kv.getKv(NOVA)).kv).toEqual({ mood: 'kept' });
    offset = 30 * DAY + 60_000;
    expect(await sweepOf(h).sweep()).toMatchObject({ erased: 1 });
    await expectErased(h, NOVA, key);
    expect(h.app.registry.isMonitored(NOVA)).toBe(false);
  });
});
