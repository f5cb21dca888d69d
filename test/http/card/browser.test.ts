import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardContent } from '../../../src/card/content.js';
import { CARD_WIDTH } from '../../../src/card/layout.js';
import { DEFAULT_CARD_OPTIONS } from '../../../src/card/options.js';
import { renderCard } from '../../../src/card/status-card.js';
import {
  customStatusActivity,
  gameActivity,
  spotifyLocalFileActivity,
} from '../../../src/simulator/activities.js';
import { colourFor } from '../../../src/simulator/png.js';
import { CDN, fuzzText, presenceOf, random } from '../../card/support.js';
import {
  CARD_IMAGE_ID,
  type Chromium,
  chromiumAvailable,
  launchChromium,
  type PageDocument,
  pixelsOf,
  showAsImage,
} from '../../support/chromium.js';
import { eventually } from '../../support/eventually.js';
import { type Harness, startHarness } from '../../support/harness.js';

/**
 * Cards as a browser draws them: headless Chromium loads them as <img> (as a README does), draws them,
 * and parses them with its own XML parser. Skipped, with a notice, where Debian's chromium is missing
 * (except under REQUIRE_CHROMIUM, as in CI).
 */

declare const document: PageDocument;
/** An SVG document's animation timeline (SVGSVGElement). */
interface SmilTimeline {
  pauseAnimations(): void;
  setCurrentTime(seconds: number): void;
  getCurrentTime(): number;
}
declare const DOMParser: new () => { parseFromString(text: string, type: string): PageDocument };

const available = chromiumAvailable('card browser tests');

const GUILD = '400000000000000002';
const NOVA = {
  id: '94490510688792576',
  username: 'nova',
  global_name: 'Nova',
  avatar: '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b',
};
const KAI = { id: '218486934151479296', username: 'kai.dev', global_name: '<Kai & "friends">', avatar: null };
const APP = '512035578624524288';
const ASSET = '512036254624989184';
const DEVICE_SCALE = 2;

describe.skipIf(!available)('cards in headless Chromium', () => {
  let harness: Harness;
  let browser: Chromium;
  let page: Page;

  beforeAll(async () => {
    const now = Date.now();
    harness = await startHarness({
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Browser',
          members: [
            {
              user: NOVA,
              presence: {
                status: 'online',
                activities: [
                  customStatusActivity({ text: 'shipping 🚀' }),
                  gameActivity({
                    name: 'Celeste',
                    applicationId: APP,
                    largeImage: ASSET,
                    start: now - 60_000,
                  }),
                ],
              },
            },
            {
              user: KAI,
              presence: {
                status: 'idle',
                activities: [
                  spotifyLocalFileActivity({ song: 'Tape', start: now - 5_000, end: now + 60_000 }),
                ],
              },
            },
          ],
        }),
    });
    await eventually(() => {
      expect(harness.app.registry.get(NOVA.id)).toBeDefined();
      expect(harness.app.registry.get(KAI.id)).toBeDefined();
    });
    browser = await launchChromium({ deviceScaleFactor: DEVICE_SCALE });
    page = await browser.context.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  it('draws a card as an image, with the inlined avatar and activity image loaded', async () => {
    // The avatar's centre and the activity image's centre.
    const card = await showAsImage(page, `${harness.base}/v1/users/${NOVA.id}/card.svg`);
    expect(card).toEqual({ width: CARD_WIDTH, height: 232 });
    // The simulator's CDN answers each hash with one solid colour: seeing it proves the image loaded.
    expect(
      await pixelsOf(page, [
        [60, 60],
        [60, 170],
      ]),
    ).toEqual([[...colourFor(NOVA.avatar)], [...colourFor(`${APP}/${ASSET}`)]]);

    const screenshot = await page.locator(`#${CARD_IMAGE_ID}`).screenshot();
    expect(screenshot.readUInt32BE(16)).toBe(CARD_WIDTH * DEVICE_SCALE);
    expect(screenshot.readUInt32BE(20)).toBe(232 * DEVICE_SCALE);
  });

  it('draws a card opened on its own, every <image> a decoded data: URI', async () => {
    const response = await page.goto(`${harness.base}/v1/users/${NOVA.id}/card.svg`);
    expect(response?.headers()['content-type']).toBe('image/svg+xml; charset=utf-8');
    const found = await page.evaluate(() =>
      Array.from(document.querySelectorAll('image'), (image) => ({
        href: image.href.baseVal.slice(0, 22),
        width: image.getBBox().width,
      })),
    );
    expect(found).toEqual([
      { href: 'data:image/png;base64,', width: 80 },
      { href: 'data:image/png;base64,', width: 72 },
    ]);
    expect(await page.evaluate(() => document.querySelector('parsererror'))).toBeNull();
    const screenshot = await page.screenshot();
    expect(screenshot.length).toBeGreaterThan(1000);
  });

  it('moves the progress bar while the card is shown', async () => {
    await page.goto(`${harness.base}/v1/users/${KAI.id}/card.svg`);
    // The bar is a SMIL animation: its document's timeline is paused and set, as fake timers set a clock.
    const fillWidthAt = (seconds: number | null) =>
      page.evaluate((at) => {
        const svg = (document as unknown as { documentElement: SmilTimeline }).documentElement;
        svg.pauseAnimations();
        if (at !== null) svg.setCurrentTime(at);
        const bars = Array.from(document.querySelectorAll('rect')).filter(
          (r) => r.height.baseVal.value === 4,
        );
        return { width: bars[1]?.width.animVal.value ?? 0, at: svg.getCurrentTime() };
      }, seconds);
    const before = await fillWidthAt(null);
    expect((await fillWidthAt(before.at + 1.5)).width).toBeGreaterThan(before.width);
  });

  it("Chromium's XML parser accepts fuzzed cards, and draws the user's name as text", async () => {
    const next = random(7);
    const cards: { svg: string; name: string }[] = [];
    for (let i = 0; i < 60; i++) {
      const name = fuzzText(next);
      const presence = presenceOf({
        user: { global_name: name, username: fuzzText(next, 3) },
        activities: [
          customStatusActivity({ text: fuzzText(next) }),
          gameActivity({
            name: fuzzText(next),
            applicationId: APP,
            details: fuzzText(next),
            start: Date.now(),
          }),
        ],
      });
      const options = { ...DEFAULT_CARD_OPTIONS, idleMessage: fuzzText(next) };
      const content = cardContent(presence, options, CDN);
      const svg = renderCard(
        content,
        options,
        { avatar: null, emoji: null, art: null, badge: null, decoration: null },
        Date.now(),
      );
      cards.push({ svg, name: content.displayName });
    }
    const problems = await page.evaluate((list) => {
      const found: string[] = [];
      list.forEach(({ svg }, i) => {
        const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
        const error = doc.querySelector('parsererror');
        if (error) found.push(`card ${i}: ${error.textContent}`);
        if (doc.querySelector('script, foreignObject')) found.push(`card ${i}: markup from user text`);
      });
      return found;
    }, cards);
    expect(problems).toEqual([]);
  });

  it('the card of a name with markup in it loads, and shows the markup as text', async () => {
    await page.goto(`${harness.base}/v1/users/${KAI.id}/card.svg`);
    const name = await page.evaluate(() => document.querySelector('.name')?.textContent ?? '');
    expect(name.replace(/[\u2068\u2069]/g, '')).toBe('<Kai & "friends">');
    const card = await showAsImage(page, `${harness.base}/v1/users/${KAI.id}/card.svg?theme=light`);
    expect(card.width).toBe(CARD_WIDTH);
  });
});
