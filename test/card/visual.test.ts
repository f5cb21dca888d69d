import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CardContent, cardContent, unmonitoredContent } from '../../src/card/content.js';
import type { CardImages } from '../../src/card/images.js';
import { type CardOptions, DEFAULT_CARD_OPTIONS, parseCardOptions } from '../../src/card/options.js';
import { renderCard } from '../../src/card/status-card.js';
import { DEMO_USERS } from '../../src/demo/cast.js';
import { demoPresences } from '../../src/demo/script.js';
import { buildPresence } from '../../src/presence/normalize/presence.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { colourFor, ringPng, solidPng } from '../../src/simulator/png.js';
import {
  CARD_IMAGE_ID,
  type Chromium,
  chromiumAvailable,
  launchChromium,
  showAsImage,
} from '../support/chromium.js';
import { type DecodedPng, decodePng } from '../support/png-decode.js';
import { CDN, type ParsedElement, parseCard, walk } from './support.js';

/**
 * The card drawn by three renderers: Chromium with only Debian's default fonts (DejaVu, Noto Color
 * Emoji), Chromium with Liberation too, and librsvg (`rsvg-convert`, which reads no @font-face). Every
 * line of text must start and end in the same place in all three: the card's layout may not depend on the
 * viewer's fonts. The pictures go to docs/cards/renderers/ for a reviewer to look at.
 *
 * The cards are the demo users' at a fixed moment, with the simulated CDN's images, so the pictures are
 * the same on every run.
 */

const RSVG = '/usr/bin/rsvg-convert';
const OUT_DIR = fileURLToPath(new URL('../../docs/cards/renderers/', import.meta.url));
const FONT_DIRS = {
  dejavu: '/usr/share/fonts/truetype/dejavu',
  noto: '/usr/share/fonts/truetype/noto',
  liberation: '/usr/share/fonts/truetype/liberation2',
};
/** Pixels a line of text may start, or end, apart between renderers. */
const START_TOLERANCE = 2;
const END_TOLERANCE = 4;
/** How far a pixel's channel must be from the background's to be ink. */
const INK = 64;

const available = chromiumAvailable(
  'card renderer tests',
  [RSVG, ...Object.values(FONT_DIRS)],
  'chromium librsvg2-bin fonts-dejavu-core fonts-liberation2 fonts-noto-color-emoji',
);

const AT = 1_800_000_000_000;
const STARTED = AT - 12_000;
const dataUri = (png: Buffer) => `data:image/png;base64,${png.toString('base64')}`;

interface Example {
  name: string;
  content: CardContent;
  options: CardOptions;
  images: CardImages;
}

/** The demo users' cards as the service draws them at AT, with what the simulated CDN would serve. */
function examples(): Example[] {
  const presences = demoPresences(STARTED, AT);
  const demo = (
    name: string,
    user: (typeof DEMO_USERS)[keyof typeof DEMO_USERS],
    query: Record<string, string>,
  ) => {
    const raw = presences.get(user.id);
    if (!raw) throw new Error(`no demo presence for ${user.id}`);
    const presence = buildPresence(
      {
        user: { discriminator: '0', ...user },
        raw,
        profile: null,
        freshness: { observed_at: 1_763_800_000_000, stale: false },
        kv: {},
      },
      { cdnUrl: CDN, youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER },
    );
    const options = { ...parseCardOptions(query).options, animated: false };
    const content = cardContent(presence, options, CDN);
    const main = content.main;
    const images: CardImages = {
      avatar: user.avatar === null ? null : dataUri(solidPng(128, colourFor(user.avatar))),
      emoji: null,
      art:
        main?.kind === 'activity' && main.imageUrl !== null
          ? dataUri(solidPng(128, colourFor(main.imageUrl)))
          : null,
      badge: content.tag?.badgeUrl ? dataUri(solidPng(32, colourFor(content.tag.badgeUrl))) : null,
      decoration: content.decorationUrl ? dataUri(ringPng(256, colourFor(content.decorationUrl))) : null,
    };
    return { name, content, options, images };
  };
  const unmonitored = { ...DEFAULT_CARD_OPTIONS, animated: false };
  return [
    demo('nova-spotify', DEMO_USERS.nova, {}),
    demo('kai-youtube-music', DEMO_USERS.kai, { bg: '0d1117' }),
    demo('mira-game-light', DEMO_USERS.mira, { theme: 'light' }),
    demo('juno', DEMO_USERS.juno, { idleMessage: 'Heads down, shipping' }),
    demo('nova-compact', DEMO_USERS.nova, { layout: 'compact' }),
    demo('mira-compact-light', DEMO_USERS.mira, { layout: 'compact', theme: 'light' }),
    {
      name: 'not-monitored',
      content: unmonitoredContent('123456789012345678', CDN),
      options: unmonitored,
      images: { avatar: null, emoji: null, art: null, badge: null, decoration: null },
    },
  ];
}

