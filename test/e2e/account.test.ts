import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPORT_PIECE_CHARS } from '../../src/account/export.js';
import { hashApiKey } from '../../src/keys/api-key.js';
import { HISTORY_LIMIT, TRACKED_TRACKS_PER_USER, type TrackEntry } from '../../src/model/history.js';
import { customStatusActivity, spotifyActivity } from '../../src/simulator/activities.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import type { HistoryWrite } from '../../src/store/ports.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { type Frame, SocketClient } from '../socket/client.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { RawConnection } from '../support/raw-http.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Erasing everything kept about a user (`DELETE /v1/users/@me`, `?forget all confirm`) and exporting it
 * (`GET /v1/users/@me/export`), through the service as it runs on a SQLite file: each part checked in the
 * store and through the API, live subscribers, a restart on the same file, and the export's bytes.
 */

const GUILD = '520000000000000001';
const NOVA = '520000000000000101';
const MIRA = '520000000000000102';
const KAI = '520000000000000103';
const ZED = '520000000000000104';
const TRACK = {
  song: 'Midnight City',
  artists: ['M83'],
  album: 'Hurry Up',
  imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
  trackId: '1eyzqe2QqGZUmfcPZtrIyt',
};

type Envelope = { success: boolean; data?: Record<string, unknown>; error?: { code: string } };
type PresenceData = { user_id?: string; kv: Record<string, string>; custom_status: { text: string } | null };

const dir = mkdtempSync(join(tmpdir(), 'presently-account-'));
const DATABASE = join(dir, 'presently.db');
const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
let receiver: WebhookReceiver;
let h: Harness;

/** The service on the test's SQLite file, behind the simulator that outlives it. */
async function startService(): Promise<Harness> {
  const started = await startHarness({
    discord: simulator,
    env: { DATABASE_URL: `sqlite:${DATABASE}`, WEBHOOKS_ALLOW_PRIVATE: 'true' },
    webhooks: { worker: { pollMs: 20, backoff: () => 60_000 } },
  });
  await eventually(() => {
    for (const id of [NOVA, MIRA, KAI, ZED]) expect(started.app.registry.isMonitored(id)).toBe(true);
  });
  return started;
}

const STARTED = Date.now();
/** Each user's custom status and the track they play, the whole test long. */
const activitiesOf = (id: string) => [
  customStatusActivity({ text: `STATUS-OF-${id}`, createdAt: STARTED }),
  spotifyActivity({ ...TRACK, start: STARTED - 1_000, end: STARTED + 600_000, userId: id }),
];

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  await simulator.start();
  simulator.createGuild({
    id: GUILD,
    name: 'Accounts',
    members: [NOVA, MIRA, KAI, ZED].map((id) => ({
      user: { id, username: `user${id.slice(-3)}` },
      presence: { status: 'online' as const, activities: activitiesOf(id) },
    })),
  });
  h = await startService();
}, 30_000);

