import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARD_WIDTH } from '../../../src/card/layout.js';
import type { TrackEntry } from '../../../src/model/history.js';
import type { MusicSource } from '../../../src/presence/model.js';
import { richPresenceActivity } from '../../../src/simulator/activities.js';
import { colourFor } from '../../../src/simulator/png.js';
import type { HistoryWrite } from '../../../src/store/ports.js';
import {
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
 * The track cards as a browser draws them: headless Chromium loads them as <img>, as a README does, and
 * opened on their own. Skipped, with a notice, where Debian's chromium is missing (except under
 * REQUIRE_CHROMIUM, as in CI).
 */

declare const document: PageDocument;
declare const getComputedStyle: (element: unknown) => { animationName: string };

const available = chromiumAvailable('track card browser tests');

const GUILD = '400000000000000041';
const NOVA = { id: '94490510688792576', username: 'nova', global_name: 'Nova', avatar: null };
/** An Apple Music player (DEFAULT_MUSIC_APPS), and the application whose assets serve as album art. */
const CIDER = '1020414178047041627';
const ART_APP = '512035578624524288';
const FIRST_ART = '900000000000000011';
const SECOND_ART = '900000000000000012';
const HOUR = 3_600_000;
/** The cards' layout, as drawn: the header, then a row per track, then a margin. */
const HEADER = 68;
const ROW = 56;
const BOTTOM = 10;

describe.skipIf(!available)('track cards in headless Chromium', () => {
  let harness: Harness;
  let browser: Chromium;
  let page: Page;

  const play = (song: string, source: MusicSource, ts: number, asset: string | null): HistoryWrite => {
    const track: TrackEntry = {
      source,
      song,
      artist: 'Artist',
      album: 'Album',
      album_art_url: asset === null ? null : `${harness.simulator.cdnUrl}/app-assets/${ART_APP}/${asset}.png`,
      track_id: song,
      track_url: null,
      timestamps: { start: ts, end: ts + 180_000 },
      duration_ms: 180_000,
      ts,
    };
    return { userId: NOVA.id, status: null, track, countsPlay: true, lastSeen: null };
  };

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
                  richPresenceActivity({
                    type: 2,
                    name: 'Cider',
                    applicationId: CIDER,
                    details: 'Now',
                    state: 'Artist',
                    largeImage: FIRST_ART,
                    start: now - 10_000,
                    end: now + 600_000,
                  }),
                ],
              },
            },
          ],
        }),
    });
    await eventually(() => expect(harness.app.view.get(NOVA.id)).toBeDefined());
    await harness.app.store.history.appendHistory(
      [
        play('Before', 'spotify', now - 3 * HOUR, SECOND_ART),
        play('Before', 'spotify', now - 2 * HOUR, SECOND_ART),
        play('Untitled art', 'youtube_music', now - HOUR, null),
      ],
      { history: 100, trackedTracks: 1000 },
    );
    // The play now, as the recorder writes it.
    await eventually(async () => {
      const { data } = (await (await fetch(`${harness.base}/v1/users/${NOVA.id}/recent`)).json()) as {
        data: { recent_tracks: TrackEntry[] };
      };
      expect(data.recent_tracks.map((track) => track.song)).toEqual([
        'Now',
        'Untitled art',
        'Before',
        'Before',
      ]);
    });
    browser = await launchChromium();
    page = await browser.context.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  const url = (path: string) => `${harness.base}/v1/users/${NOVA.id}/${path}`;

  it('draws recent.svg as an image of its size, the album art decoded where the rows put it', async () => {
    const size = await showAsImage(page, url('recent.svg'));
    expect(size).toEqual({ width: CARD_WIDTH, height: HEADER + 4 * ROW + BOTTOM });
    // The centres of the first row's art (the play now, the player's own asset) and the last one's.
    const centre = (row: number): [number, number] => [20 + 22, HEADER + row * ROW + 28];
    expect(await pixelsOf(page, [centre(0), centre(3)])).toEqual([
      [...colourFor(`${CIDER}/${FIRST_ART}`)],
      [...colourFor(`${ART_APP}/${SECOND_ART}`)],
    ]);
  });

  it('draws top.svg as an image of its size, the ranked art decoded', async () => {
    const size = await showAsImage(page, url('top.svg'));
    expect(size).toEqual({ width: CARD_WIDTH, height: HEADER + ROW + BOTTOM });
    expect(await pixelsOf(page, [[20 + 24 + 22, HEADER + 28]])).toEqual([
      [...colourFor(`${ART_APP}/${SECOND_ART}`)],
    ]);
  });

  it('decodes the PNG cards at the size of the SVG ones', async () => {
    expect(await showAsImage(page, url('recent.png'))).toEqual({
      width: CARD_WIDTH,
      height: HEADER + 4 * ROW + BOTTOM,
    });
    expect(await showAsImage(page, url('top.png?period=7d'))).toEqual({
      width: CARD_WIDTH,
      height: HEADER + ROW + BOTTOM,
    });
  });

  it('draws the cards opened on their own: well-formed, every <image> a data: URI, the equalizer moving', async () => {
    for (const path of ['recent.svg', 'top.svg', 'recent.svg?theme=light&hideProfile']) {
      const response = await page.goto(url(path));
      expect(response?.headers()['content-type']).toBe('image/svg+xml; charset=utf-8');
      expect(await page.evaluate(() => document.querySelector('parsererror'))).toBeNull();
      const hrefs = await page.evaluate(() =>
        Array.from(document.querySelectorAll('image'), (image) => image.href.baseVal.slice(0, 22)),
      );
      expect(hrefs.length).toBeGreaterThan(0);
      for (const href of hrefs) expect(href).toBe('data:image/png;base64,');
    }
    await page.goto(url('recent.svg'));
    const animation = await page.evaluate(() => {
      const bar = document.querySelector('.eq rect');
      return bar === null ? null : getComputedStyle(bar).animationName;
    });
    expect(animation).toBe('eq');
  });
});