/** A fontconfig file that offers only `dirs`, with the system's rules (aliases such as Arial). */
function fontConfig(dir: string, name: string, dirs: readonly string[]): string {
  const file = join(dir, `${name}.conf`);
  writeFileSync(
    file,
    `<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd"><fontconfig>${dirs
      .map((d) => `<dir>${d}</dir>`)
      .join(
        '',
      )}<cachedir>${join(dir, `${name}-cache`)}</cachedir><include ignore_missing="yes">/etc/fonts/conf.d</include></fontconfig>`,
  );
  return file;
}

/** The card shown as an <img> in Chromium, as a README shows it, and its screenshot. */
async function inChromium(page: Page, svg: string): Promise<Buffer> {
  const url = 'http://cards.invalid/card.svg';
  await page.route(url, (route) => route.fulfill({ contentType: 'image/svg+xml', body: svg }));
  await showAsImage(page, url, 'white');
  return page.locator(`#${CARD_IMAGE_ID}`).screenshot();
}

interface Line {
  /** Baseline and font size of the line's text. */
  y: number;
  size: number;
  /** Where its text may be: from the first text's start to the card's inner edge, or a right-anchored end. */
  left: number;
  right: number;
}

const SIZES: Record<string, number> = {
  cname: 17,
  cline: 13,
  name: 22,
  sub: 14,
  cs: 14,
  label: 11,
  title: 16,
  line: 13,
  faint: 13,
  time: 11,
  idle: 14,
};

/** The card's lines of text, read from its own markup (the texts outside the avatar and the server tag). */
function linesOf(root: ParsedElement, width: number): Line[] {
  const lines = new Map<number, Line>();
  for (const element of walk(root)) {
    const size = SIZES[element.attributes.class ?? ''];
    if (element.tag !== 'text' || size === undefined) continue;
    const x = Number(element.attributes.x);
    const y = Number(element.attributes.y);
    const end = element.attributes['text-anchor'] === 'end';
    const line = lines.get(y) ?? { y, size, left: Number.POSITIVE_INFINITY, right: width - 12 };
    if (end) line.right = Math.max(Math.min(line.right, x + 3), x + 3);
    else line.left = Math.min(line.left, x - 3);
    line.size = Math.max(line.size, size);
    lines.set(y, line);
  }
  return [...lines.values()].filter((line) => Number.isFinite(line.left));
}

