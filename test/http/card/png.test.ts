import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardContent } from '../../../src/card/content.js';
import { DEFAULT_CARD_OPTIONS } from '../../../src/card/options.js';
import { PNG_SCALE, rasterize } from '../../../src/card/png.js';
import { renderCard } from '../../../src/card/status-card.js';
import { THEMES } from '../../../src/card/theme.js';
import { textWidth } from '../../../src/card/truncate.js';
import { defaultAvatarIndex } from '../../../src/presence/normalize/avatar.js';
import { customStatusActivity, spotifyLocalFileActivity } from '../../../src/simulator/activities.js';
import { DEFAULT_AVATAR_COLOURS as SIMULATOR_DEFAULT_AVATAR_COLOURS } from '../../../src/simulator/cdn.js';
import { colourFor, type Rgb } from '../../../src/simulator/png.js';
import { byClass, CDN, parseCard, presenceOf, visible } from '../../card/support.js';
import { eventually } from '../../support/eventually.js';
import { type Harness, startHarness } from '../../support/harness.js';
import { type DecodedPng, decodePng, pixelAt } from '../../support/png-decode.js';

/**
 * `GET /v1/users/:id/card.png` over real HTTP: the service connected to the simulated Discord, whose CDN
 * serves solid-colour avatars. The PNG is decoded here, so the checks are on what a viewer sees: its size,
 * the card's colours, the avatar, the name's text.
 */

const GUILD = '400000000000000001';
/** Listening to music: the tallest card, and an avatar of the simulator's colour for its hash. */
const NOVA = {
  id: '94490510688792576',
  username: 'nova',
  global_name: 'Nova',
  avatar: '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b',
};
/** Nothing going on: the idle card, which stays the same from one second to the next. */
const QUIET = {
  id: '159985870458322944',
  username: 'quiet',
  global_name: 'Maximilian Featherstone',
  avatar: null,
};
const UNKNOWN = '123456789012345678';

/** Where the name is drawn (profile-header.ts): x from TEXT_X, baseline 53 without a custom status, bold 22px. */
const NAME_X = 122;
const NAME_FONT = { size: 22, bold: true };

/** What a browser sends for an <img>, and what GitHub's image proxy passes on. */
const IMG = { headers: { accept: 'image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8' } };
const JSON_ACCEPT = { headers: { accept: 'application/json' } };

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The pixel under an SVG coordinate of the card. */
const at = (image: DecodedPng, x: number, y: number) => pixelAt(image, x * PNG_SCALE, y * PNG_SCALE);

/** A theme's `#rrggbb` as channels. */
function rgbOf(hex: string): Rgb {
  const channel = (i: number) => Number.parseInt(hex.slice(i, i + 2), 16);
  return [channel(1), channel(3), channel(5)];
}

/** The largest difference of one channel between two colours. */
const distance = (a: readonly number[], b: readonly number[]) =>
  Math.max(...[0, 1, 2].map((i) => Math.abs((a[i] ?? 0) - (b[i] ?? 0))));

let harness: Harness;
let base: string;

beforeAll(async () => {
  const now = Date.now();
  harness = await startHarness({
    setup: (sim) => {
      sim.createGuild({
        id: GUILD,
        name: 'Cards',
        members: [
          {
            user: NOVA,
            presence: {
              status: 'online',
              activities: [
                customStatusActivity({ text: 'on repeat', emoji: { name: '🎧' } }),
                // Ten minutes long: the song is still playing whatever the test's pace.
                spotifyLocalFileActivity({ song: 'Demo tape', start: now - 30_000, end: now + 600_000 }),
              ],
            },
          },
          { user: QUIET, presence: { status: 'online', activities: [] } },
        ],
      });
    },
  });
  base = harness.base;
  await eventually(() => {
    for (const user of [NOVA, QUIET]) expect(harness.app.registry.get(user.id)).toBeDefined();
  });
});

afterAll(async () => {
  await harness?.close();
});

const png = (id: string, query = '', init?: RequestInit) =>
  fetch(`${base}/v1/users/${id}/card.png${query}`, init);

/** The SVG card's size for the same id and options: the PNG's, times PNG_SCALE. */
async function svgSize(id: string, query = ''): Promise<{ width: number; height: number }> {
  const response = await fetch(`${base}/v1/users/${id}/card.svg${query}`);
  expect(response.status).toBe(200);
  const { width, height } = parseCard(await response.text()).attributes;
  return { width: Number(width), height: Number(height) };
}

/** A 200 PNG answer, decoded, its size checked against the SVG card's. */
async function expectCard(response: Response, id: string, query = ''): Promise<DecodedPng> {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('image/png');
  const bytes = Buffer.from(await response.arrayBuffer());
  expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  const image = decodePng(bytes);
  const svg = await svgSize(id, query);
  expect({ width: image.width, height: image.height }).toEqual({
    width: svg.width * PNG_SCALE,
    height: svg.height * PNG_SCALE,
  });
  return image;
}

