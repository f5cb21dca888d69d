import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { THEMES } from '../../../src/card/theme.js';
import { TOP_CARD_DEFAULT_LIMIT, TOP_CARD_MAX_LIMIT } from '../../../src/card/track-options.js';
import { CARD_CONTENT_SECURITY_POLICY } from '../../../src/http/card-serving.js';
import { RECENT_DEFAULT_LIMIT, RECENT_MAX_LIMIT, type TrackEntry } from '../../../src/model/history.js';
import type { MusicSource } from '../../../src/presence/model.js';
import { richPresenceActivity } from '../../../src/simulator/activities.js';
import { colourFor, solidPng } from '../../../src/simulator/png.js';
import type { HistoryWrite } from '../../../src/store/ports.js';
import { byClass, type ParsedElement, parseCard, visible, walk } from '../../card/support.js';
import { insertApiKey } from '../../support/api-key.js';
import { eventually } from '../../support/eventually.js';
import { type Harness, startHarness } from '../../support/harness.js';
import { inOneReadWindow } from '../../support/read-window.js';

/**
 * `GET /v1/users/:id/recent.svg|.png` and `top.svg|.png` over real HTTP: the service connected to the
 * simulated Discord, plays kept in its store, album art from the simulated CDN.
 */

const GUILD = '400000000000000031';
const NOVA = { id: '94490510688792576', username: 'nova', global_name: 'Nova', avatar: null };
/** Plays kept, nothing played now. */
const KAI = { id: '218486934151479296', username: 'kai', global_name: 'Kai', avatar: null };
/** Nothing played ever. */
const MIRA = { id: '381456437152087040', username: 'mira', global_name: 'Mira', avatar: null };
/** Hides Apple Music's player. */
const JUNO = { id: '725054734427766827', username: 'juno', global_name: 'Juno', avatar: null };
/** Private. */
const ADA = { id: '533331104316391424', username: 'ada', global_name: 'Ada', avatar: null };
const UNKNOWN = '123456789012345678';
/** An Apple Music player (Cider 2, among DEFAULT_MUSIC_APPS) and one of its assets on the simulated CDN. */
const CIDER = '1020414178047041627';
const ART_APP = '512035578624524288';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

let harness: Harness;
let base: string;
let started: number;
let junoKey: string;
let adaToken: string;

const artUrl = (asset: string) => `${harness.simulator.cdnUrl}/app-assets/${ART_APP}/${asset}.png`;
const artUri = (asset: string) =>
  `data:image/png;base64,${solidPng(64, colourFor(`${ART_APP}/${asset}`)).toString('base64')}`;

function play(
  userId: string,
  song: string,
  source: MusicSource,
  ts: number,
  art: string | null,
): HistoryWrite {
  const track: TrackEntry = {
    source,
    song,
    artist: `${song} Band; Friends`,
    album: 'Album',
    album_art_url: art,
    track_id: song.toLowerCase().replaceAll(' ', '-'),
    track_url: null,
    timestamps: { start: ts, end: ts + 3 * MINUTE },
    duration_ms: 3 * MINUTE,
    ts,
  };
  return { userId, status: null, track, countsPlay: true, lastSeen: null };
}

/** Kai's plays: far enough from a minute's end that the times read the same for the whole test. */
function kaiPlays(now: number): HistoryWrite[] {
  return [
    play(KAI.id, 'Old Favourite', 'spotify', now - 12 * DAY, null),
    play(KAI.id, 'Old Favourite', 'spotify', now - 11 * DAY, null),
    play(KAI.id, 'Old Favourite', 'spotify', now - 10 * DAY, null),
    play(KAI.id, 'Teardrop', 'youtube_music', now - 3 * DAY - HOUR, artUrl('900000000000000001')),
    play(KAI.id, 'Teardrop', 'youtube_music', now - 3 * DAY, artUrl('900000000000000001')),
    ...Array.from({ length: 7 }, (_, i) =>
      play(KAI.id, `Filler ${i}`, 'tidal', now - 5 * HOUR - 30 * MINUTE + i, null),
    ),
    play(KAI.id, 'Genesis', 'apple_music', now - 2 * HOUR - 30 * MINUTE, artUrl('900000000000000002')),
  ];
}

const at = (path: string, init?: RequestInit) => fetch(`${base}/v1/users/${path}`, init);
const svgOf = async (path: string, init?: RequestInit) => {
  const response = await at(path, init);
  expect(response.status).toBe(200);
  return response.text();
};
const texts = (root: ParsedElement, className: string) =>
  byClass(root, className).map((e) => visible(e.text));
