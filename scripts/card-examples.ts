/**
 * `npm run card:examples`: the README's example cards, made by the real service. Starts Presently in demo
 * mode (the built-in simulated Discord), fetches cards of the demo users over HTTP, has headless Chromium
 * draw each as an <img> the way a README shows it, and writes the screenshots to docs/cards/.
 *
 * Needs Debian's chromium (/usr/bin/chromium); fonts-noto-color-emoji draws the emoji. Offline, album art
 * from Spotify cannot be fetched and the card shows its placeholder, as it would for anyone.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { DEMO_USERS } from '../src/demo/cast.js';
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
  { file: 'spotify-dark.png', user: DEMO_USERS.nova.id, query: '' },
  { file: 'game-light.png', user: DEMO_USERS.mira.id, query: '?theme=light' },
  {
    file: 'idle-custom.png',
    user: DEMO_USERS.kai.id,
    query: `?hideMusic=true&bg=0d1117&borderRadius=20&idleMessage=${encodeURIComponent('Heads down, shipping')}`,
  },
] as const;

async function main(): Promise<void> {
  if (!hasChromium()) {
    throw new Error(`${CHROMIUM_PATH} is missing: apt-get install chromium fonts-noto-color-emoji`);
  }
  const logger = pino({ level: 'warn' });
  const app = await startApp(
    loadConfig({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn' }),
    { logger },
  );
  const browser = await launchChromium({ deviceScaleFactor: SCALE });
  try {
    process.stdout.write(`demo running at ${app.url}; letting it play for ${SETTLE_MS / 1000} s\n`);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    mkdirSync(OUT_DIR, { recursive: true });
    const page = await browser.context.newPage();
    for (const example of EXAMPLES) {
      const url = `${app.url}/v1/users/${example.user}/card.svg${example.query}`;
      const size = await showAsImage(page, url);
      const path = join(OUT_DIR, example.file);
      // Transparent around the rounded corners, as on a README.
      await page.locator(`#${CARD_IMAGE_ID}`).screenshot({ path, omitBackground: true });
      process.stdout.write(`${path}: ${size.width}×${size.height} card\n`);
    }
  } finally {
    await browser.close();
    await app.close();
  }
}

await main();
