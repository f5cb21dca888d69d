/**
 * `npm run page:screenshot`: the README's pictures of the landing page's live viewer, made by the real
 * service. Starts Presently in demo mode, opens the page in headless Chromium on a demo user, waits for
 * the presence to arrive over the socket and the card to load, and writes the viewer, light and dark, to
 * docs/page/.
 *
 * Needs Debian's chromium (/usr/bin/chromium); fonts-noto-color-emoji draws the emoji.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { DEMO_USERS } from '../src/demo/cast.js';
import { CHROMIUM_PATH, hasChromium, launchChromium } from '../test/support/chromium.js';

const OUT_DIR = new URL('../docs/page/', import.meta.url).pathname;
const VIEWPORT = { width: 1000, height: 1400 };
/** Let the demo's first track play a while, so the card's progress bar has something to show. */
const SETTLE_MS = 12_000;
/** Space kept around the viewer in the picture. */
const MARGIN = 16;

declare const document: {
  getElementById(
    id: string,
  ): { complete?: boolean; naturalWidth?: number; textContent: string | null } | null;
};

async function main(): Promise<void> {
  if (!hasChromium()) {
    throw new Error(`${CHROMIUM_PATH} is missing: apt-get install chromium fonts-noto-color-emoji`);
  }
  const app = await startApp(
    loadConfig({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn' }),
    { logger: pino({ level: 'warn' }) },
  );
  const browser = await launchChromium();
  try {
    process.stdout.write(`demo running at ${app.url}; letting it play for ${SETTLE_MS / 1000} s\n`);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    mkdirSync(OUT_DIR, { recursive: true });
    const page = await browser.context.newPage();
    await page.setViewportSize(VIEWPORT);
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      await page.goto(`${app.url}/?id=${DEMO_USERS.nova.id}`);
      await page.waitForFunction(() => document.getElementById('presence-status')?.textContent === 'Online');
      await page.waitForFunction(() => {
        const card = document.getElementById('card');
        return card?.complete === true && (card.naturalWidth ?? 0) > 0;
      });
      const top = await page.locator('#viewer-title').boundingBox();
      const bottom = await page.locator('.result').boundingBox();
      if (!top || !bottom) throw new Error('the viewer is not on the page');
      const path = join(OUT_DIR, `viewer-${colorScheme}.png`);
      await page.screenshot({
        path,
        clip: {
          x: bottom.x - MARGIN,
          y: top.y - MARGIN,
          width: bottom.width + 2 * MARGIN,
          height: bottom.y + bottom.height - top.y + 2 * MARGIN,
        },
      });
      process.stdout.write(`${path}\n`);
    }
  } finally {
    await browser.close();
    await app.close();
  }
}

await main();
