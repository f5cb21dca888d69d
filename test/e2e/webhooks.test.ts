import { afterEach, describe, expect, it } from 'vitest';
import { spotifyActivity } from '../../src/simulator/activities.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { WEBHOOK_BODY_LIMIT } from '../../src/webhooks/rules.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import {
  type Received,
  signedWith,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

/**
 * Webhooks end to end: the keyed routes over real HTTP, and events made by the real gateway client from
 * the simulated Discord, delivered to a receiver on loopback (WEBHOOKS_ALLOW_PRIVATE), the bot's command
 * and its DM when a webhook is disabled.
 */

const GUILD = '400000000000000001';
const NOVA = '94490510688792576';
const KAI = '218486934151479296';
const PATH = '/v1/users/@me/webhooks';

type Envelope = { success: boolean; data?: unknown; error?: { code: string; message: string } };

let harness: Harness | undefined;
let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await harness?.close();
  await receiver?.close();
  harness = undefined;
  receiver = undefined;
});

/** The worker's clock runs ahead by `skew` ms when a test wants a retry due now. */
const clock = { skew: 0 };

async function start(env: Record<string, string> = {}): Promise<Harness> {
  clock.skew = 0;
  receiver = await startWebhookReceiver();
  harness = await startHarness({
    env: { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_PER_USER: '2', ...env },
    webhooks: { worker: { now: () => Date.now() + clock.skew, backoff: () => 60_000, pollMs: 20 } },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Hooks',
        members: [
          { user: { id: NOVA, username: 'nova' }, presence: { status: 'online' } },
          { user: { id: KAI, username: 'kai' }, presence: { status: 'online' } },
        ],
      }),
  });
  const h = harness;
  await eventually(() => expect(h.app.registry.isMonitored(NOVA)).toBe(true));
  return h;
}