const images = (root: ParsedElement) =>
  [...walk(root)].filter((e) => e.tag === 'image').map((e) => e.attributes.href ?? '');
const pngSize = (bytes: Buffer) => ({ width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) });

const JSON_FIRST = { headers: { accept: 'application/json, image/*;q=0.5' } };
const IMG = { headers: { accept: 'image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8' } };

async function setPrivacy(key: string, patch: object): Promise<void> {
  const response = await fetch(`${base}/v1/users/@me/privacy`, {
    method: 'PATCH',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: JSON.stringify(patch),
  });
  expect(response.status).toBe(200);
}

beforeAll(async () => {
  started = Date.now();
  harness = await startHarness({
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Track cards',
        members: [
          {
            user: NOVA,
            presence: {
              status: 'online',
              activities: [
                richPresenceActivity({
                  type: 2,
                  name: 'Cider',
                  applicationId: CIDER,
                  details: 'Midnight City',
                  state: 'M83',
                  largeImage: '900000000000000003',
                  start: started - 30_000,
                  end: started + 10 * MINUTE,
                }),
              ],
            },
          },
          ...[KAI, MIRA, JUNO, ADA].map((user) => ({ user, presence: { status: 'online' as const } })),
        ],
      }),
  });
  base = harness.base;
  await eventually(() => {
    for (const user of [NOVA, KAI, MIRA, JUNO, ADA]) expect(harness.app.view.get(user.id)).toBeDefined();
  });
  const store = harness.app.store;
  await store.history.appendHistory(
    [
      ...kaiPlays(started),
      play(NOVA.id, 'Earlier', 'spotify', started - 3 * HOUR - 30 * MINUTE, null),
      play(JUNO.id, 'Secret Song', 'apple_music', started - 3 * HOUR, null),
      play(JUNO.id, 'Secret Song', 'apple_music', started - 2 * HOUR, null),
      play(JUNO.id, 'Open Song', 'spotify', started - HOUR - 30 * MINUTE, null),
      play(JUNO.id, 'Open Song', 'spotify', started - 30 * MINUTE, null),
      play(ADA.id, 'Private Song', 'spotify', started - 3 * HOUR, null),
      play(ADA.id, 'Private Song', 'spotify', started - 2 * HOUR, null),
    ],
    { history: 100, trackedTracks: 1000 },
  );
  // Nova's play now, as the recorder writes it.
  await eventually(async () => {
    const { data } = (await (await at(`${NOVA.id}/recent`)).json()) as {
      data: { recent_tracks: TrackEntry[] };
    };
    expect(data.recent_tracks[0]?.song).toBe('Midnight City');
  });
  junoKey = await insertApiKey(store, JUNO.id);
  await setPrivacy(junoKey, { hide_application_ids: [CIDER] });
  const adaKey = await insertApiKey(store, ADA.id);
  await setPrivacy(adaKey, { visibility: 'private' });
  const made = await fetch(`${base}/v1/users/@me/read-tokens`, {
    method: 'POST',
    headers: { authorization: adaKey },
  });
  expect(made.status).toBe(201);
  adaToken = ((await made.json()) as { data: { token: string } }).data.token;
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

