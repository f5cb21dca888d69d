/**
 * `npm run card:examples`: the README's example cards, made by the real service. Starts Presently in demo
 * mode (the built-in simulated Discord), fetches cards of the demo users over HTTP, has headless Chromium
 * draw each as an <img> the way a README shows it, and writes the screenshots to docs/cards/. The track
 * cards need plays of days past, which a demo that just started has not seen: Nova's are written into its
 * store before it starts.
 *
 * Needs Debian's chromium (/usr/bin/chromium); fonts-noto-color-emoji draws the emoji. Offline, album art
 * from Spotify cannot be fetched and the card shows its placeholder, as it would for anyone.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { DEMO_USERS } from '../src/demo/cast.js';
import { HISTORY_LIMIT, TRACKED_TRACKS_PER_USER } from '../src/model/history.js';
import type { MusicSource } from '../src/presence/model.js';
import type { HistoryWrite } from '../src/store/ports.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import {
  CARD_IMAGE_ID,
  CHROMIUM_PATH,
  hasChromium,
  launchChromium,
  showAsImage,
} from '../test/support/chromium.js';

const OUT_DIR = new URL('../docs/cards/', import.meta.url).pathname;
/** Screenshots at twice the card's size, for high-density screens. */
const SCALE = 2;
/** Let the demo's first track play a while, so the progress bar has something to show. */
const SETTLE_MS = 12_000;

const EXAMPLES = [
  { file: 'spotify-dark.png', path: `${DEMO_USERS.nova.id}/card.svg` },
  { file: 'game-light.png', path: `${DEMO_USERS.mira.id}/card.svg?theme=light` },
  {
    file: 'idle-custom.png',
    path: `${DEMO_USERS.kai.id}/card.svg?hideMusic=true&bg=0d1117&borderRadius=20&idleMessage=${encodeURIComponent('Heads down, shipping')}`,
  },
  { file: 'recent-dark.png', path: `${DEMO_USERS.nova.id}/recent.svg` },
  { file: 'top-light.png', path: `${DEMO_USERS.nova.id}/top.svg?theme=light&period=30d` },
] as const;

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * Nova's plays before the demo starts, oldest first: the tracks of the demo's players (Spotify's with the
 * demo's track ids, so that the play Nova starts with counts with them), each played `plays` times over
 * the past weeks, the last `ago` ms before the start.
 */
const PAST_PLAYS: {
  song: string;
  trackId: string;
  artist: string;
  album: string;
  source: MusicSource;
  plays: number;
  ago: number;
}[] = [
  {
    song: 'Breathe (In the Air)',
    trackId: '2ctvdKmETyOzPb2GiJJT53',
    artist: 'Pink Floyd',
    album: 'The Dark Side of the Moon',
    source: 'spotify',
    plays: 2,
    ago: 3 * DAY,
  },
  {
    song: 'Strobe',
    trackId: 'strobe',
    artist: 'deadmau5',
    album: 'For Lack of a Better Name',
    source: 'apple_music',
    plays: 3,
    ago: 2 * DAY,
  },
  {
    song: 'Resonance',
    trackId: 'resonance',
    artist: 'HOME',
    album: 'Odyssey',
    source: 'youtube_music',
    plays: 4,
    ago: DAY,
  },
  {
    song: 'Midnight City',
    trackId: '1eyzqe2QqGZUmfcPZtrIyt',
    artist: 'M83',
    album: "Hurry Up, We're Dreaming",
    source: 'spotify',
    plays: 9,
    ago: 5 * 60 * MINUTE,
  },
  {
    song: 'Everything In Its Right Place',
    trackId: 'everything-in-its-right-place',
    artist: 'Radiohead',
    album: 'Kid A',
    source: 'apple_music',
    plays: 2,
    ago: 2 * 60 * MINUTE,
  },
  {
    song: 'Digital Love',
    trackId: '2VEZx7NWsZ1D0eJ4uv5Fym',
    artist: 'Daft Punk',
    album: 'Discovery',
    source: 'spotify',
    plays: 5,
    ago: 50 * MINUTE,
  },
  {
    song: 'Nightcall',
    trackId: 'nightcall',
    artist: 'Kavinsky',
    album: 'OutRun',
    source: 'youtube_music',
    plays: 7,
    ago: 20 * MINUTE,
  },
  {
    song: 'Teardrop',
    trackId: 'teardrop',
    artist: 'Massive Attack',
    album: 'Mezzanine',
    source: 'apple_music',
    plays: 6,
    ago: 8 * MINUTE,
  },
];

/** PAST_PLAYS as the recorder would have written them, each track's plays a day or so apart. */
function pastPlays(now: number): HistoryWrite[] {
  const writes: HistoryWrite[] = [];
  for (const { plays, ago, trackId, ...track } of PAST_PLAYS) {
    for (let n = plays - 1; n >= 0; n--) {
      const ts = now - ago - n * 1.3 * DAY;
      writes.push({
        userId: DEMO_USERS.nova.id,
        status: null,
        track: {
          ...track,
          album_art_url: null,
          track_id: trackId,
          track_url: null,
          timestamps: { start: ts, end: ts + 4 * MINUTE },
          duration_ms: 4 * MINUTE,
          ts,
        },
        countsPlay: true,
        lastSeen: null,
      });
    }
  }
  // In time order: the history reads newest written first.
  return writes.sort((a, b) => (a.track?.ts ?? 0) - (b.track?.ts ?? 0));
}

async function main(): Promise<void> {
  if (!hasChromium()) {
    throw new Error(`${CHROMIUM_PATH} is missing: apt-get install chromium fonts-noto-color-emoji`);
  }
  const logger = pino({ level: 'warn' });
  const dir = mkdtempSync(join(tmpdir(), 'presently-card-examples-'));
  const path = join(dir, 'presently.db');
  const seeded = openSqliteStore({ kind: 'sqlite', path });
  await seeded.history.appendHistory(pastPlays(Date.now()), {
    history: HISTORY_LIMIT,
    trackedTracks: TRACKED_TRACKS_PER_USER,
  });
  await seeded.close();
  const app = await startApp(
    loadConfig({ DATABASE_URL: `sqlite:${path}`, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn' }),
    { logger },
  );
  const browser = await launchChromium({ deviceScaleFactor: SCALE });
  try {
    process.stdout.write(`demo running at ${app.url}; letting it play for ${SETTLE_MS / 1000} s\n`);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    mkdirSync(OUT_DIR, { recursive: true });
    const page = await browser.context.newPage();
    for (const example of EXAMPLES) {
      const url = `${app.url}/v1/users/${example.path}`;
      const size = await showAsImage(page, url);
      const path = join(OUT_DIR, example.file);
      // Transparent around the rounded corners, as on a README.
      await page.locator(`#${CARD_IMAGE_ID}`).screenshot({ path, omitBackground: true });
      process.stdout.write(`${path}: ${size.width}×${size.height} card\n`);
    }
  } finally {
    await browser.close();
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
