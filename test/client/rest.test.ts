import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FetchLike,
  type Presence,
  type Presences,
  PresentlyClient,
  PresentlyError,
  type TopTrack,
} from '../../src/client/index.js';
import { readVersionInfo } from '../../src/version.js';
import { ALICE, BOB, fixtureReady, NOBODY, playTrack, seed } from '../socket/fixture.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { startHttpServer } from '../support/http-server.js';
import { inOneReadWindow } from '../support/read-window.js';

/** `presently/client`'s REST helpers against the real service (simulated Discord behind it). */

let h: Harness;
let key: string;
let client: PresentlyClient;
/** Every request the client made through its injected fetch. */
const sent: { url: string; method: string; headers: Record<string, string> }[] = [];

const recordingFetch: FetchLike = (url, init) => {
  sent.push({ url, method: init.method, headers: init.headers });
  return fetch(url, init);
};

/** What a call rejected with, which must be a PresentlyError. */
async function failure(call: Promise<unknown>): Promise<PresentlyError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PresentlyError);
  return error as PresentlyError;
}

beforeAll(async () => {
  h = await startHarness({ setup: seed });
  await fixtureReady(h);
  key = await insertApiKey(h.app.store, ALICE);
  client = new PresentlyClient({ baseUrl: `${h.base}/`, apiKey: key, fetch: recordingFetch });
  // Track A, then B, then A: A has two plays, so it is a top track.
  const songs: [string, string][] = [
    ['Alpha', 'A'.repeat(22)],
    ['Beta', 'B'.repeat(22)],
    ['Alpha', 'A'.repeat(22)],
  ];
  for (const [song, trackId] of songs) {
    playTrack(h, ALICE, { track: { song, trackId } });
    await eventually(() => expect(h.app.view.get(ALICE)?.presence.now_playing?.song).toBe(song));
  }
});

afterAll(async () => {
  await h?.close();
});