describe('GET /v1/users/:id/recent.svg', () => {
  it('answers an SVG card with the headers the status card has', async () => {
    const response = await at(`${KAI.id}/recent.svg`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toBe(CARD_CONTENT_SECURITY_POLICY);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    parseCard(await response.text());
  });

  it('lists the latest plays, newest first, with artist, source and how long ago', async () => {
    const root = parseCard(await svgOf(`${KAI.id}/recent.svg`));
    expect(texts(root, 'name')).toEqual(['Kai']);
    expect(texts(root, 'heading')).toEqual(['Recently played']);
    expect(texts(root, 'song')).toEqual(['Genesis', 'Filler 6', 'Filler 5', 'Filler 4', 'Filler 3']);
    expect(texts(root, 'artist')[0]).toBe('Genesis Band, Friends');
    expect(texts(root, 'meta')).toEqual(['2 h ago', '5 h ago', '5 h ago', '5 h ago', '5 h ago']);
    expect(texts(root, 'source')).toEqual(['Apple Music', 'TIDAL', 'TIDAL', 'TIDAL', 'TIDAL']);
    expect(byClass(root, 'now')).toHaveLength(0);
  });

  it('marks the first play "Now playing" while it plays, and tells days apart from hours', async () => {
    const nova = parseCard(await svgOf(`${NOVA.id}/recent.svg`));
    expect(texts(nova, 'song')).toEqual(['Midnight City', 'Earlier']);
    expect(texts(nova, 'now')).toEqual(['Now playing']);
    expect(texts(nova, 'meta')).toEqual(['3 h ago']);
    const kai = parseCard(await svgOf(`${KAI.id}/recent.svg?limit=10`));
    expect(texts(kai, 'meta').slice(-1)).toEqual(['3 days ago']);
  });

  it('inlines the album art as data: URIs, and draws a placeholder where there is none', async () => {
    const root = parseCard(await svgOf(`${KAI.id}/recent.svg?limit=10`));
    // The avatar (Discord's default one, from the CDN), then the rows' art: Genesis, the fillers' none,
    // Teardrop twice.
    const art = [artUri('900000000000000002'), artUri('900000000000000001'), artUri('900000000000000001')];
    expect(images(root).slice(1)).toEqual(art);
    for (const href of images(root)) expect(href).toMatch(/^data:image\/png;base64,/);
    expect(await svgOf(`${KAI.id}/recent.svg?limit=10`)).not.toContain(harness.simulator.cdnUrl);
  });

  it(`takes limit: ${RECENT_DEFAULT_LIMIT} by default, clamped to 1–${RECENT_MAX_LIMIT}, the default for a non-integer`, async () => {
    const rows = async (query: string, init?: RequestInit) =>
      byClass(parseCard(await svgOf(`${KAI.id}/recent.svg${query}`, init)), 'song').length;
    expect(await rows('')).toBe(RECENT_DEFAULT_LIMIT);
    expect(await rows('?limit=1')).toBe(1);
    expect(await rows('?limit=0')).toBe(1);
    expect(await rows('?limit=-4')).toBe(1);
    expect(await rows('?limit=99')).toBe(RECENT_MAX_LIMIT);
    expect(await rows('?limit=3&limit=2')).toBe(2);
    expect(await rows('?limit=abc', IMG)).toBe(RECENT_DEFAULT_LIMIT);
    expect(await rows('?limit=2.5', IMG)).toBe(RECENT_DEFAULT_LIMIT);
    const refused = await at(`${KAI.id}/recent.svg?limit=abc`, JSON_FIRST);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_query');
  });

  it("applies the status card's options, and falls back from a bad one", async () => {
    const svg = await svgOf(`${NOVA.id}/recent.svg?theme=light&borderRadius=4&hideTimestamp&animated=false`);
    const root = parseCard(svg);
    expect(byClass(root, 'card')[0]?.attributes).toMatchObject({ rx: '4', fill: THEMES.light.background });
    expect(byClass(root, 'meta')).toHaveLength(0);
    expect(svg).not.toMatch(/@keyframes|class="eq"/);
    expect(texts(root, 'now')).toEqual(['Now playing']);

    const fallback = parseCard(await svgOf(`${NOVA.id}/recent.svg?theme=neon&bg=nope&borderRadius=900`, IMG));
    expect(byClass(fallback, 'card')[0]?.attributes).toMatchObject({
      rx: '12',
      fill: THEMES.dark.background,
    });
    expect(texts(fallback, 'song')).toEqual(['Midnight City', 'Earlier']);
    const refused = await at(`${NOVA.id}/recent.svg?theme=neon`, JSON_FIRST);
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('invalid_query');
    expect(error.message.startsWith('theme: ')).toBe(true);
  });

  it('leaves the profile out with hideProfile, naming the list alone', async () => {
    const root = parseCard(await svgOf(`${KAI.id}/recent.svg?hideProfile`));
    expect(byClass(root, 'name')).toHaveLength(0);
    expect(texts(root, 'label')).toEqual(['RECENTLY PLAYED']);
    expect(images(root)).toHaveLength(1);
  });

  it('answers 304 to If-None-Match with the ETag, and another card for other options', async () => {
    const first = await at(`${KAI.id}/recent.svg?hideTimestamp=1`);
    const etag = first.headers.get('etag') ?? '';
    await first.arrayBuffer();
    const again = await at(`${KAI.id}/recent.svg?hideTimestamp=1`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect(await again.text()).toBe('');
    // Spellings of the same options and unknown parameters are the same card.
    const spelled = await at(`${KAI.id}/recent.svg?hideTimestamp=yes&v=2`, {
      headers: { 'if-none-match': etag },
    });
    expect(spelled.status).toBe(304);
    const other = await at(`${KAI.id}/recent.svg?hideTimestamp=1&limit=2`, {
      headers: { 'if-none-match': etag },
    });
    expect(other.status).toBe(200);
    expect(other.headers.get('etag')).not.toBe(etag);
  });

  it('draws a new card when a play is added, the presence unchanged', async () => {
    const before = await at(`${MIRA.id}/recent.svg`);
    const etag = before.headers.get('etag') ?? '';
    expect(texts(parseCard(await before.text()), 'empty')).toEqual(['Nothing played yet']);
    await harness.app.store.history.appendHistory([play(MIRA.id, 'First Song', 'deezer', Date.now(), null)], {
      history: 100,
      trackedTracks: 1000,
    });
    const after = await at(`${MIRA.id}/recent.svg`, { headers: { 'if-none-match': etag } });
    expect(after.status).toBe(200);
    expect(texts(parseCard(await after.text()), 'song')).toEqual(['First Song']);
  });
});

describe('GET /v1/users/:id/top.svg', () => {
  it('ranks the tracks played at least twice, with their plays', async () => {
    const root = parseCard(await svgOf(`${KAI.id}/top.svg`));
    expect(texts(root, 'heading')).toEqual(['Top tracks · all time']);
    expect(texts(root, 'rank')).toEqual(['1', '2']);
    expect(texts(root, 'song')).toEqual(['Old Favourite', 'Teardrop']);
    expect(texts(root, 'meta')).toEqual(['3 plays', '2 plays']);
    expect(texts(root, 'source')).toEqual(['Spotify', 'YouTube Music']);
    expect(images(root).slice(1)).toEqual([artUri('900000000000000001')]);
  });

  it('counts the plays of the last 7 or 30 days with period', async () => {
    const week = parseCard(await svgOf(`${KAI.id}/top.svg?period=7d`));
    expect(texts(week, 'heading')).toEqual(['Top tracks · last 7 days']);
    expect(texts(week, 'song')).toEqual(['Teardrop']);
    const month = parseCard(await svgOf(`${KAI.id}/top.svg?period=30D`));
    expect(texts(month, 'heading')).toEqual(['Top tracks · last 30 days']);
    expect(texts(month, 'song')).toEqual(['Old Favourite', 'Teardrop']);
    const fallback = parseCard(await svgOf(`${KAI.id}/top.svg?period=1y`, IMG));
    expect(texts(fallback, 'heading')).toEqual(['Top tracks · all time']);
    const refused = await at(`${KAI.id}/top.svg?period=1y`, JSON_FIRST);
    expect(refused.status).toBe(400);
  });

  it('answers the same periods as JSON at /top-tracks, and refuses one it does not know', async () => {
    const titles = async (query: string) => {
      const response = await at(`${KAI.id}/top-tracks${query}`);
      expect(response.status).toBe(200);
      const { data } = (await response.json()) as { data: { top_tracks: { song: string }[] } };
      return data.top_tracks.map((track) => track.song);
    };
    expect(await titles('?period=7d')).toEqual(['Teardrop']);
    expect(await titles('?period=30d')).toEqual(['Old Favourite', 'Teardrop']);
    expect(await titles('')).toEqual(await titles('?period=all'));
    const refused = await at(`${KAI.id}/top-tracks?period=1y`);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ success: false, error: { code: 'invalid_query' } });
  });

  it(`takes limit: ${TOP_CARD_DEFAULT_LIMIT} by default, clamped to 1–${TOP_CARD_MAX_LIMIT}`, async () => {
    const plays: HistoryWrite[] = [];
    for (let n = 0; n < TOP_CARD_MAX_LIMIT + 2; n++) {
      for (const k of [0, 1])
        plays.push(play(MIRA.id, `Hit ${n}`, 'spotify', Date.now() - DAY + n * 10 + k, null));
    }
    await harness.app.store.history.appendHistory(plays, { history: 100, trackedTracks: 1000 });
    const rows = async (query: string) =>
      texts(parseCard(await svgOf(`${MIRA.id}/top.svg${query}`)), 'song').length;
    expect(await rows('')).toBe(TOP_CARD_DEFAULT_LIMIT);
    expect(await rows('?limit=0')).toBe(1);
    expect(await rows('?limit=1000')).toBe(TOP_CARD_MAX_LIMIT);
  });

  it('says so when no track was played twice', async () => {
    const root = parseCard(await svgOf(`${NOVA.id}/top.svg?period=7d`));
    expect(texts(root, 'empty')).toEqual(['No track played twice in the last 7 days']);
    expect(byClass(root, 'song')).toHaveLength(0);
  });

  it('answers 304 to If-None-Match with the ETag', async () => {
    const first = await at(`${KAI.id}/top.svg`);
    const etag = first.headers.get('etag') ?? '';
    await first.arrayBuffer();
    expect((await at(`${KAI.id}/top.svg`, { headers: { 'if-none-match': etag } })).status).toBe(304);
  });
});