afterAll(async () => {
  await h?.close();
  await simulator.stop();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, key?: string, body?: unknown) {
  const response = await fetch(`${h.base}${path}`, {
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
    headers: response.headers,
    text,
    body: text === '' ? null : (JSON.parse(text) as Envelope),
  };
}

const presenceOf = async (id: string) => (await call('GET', `/v1/users/${id}`)).body?.data as PresenceData;

/** Gives the user one of everything: KV, settings, a webhook with a delivery, history and a play. */
async function everything(userId: string, key: string): Promise<{ webhookId: string; secret: string }> {
  expect((await call('PATCH', '/v1/users/@me/kv', key, { mood: `KV-OF-${userId}`, other: 'x' })).status).toBe(
    204,
  );
  expect((await call('PATCH', '/v1/users/@me/privacy', key, { hide_custom_status: true })).status).toBe(200);
  const created = await call('POST', '/v1/users/@me/webhooks', key, {
    url: `${receiver.url}/${userId}`,
    events: ['presence', 'kv'],
  });
  expect(created.status).toBe(201);
  const { id: webhookId, secret } = (created.body as Envelope).data as { id: string; secret: string };
  // A KV write after the webhook: one delivery recorded.
  expect((await call('PATCH', '/v1/users/@me/kv', key, { delivered: 'yes' })).status).toBe(204);
  await eventually(async () =>
    expect(await h.app.store.webhooks.deliveries(webhookId, 20)).not.toHaveLength(0),
  );
  await h.app.store.profiles.putProfiles(
    new Map([[userId, { profile: { banner: 'a_banner', accent_color: 7 }, fetchedAt: Date.now() }]]),
  );
  simulator.setPresence(userId, { status: 'idle', activities: activitiesOf(userId) });
  await eventually(async () => {
    await h.app.history.flush();
    const kept = await h.app.store.history.history(userId, 10);
    expect(kept.status.length).toBeGreaterThan(0);
    expect(kept.tracks.length).toBeGreaterThan(0);
  });
  return { webhookId, secret };
}

describe('DELETE /v1/users/@me', () => {
  let key: string;
  let erasedAt: number;
  let webhookId: string;

  it('erases every part, shows it live at once, and the key stops working with the answer', async () => {
    key = await insertApiKey(h.app.store, NOVA);
    ({ webhookId } = await everything(NOVA, key));
    // Events waiting behind one in flight: the receiver holds its answers.
    receiver.respond = () => 'hang';
    expect((await call('PATCH', '/v1/users/@me/kv', key, { waiting: '1' })).status).toBe(204);
    await eventually(() => expect(receiver.held).toBe(1));
    expect((await call('PATCH', '/v1/users/@me/kv', key, { waiting: '2' })).status).toBe(204);
    const db = (h.app.store as SqliteStore).db;
    const queued = () =>
      db.prepare('SELECT count(*) AS n FROM webhook_queue WHERE webhook_id = ?').get(webhookId) as {
        n: number;
      };
    await eventually(() => expect(queued().n).toBeGreaterThan(1));

    const socket = await SocketClient.connect(h.base);
    const init = await socket.subscribe({ subscribe_to_id: NOVA });
    expect((init.d as PresenceData).kv).toMatchObject({ mood: `KV-OF-${NOVA}` });

    erasedAt = Date.now();
    const erased = await call('DELETE', '/v1/users/@me', key);
    expect(erased.status).toBe(204);
    // At once, with the answer: the presence stays, with no KV and the default settings.
    const shown = await presenceOf(NOVA);
    expect(shown.kv).toEqual({});
    expect(shown.custom_status?.text).toBe(`STATUS-OF-${NOVA}`);
    const live = await socket.until(
      (frame: Frame) =>
        frame.t === 'PRESENCE_UPDATE' && Object.keys((frame.d as PresenceData).kv).length === 0,
    );
    expect(live.at(-1)?.d).toMatchObject({ kv: {} });
    await socket.close();

    expect((await call('DELETE', '/v1/users/@me', key)).status).toBe(401);
    expect((await call('GET', '/v1/users/@me', key)).status).toBe(401);
    expect((await call('GET', '/v1/users/@me/export', key)).status).toBe(401);
    receiver.respond = () => 200;
    receiver.release(200);
  });

  it('leaves nothing of it in the store or the API', async () => {
    await h.app.history.flush();
    await expectErased(NOVA, key, webhookId);
    const db = (h.app.store as SqliteStore).db;
    expect(db.prepare('SELECT count(*) AS n FROM webhook_queue WHERE webhook_id = ?').get(webhookId)).toEqual(
      { n: 0 },
    );
    // Other users keep theirs.
    expect((await h.app.store.kv.getKv(MIRA)).kv).toEqual({});
  });

  it('brings nothing back after a restart on the same file', async () => {
    await h.close();
    h = await startService();
    await h.app.history.flush();
    await expectErased(NOVA, key, webhookId);
  }, 30_000);

  /** Every part, read through the store and through the API: nothing kept from before `erasedAt`. */
  async function expectErased(userId: string, oldKey: string, oldWebhook: string): Promise<void> {
    const { store } = h.app;
    expect((await store.kv.getKv(userId)).kv).toEqual({});
    expect(await store.apiKeys.findKey(hashApiKey(oldKey))).toBeUndefined();
    expect(await store.webhooks.webhooksOf(userId)).toEqual([]);
    expect(await store.webhooks.deliveries(oldWebhook, 20)).toEqual([]);
    expect(await store.privacy.getPrivacy(userId)).toBeUndefined();
    const kept = await store.history.history(userId, HISTORY_LIMIT);
    // What is recorded after the erasure is new: the user is still online and playing.
    expect(kept.status.filter((entry) => entry.ts <= erasedAt)).toEqual([]);
    expect(kept.tracks.filter((entry) => entry.ts <= erasedAt)).toEqual([]);
    expect(
      (await store.history.topTracks(userId, 1, 1000)).filter((play) => play.last_played <= erasedAt),
    ).toEqual([]);
    expect((await store.accounts.details(userId)).historyErasedAt).toBeGreaterThanOrEqual(erasedAt);

    expect((await presenceOf(userId)).kv).toEqual({});
    expect((await call('GET', '/v1/users/@me', oldKey)).status).toBe(401);
    const history = (await call('GET', `/v1/users/${userId}/history`)).body?.data as {
      status_history: { ts: number }[];
      track_history: { ts: number }[];
    };
    expect(
      [...history.status_history, ...history.track_history].filter((entry) => entry.ts <= erasedAt),
    ).toEqual([]);
    // Its settings are the defaults: the custom status it hid is shown.
    expect((await presenceOf(userId)).custom_status?.text).toBe(`STATUS-OF-${userId}`);
  }
});

describe('GET /v1/users/@me/export', () => {
  it('holds every part and no secret, as an attachment', async () => {
    const key = await insertApiKey(h.app.store, MIRA);
    const { webhookId, secret } = await everything(MIRA, key);
    const answer = await call('GET', '/v1/users/@me/export', key);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.headers.get('content-disposition')).toBe(`attachment; filename="presently-${MIRA}.json"`);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const data = answer.body?.data as Record<string, unknown>;
    expect(answer.body?.success).toBe(true);
    expect(data).toMatchObject({
      user_id: MIRA,
      exported_at: expect.any(Number),
      api_key: { created_at: expect.any(Number) },
      history_erased_at: null,
      privacy: expect.objectContaining({ hide_custom_status: true, visibility: 'public' }),
      // What Discord says of the user's profile may have been fetched again meanwhile.
      profile: expect.objectContaining({ fetched_at: expect.any(Number) }),
      presence: expect.objectContaining({ discord_user: expect.objectContaining({ id: MIRA }) }),
      kv: { mood: `KV-OF-${MIRA}`, other: 'x', delivered: 'yes' },
      webhooks: [
        expect.objectContaining({
          id: webhookId,
          url: `${receiver.url}/${MIRA}`,
          deliveries: expect.arrayContaining([expect.objectContaining({ status: 'delivered' })]),
        }),
      ],
      // last_seen: written for everyone online when the service restarted (above).
      stats: { last_seen: expect.any(Number), plays_day: expect.any(String), plays: expect.any(Number) },
    });
    expect((data.status_history as unknown[]).length).toBeGreaterThan(0);
    expect(data.track_history).toEqual([expect.objectContaining({ song: TRACK.song })]);
    expect(data.play_counts).toEqual([expect.objectContaining({ song: TRACK.song, play_count: 1 })]);
    // The key's owner reads their presence as it is shown them: the custom status they hide is not in it.
    expect(JSON.stringify(data.presence)).not.toContain(`STATUS-OF-${MIRA}`);

    // No secret, in any form.
    const hash = hashApiKey(key);
    for (const secretForm of [secret, key, hash.toString('hex'), hash.toString('base64'), key.slice(4)]) {
      expect(answer.text).not.toContain(secretForm);
    }
    expect(answer.text).not.toContain(createHash('sha256').update(secret).digest('hex'));
  });

  it('asks for the key', async () => {
    expect((await call('GET', '/v1/users/@me/export')).status).toBe(401);
    expect((await call('GET', '/v1/users/@me/export', 'prs_not-a-key')).status).toBe(401);
  });

  it('streams a large KV and history in pieces as it reads them', async () => {
    const key = await insertApiKey(h.app.store, KAI);
    const big = 'v'.repeat(20_000);
    const kv = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key_${i}`, `${i}${big}`]));
    expect((await call('PATCH', '/v1/users/@me/kv', key, kv)).status).toBe(204);
    const t0 = Date.now() - 10_000_000;
    const track = (i: number): TrackEntry => ({
      source: 'spotify',
      song: `Song ${i} ${'s'.repeat(200)}`,
      artist: 'Artist',
      album: 'Album',
      album_art_url: null,
      track_id: `big-${i}`,
      track_url: null,
      timestamps: { start: t0 + i, end: t0 + i + 1 },
      duration_ms: 1,
      ts: t0 + i,
    });
    const writes: HistoryWrite[] = Array.from({ length: TRACKED_TRACKS_PER_USER }, (_, i) => ({
      userId: KAI,
      status: { status: i % 2 === 0 ? 'online' : 'idle', ts: t0 + i },
      track: track(i),
      countsPlay: true,
      lastSeen: null,
    }));
    await h.app.store.history.appendHistory(writes, {
      history: HISTORY_LIMIT,
      trackedTracks: TRACKED_TRACKS_PER_USER,
    });

    const connection = await RawConnection.open(h.base);
    await connection.write(
      `GET /v1/users/@me/export HTTP/1.1\r\nHost: test\r\nAuthorization: ${key}\r\nConnection: close\r\n\r\n`,
    );
    await connection.closed;
    const { headers, chunks } = dechunked(connection.text);
    expect(headers).toMatch(/^HTTP\/1\.1 200 /);
    expect(headers.toLowerCase()).toContain('transfer-encoding: chunked');
    // Written as it is read: pieces (which HTTP may gather a few to a chunk), never the whole in one write.
    const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    expect(total).toBeGreaterThan(1_500_000);
    expect(chunks.length).toBeGreaterThan(20);
    expect(Math.max(...chunks.map((chunk) => chunk.length))).toBeLessThan(EXPORT_PIECE_CHARS * 8);
    const document = JSON.parse(Buffer.from(chunks.join(''), 'latin1').toString('utf8')) as {
      data: Record<string, unknown[] | Record<string, string>>;
    };
    expect(Object.keys(document.data.kv as Record<string, string>)).toHaveLength(40);
    expect(document.data.status_history).toHaveLength(HISTORY_LIMIT);
    expect(document.data.track_history).toHaveLength(HISTORY_LIMIT);
    // Every play counted: the ones this test wrote, and the live track's.
    expect((document.data.play_counts as unknown[]).length).toBeGreaterThanOrEqual(
      TRACKED_TRACKS_PER_USER - 1,
    );
  });
});

describe('?forget all confirm', () => {
  /** A DM to the bot, and its answer. */
  async function dm(content: string): Promise<string> {
    const channelId = simulator.dmChannelFor(ZED);
    const sent = simulator.sendMessage({ channelId, author: ZED, content });
    const answer = await simulator.waitForMessage(
      (message) => message.message_reference?.message_id === sent.id,
    );
    return answer.content;
  }

  it('explains first, then erases everything and says what went', async () => {
    const key = await insertApiKey(h.app.store, ZED);
    const { webhookId } = await everything(ZED, key);

    const warning = await dm('?forget all');
    expect(warning).toContain('everything Presently keeps about you');
    expect(warning).toContain('`?forget all confirm`');
    expect((await h.app.store.kv.getKv(ZED)).kv).toMatchObject({ mood: `KV-OF-${ZED}` });

    const done = await dm('?forget all confirm');
    expect(done).toMatch(
      /^Done: erased 3 KV keys, 1 API key, 1 webhook, your privacy settings, your stored profile, [1-9]\d* status entr(y|ies), 1 track, 1 play count and your stats\./,
    );
    expect((await presenceOf(ZED)).kv).toEqual({});
    expect((await call('GET', '/v1/users/@me', key)).status).toBe(401);
    expect(await h.app.store.webhooks.webhook(webhookId)).toBeUndefined();
    expect(await h.app.store.privacy.getPrivacy(ZED)).toBeUndefined();
    expect((await h.app.store.history.history(ZED, HISTORY_LIMIT)).tracks).toEqual([]);
  });
});

/** The head of a chunked HTTP/1.1 answer, and the body's chunks as they were framed (latin1 text). */
function dechunked(text: string): { headers: string; chunks: string[] } {
  const end = text.indexOf('\r\n\r\n');
  const chunks: string[] = [];
  let at = end + 4;
  for (;;) {
    const lineEnd = text.indexOf('\r\n', at);
    const size = Number.parseInt(text.slice(at, lineEnd), 16);
    if (size === 0 || Number.isNaN(size)) break;
    chunks.push(text.slice(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return { headers: text.slice(0, end), chunks };
}