describe('PresentlyClient REST helpers', () => {
  it('reads a presence, typed, and @me with the API key', async () => {
    const presence: Presence = await client.presence(ALICE);
    expect(presence.discord_user.id).toBe(ALICE);
    expect(presence.now_playing?.source).toBe('spotify');
    expect((await client.presence('@me')).discord_user.id).toBe(ALICE);
  });

  it('reads several presences at once, by id in the order asked, leaving out who is not monitored', async () => {
    const presences: Presences = await client.presences([BOB, NOBODY, ALICE, BOB]);
    expect([...presences.keys()]).toEqual([BOB, ALICE]);
    expect(presences.get(ALICE)).toEqual(await client.presence(ALICE));
    expect(presences.get(BOB)).toEqual(await client.presence(BOB));
    expect(sent.map((request) => request.url)).toContain(
      `${h.base}/v1/users?ids=${BOB},${NOBODY},${ALICE},${BOB}`,
    );
    expect((await client.presences([NOBODY])).size).toBe(0);
    const tooMany = await failure(client.presences(Array.from({ length: 51 }, (_, n) => `${1000 + n}`)));
    expect(tooMany).toMatchObject({ code: 'invalid_query', status: 400 });
  });

  it('reads history, stats and top tracks', async () => {
    await eventually(async () => {
      const tracks: TopTrack[] = await client.topTracks(ALICE, { limit: 5 });
      expect(tracks.map((track) => [track.song, track.play_count])).toEqual([['Alpha', 2]]);
    });
    const history = await client.history(ALICE);
    expect(history.track_history.map((entry) => entry.song)).toEqual(['Alpha', 'Beta', 'Alpha']);
    expect(Array.isArray(history.status_history)).toBe(true);
    const stats = await client.stats(ALICE);
    expect(stats).toMatchObject({ current_status: 'online', is_monitored: true, tracks_today: 3 });
    expect(sent.some((request) => request.url.endsWith(`/v1/users/${ALICE}/top-tracks?limit=5`))).toBe(true);
  });

  it("reads the service's version", async () => {
    const info = await client.version();
    expect(info.version).toBe(readVersionInfo().version);
    expect(info.changelog.length).toBeGreaterThan(0);
  });

  it('writes KV with the key: set, patch, delete', async () => {
    await client.setKv(ALICE, 'mood', 'line one\nline two');
    await client.patchKv('@me', { city: 'Lisbon', site: 'https://example.com' });
    expect((await client.presence(ALICE)).kv).toEqual({
      mood: 'line one\nline two',
      city: 'Lisbon',
      site: 'https://example.com',
    });
    await client.deleteKv('@me', 'mood');
    await client.deleteKv(ALICE, 'never_set');
    expect((await client.presence(ALICE)).kv).toEqual({ city: 'Lisbon', site: 'https://example.com' });
  });

  it('adds, lists and removes webhooks with the key', async () => {
    // A literal public address, nothing resolved; removed before any KV write could be sent to it.
    const created = await client.createWebhook('https://93.184.216.34/hook', ['kv']);
    expect(created).toMatchObject({ url: 'https://93.184.216.34/hook', events: ['kv'] });
    expect(created.secret).toMatch(/^whsec_/);
    const listed = await client.webhooks();
    expect(listed.limit).toBe(5);
    expect(listed.webhooks.map((webhook) => webhook.id)).toEqual([created.id]);
    await client.deleteWebhook(created.id);
    expect((await client.webhooks()).webhooks).toEqual([]);
    const refused = await failure(client.createWebhook('https://127.0.0.1/hook', ['kv']));
    expect([refused.status, refused.code]).toEqual([400, 'invalid_webhook_url']);
    const gone = await failure(client.deleteWebhook(created.id));
    expect([gone.status, gone.code]).toEqual([404, 'webhook_not_found']);
  });

  it('sends the key only where it is needed', () => {
    const withKey = sent.filter((request) => request.headers.authorization === key);
    expect(withKey.length).toBeGreaterThan(0);
    for (const request of withKey) expect(request.url).toMatch(/\/@me|\/kv/);
    for (const request of sent.filter((r) => r.url.endsWith(`/v1/users/${ALICE}`))) {
      expect(request.headers.authorization).toBeUndefined();
    }
  });

  it('builds card and avatar URLs the service answers', async () => {
    const card = client.cardUrl(ALICE, { theme: 'light', hideMusic: true, bg: '#102030', borderRadius: 4 });
    expect(card).toBe(
      `${h.base}/v1/users/${ALICE}/card.svg?theme=light&hideMusic=true&bg=%23102030&borderRadius=4`,
    );
    // A client asking for JSON first is told of any option the card could not take: none here.
    const strict = { headers: { accept: 'application/json, image/*;q=0.1' } };
    const response = await fetch(card, strict);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    const png = client.cardUrl(
      ALICE,
      { hideActivity: 'whenNotUsed', ignoreAppId: ['512035578624524288', '463097721130188830'] },
      'png',
    );
    expect(png).toBe(
      `${h.base}/v1/users/${ALICE}/card.png?hideActivity=whenNotUsed&ignoreAppId=512035578624524288%2C463097721130188830`,
    );
    const drawn = await fetch(png, strict);
    expect(drawn.status).toBe(200);
    expect(drawn.headers.get('content-type')).toBe('image/png');
    const avatar = await fetch(client.avatarUrl(ALICE, 'webp', 64), { redirect: 'manual' });
    expect(avatar.status).toBe(302);
    expect(avatar.headers.get('location')).toMatch(/\/embed\/avatars\/\d\.png$/);
  });

  it('throws PresentlyError with the contract code, status and message', async () => {
    const notMonitored = await failure(client.presence(NOBODY));
    expect(notMonitored).toMatchObject({ code: 'user_not_monitored', status: 404, name: 'PresentlyError' });
    expect(notMonitored.message).toContain(NOBODY);

    const wrongKey = new PresentlyClient({ baseUrl: h.base, apiKey: 'prs_not-a-key' });
    expect(await failure(wrongKey.setKv(ALICE, 'x', 'y'))).toMatchObject({
      code: 'invalid_api_key',
      status: 401,
    });
    const noKey = new PresentlyClient({ baseUrl: h.base });
    expect(await failure(noKey.presence('@me'))).toMatchObject({ code: 'invalid_api_key', status: 401 });
    expect(await failure(client.setKv(BOB, 'x', 'y'))).toMatchObject({ code: 'no_permission', status: 403 });
    expect(await failure(client.setKv(ALICE, 'bad key', 'y'))).toMatchObject({
      code: 'invalid_kv_key',
      status: 400,
    });
    expect(await failure(client.stats('not-an-id'))).toMatchObject({ code: 'invalid_user_id', status: 400 });
  });

  it('gives a 429 its Retry-After', async () => {
    const { app, base } = await startHttpServer({ rateLimits: { read: 1, write: 0 } });
    try {
      await inOneReadWindow();
      const limited = new PresentlyClient({ baseUrl: base });
      await limited.version();
      const error = await failure(limited.version());
      expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
      expect(error.retryAfter).toBeGreaterThan(0);
    } finally {
      await app.close();
    }
  });

  it("reports an answer that is not the API's (a proxy's error page) as unexpected_response", async () => {
    const proxy = new PresentlyClient({
      baseUrl: 'https://presently.example',
      fetch: async () => ({
        status: 502,
        headers: { get: () => 'text/html' },
        text: async () => '<html><body>Bad Gateway</body></html>',
      }),
    });
    expect(await failure(proxy.presence(ALICE))).toMatchObject({ code: 'unexpected_response', status: 502 });
  });
});