describe('the PNG track cards', () => {
  it.each(['recent', 'top'])('%s.png is the SVG card drawn at its size', async (kind) => {
    const svg = parseCard(await svgOf(`${KAI.id}/${kind}.svg`));
    const response = await at(`${KAI.id}/${kind}.png`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('content-security-policy')).toBe(CARD_CONTENT_SECURITY_POLICY);
    const etag = response.headers.get('etag') ?? '';
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(pngSize(bytes)).toEqual({
      width: Number(svg.attributes.width),
      height: Number(svg.attributes.height),
    });
    expect((await at(`${KAI.id}/${kind}.png`, { headers: { 'if-none-match': etag } })).status).toBe(304);
  });
});

describe('privacy and ids the cards cannot show', () => {
  it('leaves out the plays of an application the user hides, as the JSON routes do', async () => {
    for (const kind of ['recent', 'top']) {
      const svg = await svgOf(`${JUNO.id}/${kind}.svg`);
      expect(svg).not.toContain('Secret Song');
      expect(texts(parseCard(svg), 'song')).toEqual(
        kind === 'recent' ? ['Open Song', 'Open Song'] : ['Open Song'],
      );
    }
  });

  it('answers the not-monitored card for a private user, and their card to their read token', async () => {
    for (const kind of ['recent', 'top']) {
      const hidden = await at(`${ADA.id}/${kind}.svg`);
      expect(hidden.headers.get('cache-control')).toBe('no-cache');
      const svg = await hidden.text();
      expect(svg).not.toContain('Private Song');
      expect(texts(parseCard(svg), 'name')).toEqual(['Not monitored']);
      // A wrong token is no token.
      const wrong = await svgOf(`${ADA.id}/${kind}.svg?token=prt_${'x'.repeat(43)}`);
      expect(texts(parseCard(wrong), 'name')).toEqual(['Not monitored']);

      const shown = await at(`${ADA.id}/${kind}.svg?token=${adaToken}`);
      expect(shown.status).toBe(200);
      expect(shown.headers.get('cache-control')).toBe('private, no-store');
      const root = parseCard(await shown.text());
      expect(texts(root, 'name')).toEqual(['Ada']);
      expect(texts(root, 'song')[0]).toBe('Private Song');
    }
  });

  it('answers a card saying so for a user nobody monitors', async () => {
    for (const kind of ['recent', 'top']) {
      const root = parseCard(await svgOf(`${UNKNOWN}/${kind}.svg`));
      expect(texts(root, 'name')).toEqual(['Not monitored']);
      expect(texts(root, 'empty')[0]).toContain('shares no server');
    }
  });

  it.each(['abc', '12a', '@me', '%3Cb%3E'])(
    'answers a card saying so for the id %j, and 400 invalid_user_id to a client that asks for JSON',
    async (id) => {
      for (const kind of ['recent', 'top']) {
        const response = await at(`${id}/${kind}.svg`, IMG);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
        expect(texts(parseCard(await response.text()), 'name')).toEqual(['Not a Discord user ID']);
        const refused = await at(`${id}/${kind}.svg`, JSON_FIRST);
        expect(refused.status).toBe(400);
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_user_id');
      }
    },
  );
});

describe('the read budget', () => {
  it('charges a track card as any read, and refuses one past it', async () => {
    const limited = await startHarness({
      env: { RATE_LIMIT_READ: '2' },
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Budget',
          members: [{ user: KAI, presence: { status: 'online' } }],
        }),
    });
    try {
      await inOneReadWindow();
      for (const path of ['recent.svg', 'top.png']) {
        const answer = await fetch(`${limited.base}/v1/users/${KAI.id}/${path}`);
        await answer.arrayBuffer();
        expect(answer.status).toBe(200);
        expect(answer.headers.get('ratelimit-limit')).toBe('2');
      }
      const refused = await fetch(`${limited.base}/v1/users/${KAI.id}/recent.svg`);
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
    } finally {
      vi.useRealTimers();
      await limited.close();
    }
  });
});