async function call(
  method: string,
  path: string,
  options: { key?: string; body?: string; type?: string } = {},
): Promise<{ status: number; body: Envelope | null; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers.authorization = options.key;
  if (options.type !== undefined) headers['content-type'] = options.type;
  const response = await fetch(`${(harness as Harness).base}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === '' ? null : (JSON.parse(text) as Envelope),
    headers: response.headers,
  };
}

const json = (value: unknown) => ({ body: JSON.stringify(value), type: 'application/json' });

/** Adds a webhook to the receiver for `events`; its id and secret. */
async function addWebhook(
  key: string,
  events: string[],
  path = '/hook',
): Promise<{ id: string; secret: string }> {
  const { status, body } = await call('POST', PATH, {
    key,
    ...json({ url: `${receiver?.url}${path}`, events }),
  });
  expect(status, JSON.stringify(body)).toBe(201);
  return dataOf(body);
}

const errorOf = (answer: { body: Envelope | null }) => answer.body?.error?.code;
/** The `data` of a success, as the test expects it to be. */
const dataOf = <T>(body: Envelope | null): T => body?.data as T;

describe('the webhook routes', () => {
  it('add, list without the secret, and remove; the limit, and the keyed refusals', async () => {
    await start();
    const key = await insertApiKey((harness as Harness).app.store, NOVA);
    const other = await insertApiKey((harness as Harness).app.store, KAI);

    const created = await call('POST', PATH, { key, ...json({ url: `${receiver?.url}/a`, events: ['kv'] }) });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      success: true,
      data: {
        id: expect.stringMatching(/^wh_/),
        url: `${receiver?.url}/a`,
        events: ['kv'],
        secret: expect.stringMatching(/^whsec_/),
        created_at: expect.any(Number),
      },
    });
    const { id, secret } = dataOf<{ id: string; secret: string }>(created.body);
    await addWebhook(key, ['presence'], '/b');
    const third = await call('POST', PATH, { key, ...json({ url: `${receiver?.url}/c`, events: ['kv'] }) });
    expect([third.status, errorOf(third)]).toEqual([409, 'webhook_limit_exceeded']);

    const listed = await call('GET', PATH, { key });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect(listed.body).toMatchObject({
      success: true,
      data: {
        limit: 2,
        webhooks: [
          { id, url: `${receiver?.url}/a`, events: ['kv'], disabled_at: null, deliveries: [] },
          { url: `${receiver?.url}/b`, events: ['presence'] },
        ],
      },
    });

    const notYours = await call('DELETE', `${PATH}/${id}`, { key: other });
    expect([notYours.status, errorOf(notYours)]).toEqual([403, 'no_permission']);
    const unknown = await call('DELETE', `${PATH}/wh_AAAAAAAAAAAAAAAA`, { key });
    expect([unknown.status, errorOf(unknown)]).toEqual([404, 'webhook_not_found']);
    const removed = await call('DELETE', `${PATH}/${id}`, { key });
    expect([removed.status, removed.body]).toEqual([204, null]);
    expect((await call('DELETE', `${PATH}/${id}`, { key })).status).toBe(404);
    const after = dataOf<{ webhooks: { id: string }[] }>((await call('GET', PATH, { key })).body);
    expect(after.webhooks.map((webhook) => webhook.id)).not.toContain(id);
  });

  it('asks for the key before reading the body, and refuses bodies by their rules', async () => {
    await start();
    const key = await insertApiKey((harness as Harness).app.store, NOVA);
    for (const method of ['GET', 'POST']) {
      const none = await call(
        method,
        PATH,
        method === 'POST' ? { body: 'not json', type: 'application/json' } : {},
      );
      expect([none.status, errorOf(none)], method).toEqual([401, 'invalid_api_key']);
      const wrong = await call(method, PATH, { key: `prs_${'x'.repeat(43)}` });
      expect([wrong.status, errorOf(wrong)], method).toEqual([401, 'invalid_api_key']);
    }
    // Too large and not JSON, but without a key: refused for the key.
    const big = 'x'.repeat(WEBHOOK_BODY_LIMIT + 1);
    expect((await call('POST', PATH, { body: big, type: 'application/json' })).status).toBe(401);
    expect((await call('DELETE', `${PATH}/wh_AAAAAAAAAAAAAAAA`)).status).toBe(401);

    const refusals: [ReturnType<typeof json> | { body: string; type: string }, number, string][] = [
      [{ body: big, type: 'application/json' }, 413, 'payload_too_large'],
      [{ body: '{"url":', type: 'application/json' }, 400, 'invalid_webhook'],
      [
        { body: JSON.stringify({ url: 'https://example.com/' }), type: 'text/plain' },
        415,
        'unsupported_media_type',
      ],
      [json({ url: `${receiver?.url}/a`, events: ['typing'] }), 400, 'invalid_webhook'],
      [json({ url: 'http://169.254.169.254/latest', events: ['kv'] }), 400, 'invalid_webhook_url'],
      [json({ url: 'http://[fe80::1]/', events: ['kv'] }), 400, 'invalid_webhook_url'],
      [json({ url: 'ftp://example.com/', events: ['kv'] }), 400, 'invalid_webhook_url'],
    ];
    for (const [body, status, code] of refusals) {
      const answer = await call('POST', PATH, { key, ...body });
      expect([answer.status, errorOf(answer)], body.body.slice(0, 60)).toEqual([status, code]);
    }
    expect(dataOf<{ webhooks: [] }>((await call('GET', PATH, { key })).body).webhooks).toEqual([]);
  });

  it('charges writes refused for their key to the client, and keyed writes to the owner', async () => {
    await start({ RATE_LIMIT_WRITE: '2' });
    const key = await insertApiKey((harness as Harness).app.store, NOVA);
    const keyless = [];
    for (let i = 0; i < 3; i++)
      keyless.push((await call('POST', PATH, json({ url: 'x', events: [] }))).status);
    expect(keyless).toEqual([401, 401, 429]);
    const keyed = await call('POST', PATH, { key, ...json({ url: 'x', events: ['kv'] }) });
    expect(keyed.status).toBe(400);
    expect(keyed.headers.get('ratelimit-remaining')).toBe('1');
  });
});

describe('events', () => {
  /** The receiver's deliveries of `type`, in order. */
  const ofType = (type: string): Received[] =>
    (receiver as WebhookReceiver).received.filter((entry) => entry.body.type === type);

  it('a presence change, a track change and a KV write arrive signed, as the presence, now_playing and kv', async () => {
    const h = await start();
    const key = await insertApiKey(h.app.store, NOVA);
    const { secret } = await addWebhook(key, ['presence', 'now_playing', 'kv']);
    const now = Date.now();
    const track = (song: string, trackId: string, start = now) =>
      spotifyActivity({
        song,
        artists: ['M83'],
        album: 'Album',
        imageId: 'ab67',
        trackId,
        start,
        end: start + 200_000,
      });

    h.simulator.setPresence(NOVA, { status: 'dnd' });
    await eventually(() =>
      expect(ofType('presence').at(-1)?.body.data).toMatchObject({ discord_status: 'dnd' }),
    );
    const first = ofType('presence').at(-1) as Received;
    expect(signedWith(secret, first)).toBe(true);
    expect(first.body).toMatchObject({ type: 'presence', user_id: NOVA, timestamp: expect.any(Number) });

    h.simulator.setPresence(NOVA, { status: 'dnd', activities: [track('Midnight City', 'track-a')] });
    await eventually(() => expect(ofType('now_playing')).toHaveLength(1));
    expect(ofType('now_playing')[0]?.body.data).toMatchObject({ song: 'Midnight City', track_id: 'track-a' });
    // Another status and a seek within the same track: presence events, and no now_playing.
    h.simulator.setPresence(NOVA, { status: 'idle', activities: [track('Midnight City', 'track-a')] });
    h.simulator.setPresence(NOVA, {
      status: 'idle',
      activities: [track('Midnight City', 'track-a', now - 30_000)],
    });
    h.simulator.setPresence(NOVA, { status: 'idle', activities: [track('Wait', 'track-b')] });
    h.simulator.setPresence(NOVA, { status: 'idle' });
    await eventually(() => expect(ofType('now_playing')).toHaveLength(3));
    expect(
      ofType('now_playing').map((entry) => (entry.body.data as { song: string } | null)?.song ?? null),
    ).toEqual(['Midnight City', 'Wait', null]);

    const patch = await call('PATCH', '/v1/users/@me/kv', { key, ...json({ mood: 'shipping' }) });
    expect(patch.status).toBe(204);
    await eventually(() => expect(ofType('kv').at(-1)?.body.data).toEqual({ mood: 'shipping' }));
    expect(signedWith(secret, ofType('kv').at(-1) as Received)).toBe(true);
    // Every delivery went once: distinct ids.
    const ids = (receiver as WebhookReceiver).received.map((entry) => entry.deliveryId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a backlog of presence events behind a failing one collapses to the newest', async () => {
    const h = await start();
    const key = await insertApiKey(h.app.store, NOVA);
    const { id } = await addWebhook(key, ['presence']);
    (receiver as WebhookReceiver).respond = (_, index) => (index === 0 ? 500 : 200);
    h.simulator.setPresence(NOVA, { status: 'dnd' });
    await (receiver as WebhookReceiver).nth(0);
    for (const status of ['idle', 'online', 'dnd', 'idle'] as const) {
      h.simulator.setPresence(NOVA, { status });
      await eventually(() => expect(h.app.registry.get(NOVA)?.status).toBe(status));
    }
    // The head waits for its retry; of the four behind it, only the newest waits with it.
    const db = (h.app.store as SqliteStore).db;
    const queued = () =>
      db.prepare('SELECT count(*) FROM webhook_queue WHERE webhook_id = ?').pluck().get(id);
    await eventually(() => expect(queued()).toBe(2));
    clock.skew = 60_000;
    await eventually(() => expect((receiver as WebhookReceiver).received).toHaveLength(3));
    const statuses = (receiver as WebhookReceiver).received.map(
      (entry) => (entry.body.data as { discord_status: string }).discord_status,
    );
    expect(statuses).toEqual(['dnd', 'dnd', 'idle']);
    await eventually(() => expect(queued()).toBe(0));
  });

  it('a webhook refusing events is disabled, and its owner told by DM', async () => {
    const h = await start();
    const key = await insertApiKey(h.app.store, NOVA);
    const { id } = await addWebhook(key, ['presence']);
    (receiver as WebhookReceiver).respond = () => 410;
    const statuses = ['dnd', 'idle', 'online', 'dnd', 'idle'] as const;
    for (const [index, status] of statuses.entries()) {
      h.simulator.setPresence(NOVA, { status });
      await (receiver as WebhookReceiver).nth(index);
    }
    const dm = h.simulator.dmChannelFor(NOVA);
    const notice = await h.simulator.waitForMessage(
      (message) => message.channel_id === dm && message.content.includes('is disabled'),
    );
    expect(notice.content).toContain(id);
    expect(notice.content).toContain('5 events in a row were refused (HTTP 410)');
    const listed = dataOf<{ webhooks: { disabled_reason: string; deliveries: { status: string }[] }[] }>(
      (await call('GET', PATH, { key })).body,
    );
    expect(listed.webhooks[0]?.disabled_reason).toBe('5 events in a row were refused (HTTP 410)');
    expect(listed.webhooks[0]?.deliveries.map((delivery) => delivery.status)).toEqual(
      Array(5).fill('failed'),
    );
  });

  it('the bot lists and removes webhooks in DMs', async () => {
    const h = await start();
    const key = await insertApiKey(h.app.store, NOVA);
    const { id } = await addWebhook(key, ['presence', 'kv']);
    const dm = h.simulator.dmChannelFor(NOVA);
    const say = async (content: string) => {
      const sent = h.simulator.sendMessage({ author: NOVA, channelId: dm, content });
      return h.simulator.waitForMessage((message) => message.message_reference?.message_id === sent.id);
    };
    const listing = await say('?webhooks');
    expect(listing.content).toContain('Your webhooks (1 of 2)');
    expect(listing.content).toContain(`\`${id}\` <${receiver?.url}/hook> — presence, kv — nothing sent yet`);
    expect((await say('?webhooks remove wh_AAAAAAAAAAAAAAAA')).content).toBe(
      'You have no webhook with that id.',
    );
    expect((await say(`?webhooks remove ${id}`)).content).toBe(`Removed \`${id}\`.`);
    expect((await say('?webhooks')).content).toContain('You have no webhooks.');
    expect(dataOf<{ webhooks: [] }>((await call('GET', PATH, { key })).body).webhooks).toEqual([]);
  });
});