/** The leftmost and rightmost ink of a line, against the colour most of its box has. */
function inkOf(image: DecodedPng, line: Line): { start: number; end: number } | null {
  const top = Math.max(0, Math.round(line.y - line.size));
  const bottom = Math.min(image.height - 1, Math.round(line.y + line.size * 0.3));
  const counts = new Map<number, number>();
  const at = (x: number, y: number) => (y * image.width + x) * 4;
  for (let y = top; y <= bottom; y++) {
    for (let x = Math.round(line.left); x <= Math.round(line.right); x++) {
      const i = at(x, y);
      const key = ((image.rgba[i] ?? 0) << 16) | ((image.rgba[i + 1] ?? 0) << 8) | (image.rgba[i + 2] ?? 0);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  const background = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
  const bg = [(background >> 16) & 255, (background >> 8) & 255, background & 255];
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (let y = top; y <= bottom; y++) {
    for (let x = Math.round(line.left); x <= Math.round(line.right); x++) {
      const i = at(x, y);
      if (bg.some((channel, c) => Math.abs((image.rgba[i + c] ?? 0) - channel) > INK)) {
        start = Math.min(start, x);
        end = Math.max(end, x);
      }
    }
  }
  return Number.isFinite(start) ? { start, end } : null;
}

describe.skipIf(!available)('the card in three renderers', () => {
  const work = mkdtempSync(join(tmpdir(), 'presently-cards-'));
  const renderers = ['chromium-dejavu', 'chromium-liberation', 'rsvg'] as const;
  let browsers: Chromium[] = [];
  const pictures = new Map<string, Record<(typeof renderers)[number], DecodedPng>>();
  const cards = examples();

  beforeAll(async () => {
    mkdirSync(OUT_DIR, { recursive: true });
    const defaults = fontConfig(work, 'defaults', [FONT_DIRS.dejavu, FONT_DIRS.noto]);
    const liberation = fontConfig(work, 'liberation', [
      FONT_DIRS.dejavu,
      FONT_DIRS.noto,
      FONT_DIRS.liberation,
    ]);
    browsers = await Promise.all([
      launchChromium({ env: { FONTCONFIG_FILE: defaults } }),
      launchChromium({ env: { FONTCONFIG_FILE: liberation } }),
    ]);
    const pages = await Promise.all(browsers.map((browser) => browser.context.newPage()));
    for (const card of cards) {
      const svg = renderCard(card.content, card.options, card.images, AT);
      const file = join(work, `${card.name}.svg`);
      writeFileSync(file, svg);
      const rsvg = execFileSync(RSVG, [file], { env: { ...process.env, FONTCONFIG_FILE: liberation } });
      const shots = {
        'chromium-dejavu': await inChromium(pages[0] as Page, svg),
        'chromium-liberation': await inChromium(pages[1] as Page, svg),
        rsvg,
      };
      for (const [renderer, png] of Object.entries(shots)) {
        writeFileSync(join(OUT_DIR, `${card.name}.${renderer}.png`), png);
      }
      pictures.set(card.name, {
        'chromium-dejavu': decodePng(shots['chromium-dejavu']),
        'chromium-liberation': decodePng(shots['chromium-liberation']),
        rsvg: decodePng(rsvg),
      });
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all(browsers.map((browser) => browser.close()));
    rmSync(work, { recursive: true, force: true });
  });

  it.each(cards.map((card) => card.name))(
    '%s: every line of text starts and ends in the same place',
    (name) => {
      const card = cards.find((example) => example.name === name) as Example;
      const drawn = pictures.get(name);
      if (!drawn) throw new Error(`${name} was not drawn`);
      const root = parseCard(renderCard(card.content, card.options, card.images, AT));
      const width = Number(root.attributes.width);
      for (const picture of Object.values(drawn)) {
        expect([picture.width, picture.height]).toEqual([width, Number(root.attributes.height)]);
      }
      const lines = linesOf(root, width);
      expect(lines.length).toBeGreaterThanOrEqual(2);
      for (const line of lines) {
        const inks = renderers.map((renderer) => inkOf(drawn[renderer], line));
        const shown = `${name}, the line at y=${line.y}: ${JSON.stringify(Object.fromEntries(renderers.map((r, i) => [r, inks[i]])))}`;
        expect(
          inks.every((ink) => ink !== null),
          shown,
        ).toBe(true);
        const starts = inks.map((ink) => ink?.start ?? 0);
        const ends = inks.map((ink) => ink?.end ?? 0);
        expect(Math.max(...starts) - Math.min(...starts), shown).toBeLessThanOrEqual(START_TOLERANCE);
        expect(Math.max(...ends) - Math.min(...ends), shown).toBeLessThanOrEqual(END_TOLERANCE);
      }
    },
  );
});