/** The card's fill near its bottom-left corner: inside the rounded rect, clear of panel, border and text. */
const background = (image: DecodedPng) => at(image, 8, image.height / PNG_SCALE - 4);

async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const body = (await response.json()) as { success: boolean; error: { code: string } };
  expect(body).toMatchObject({ success: false, error: { code } });
}

describe('GET /v1/users/:id/card.png', () => {
  it("answers a PNG of the SVG card's size, with the headers of a README image", async () => {
    const response = await png(NOVA.id);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const music = await expectCard(response, NOVA.id);
    expect(music.width).toBe(480 * PNG_SCALE);

    // The idle card is shorter than the music card, and its PNG follows.
    const idle = await expectCard(await png(QUIET.id), QUIET.id);
    expect(idle.width).toBe(music.width);
    expect(idle.height).toBeLessThan(music.height);
  });

  it('answers 304 with no body to If-None-Match with its ETag', async () => {
    // Quiet's card has no clock or progress bar: the same bytes, so the same ETag, from one second to the next.
    const first = await png(QUIET.id);
    const etag = first.headers.get('etag') ?? '';
    expect(etag).not.toBe('');
    await first.arrayBuffer();

    const again = await png(QUIET.id, '', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('cache-control')).toBe('no-cache');
    expect((await again.arrayBuffer()).byteLength).toBe(0);

    const other = await png(QUIET.id, '', { headers: { 'if-none-match': '"something-else"' } });
    expect(other.status).toBe(200);
    expect(other.headers.get('etag')).toBe(etag);
  });

  it('answers HEAD with the headers and no body', async () => {
    const response = await png(QUIET.id, '', { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('etag')).toBeTruthy();
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect((await response.arrayBuffer()).byteLength).toBe(0);
  });

  it("draws the card in the theme's background colour", async () => {
    const dark = await expectCard(await png(QUIET.id), QUIET.id);
    expect(background(dark)).toEqual([...rgbOf(THEMES.dark.background), 255]);
    const light = await expectCard(await png(QUIET.id, '?theme=light'), QUIET.id, '?theme=light');
    expect(background(light)).toEqual([...rgbOf(THEMES.light.background), 255]);
  });

  it("draws the avatar fetched from the CDN: the simulator's colour for the hash", async () => {
    const image = await expectCard(await png(NOVA.id), NOVA.id);
    // The avatar's centre, (60, 60) on the card; the image is scaled, so a little tolerance.
    expect(distance(at(image, 60, 60), colourFor(NOVA.avatar))).toBeLessThanOrEqual(2);
    expect(at(image, 60, 60)[3]).toBe(255);
  });

  it('draws the name in the card font: text-coloured pixels as wide as the font measures it', async () => {
    const svg = parseCard(await (await fetch(`${base}/v1/users/${QUIET.id}/card.svg`)).text());
    // Not truncated: the whole name is drawn, so its width is the font's width for it.
    expect(byClass(svg, 'name').map((e) => visible(e.text))).toEqual([QUIET.global_name]);
    const expectedRight = NAME_X + textWidth(QUIET.global_name, NAME_FONT);

    for (const theme of ['dark', 'light'] as const) {
      const query = `?theme=${theme}`;
      const image = await expectCard(await png(QUIET.id, query), QUIET.id, query);
      const ground = rgbOf(THEMES[theme].background);
      const ink = rgbOf(THEMES[theme].text);
      let inked = 0;
      let textColoured = 0;
      let right = -1;
      // The name's line: x from its start to the header's clip, y from above the caps to the baseline.
      for (let y = 35 * PNG_SCALE; y <= 55 * PNG_SCALE; y++) {
        for (let x = NAME_X * PNG_SCALE; x < 462 * PNG_SCALE; x++) {
          const colour = pixelAt(image, x, y);
          if (distance(colour, ground) > 64) {
            inked++;
            right = Math.max(right, x);
          }
          if (distance(colour, ink) <= 24) textColoured++;
        }
      }
      // Light on dark, dark on light, solid in the strokes' middles: without a font resvg draws no text at
      // all (it loads no system fonts). A 23-letter bold name at 22 px inks well over a thousand pixels.
      expect(inked, theme).toBeGreaterThan(1_000 * PNG_SCALE ** 2);
      expect(textColoured, theme).toBeGreaterThan(500 * PNG_SCALE ** 2);
      // The ink ends where the card's width estimate (the bundled font's advances) says the name does.
      expect(Math.abs(right / PNG_SCALE - expectedRight), theme).toBeLessThan(4);
    }
  });

  it('answers a PNG for a user who is not monitored, with the default avatar', async () => {
    const image = await expectCard(await png(UNKNOWN), UNKNOWN);
    expect(background(image)).toEqual([...rgbOf(THEMES.dark.background), 255]);
    const colour = SIMULATOR_DEFAULT_AVATAR_COLOURS[defaultAvatarIndex(UNKNOWN)] ?? [0, 0, 0];
    expect(distance(at(image, 60, 60), colour)).toBeLessThanOrEqual(2);
  });

  it.each(['abc', '@me'])(
    'answers a PNG for the id %j, and 400 invalid_user_id to a client that asks for JSON',
    async (id) => {
      for (const init of [{}, IMG]) {
        const image = await expectCard(await png(id, '', init), id);
        expect(background(image)).toEqual([...rgbOf(THEMES.dark.background), 255]);
      }
      await expectError(await png(id, '', JSON_ACCEPT), 400, 'invalid_user_id');
    },
  );

  it('draws the default theme for a bad option, and answers 400 invalid_query to a client that asks for JSON', async () => {
    for (const init of [{}, IMG]) {
      const image = await expectCard(await png(QUIET.id, '?theme=neon', init), QUIET.id, '?theme=neon');
      expect(background(image)).toEqual([...rgbOf(THEMES.dark.background), 255]);
    }
    await expectError(await png(QUIET.id, '?theme=neon', JSON_ACCEPT), 400, 'invalid_query');
  });
});

describe('a popular PNG card', () => {
  const drawn = async () => {
    const scrape = await (await fetch(`${base}/metrics`)).text();
    return Number(/presently_cards_drawn_total\{format="png"\} (\d+)/.exec(scrape)?.[1] ?? 0);
  };

  it('is drawn once for all the requests that come while it is drawn, and once a second at most', async () => {
    const before = await drawn();
    const answers = await Promise.all(Array.from({ length: 200 }, () => png(QUIET.id, '?v=popular')));
    expect(answers.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
    const bodies = await Promise.all(answers.map(async (answer) => Buffer.from(await answer.arrayBuffer())));
    // The idle card is the same picture whatever the second; the requests may straddle two seconds.
    expect(new Set(bodies.map((body) => body.toString('base64'))).size).toBe(1);
    expect((await drawn()) - before).toBeLessThanOrEqual(2);
  });
});

describe('rasterize', () => {
  /** The PNG of a card whose display name is `name`, otherwise the same. */
  const cardWithName = async (name: string): Promise<Buffer> => {
    const options = { ...DEFAULT_CARD_OPTIONS, animated: false };
    const content = cardContent(presenceOf({ user: { global_name: name } }), options, CDN);
    const images = { avatar: null, emoji: null, art: null, badge: null, decoration: null };
    return rasterize(renderCard(content, options, images, 1_800_000_000_000));
  };

  it('draws Greek, Cyrillic and Hebrew with glyphs, not boxes', async () => {
    // A font without the characters draws every one as the same box: two names of the same length would
    // then be the same picture.
    for (const [a, b] of [
      ['Привет', 'Бвгдеж'],
      ['Ωμέγα', 'Αλφάβ'],
      ['שלום', 'אבגד'],
    ] as const) {
      expect((await cardWithName(a)).equals(await cardWithName(b)), `${a} / ${b}`).toBe(false);
    }
  });

  it('refuses, as rate_limited, what is asked past two drawing and 256 waiting, and draws the rest', async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>`;
    const results = await Promise.allSettled(Array.from({ length: 300 }, () => rasterize(svg)));
    const refused = results.filter((result) => result.status === 'rejected');
    expect(results.length - refused.length).toBe(258);
    for (const result of refused) expect((result.reason as { code?: string }).code).toBe('rate_limited');
    // The queue empties: the next one is drawn.
    expect(decodePng(await rasterize(svg)).width).toBe(8 * PNG_SCALE);
  });

  it('refuses what would hold more than 64 MiB of cards waiting, however few they are', async () => {
    // A card of a megabyte and a half: the largest images it may inline, as markup.
    const padding = `<!--${'x'.repeat(1_500_000)}-->`;
    const big = `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8">${padding}<rect width="8" height="8"/></svg>`;
    const results = await Promise.allSettled(Array.from({ length: 60 }, () => rasterize(big)));
    const drawn = results.filter((result) => result.status === 'fulfilled').length;
    expect(drawn).toBe(Math.floor((64 * 1024 * 1024) / big.length));
    expect(decodePng(await rasterize(big)).width).toBe(8 * PNG_SCALE);
  });

  it('draws every card asked for at once, each its own', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `Name ${i}`);
    const drawn = await Promise.all(names.map((name) => cardWithName(name)));
    expect(new Set(drawn.map((png) => png.toString('base64'))).size).toBe(names.length);
    for (const png of drawn) expect(decodePng(png).width).toBe(480 * PNG_SCALE);
  });
});
