/**
 * `npm run embed:screenshots`: docs/embed.md's pictures of `<presently-presence>`, made by the real service.
 * Starts Presently in demo mode, lets the demo play a while, opens the element in headless Chromium (the
 * iframe page for the full card, light and dark; a page of compact rows and badges) and writes
 * docs/embed/light.png, dark.png and compact.png.
 *
 * Needs Debian's chromium (/usr/bin/chromium); fonts-noto-color-emoji draws the emoji. Offline, album art
 * from Spotify cannot be fetched and the element shows its placeholder, as it would for anyone.
 */
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import pino from 'pino';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { DEMO_USERS } from '../src/demo/cast.js';
import { CHROMIUM_PATH, hasChromium, launchChromium } from '../test/support/chromium.js';

const OUT_DIR = new URL('../docs/embed/', import.meta.url).pathname;
/** Pictures at twice their size in CSS pixels, for high-density screens. */
const SCALE = 2;
/** Let the demo's first track play a while, so the progress bar has something to show. */
const SETTLE_MS = 12_000;
const ROW_USERS = [DEMO_USERS.nova, DEMO_USERS.kai, DEMO_USERS.mira, DEMO_USERS.theo];

interface ShownRoot {
  querySelector(selector: string): unknown;
  querySelectorAll(selector: string): ArrayLike<{ complete: boolean }>;
}
declare const document: {
  querySelectorAll(selector: string): ArrayLike<{ shadowRoot: ShownRoot | null }>;
};

/** True once every element on the page shows a presence (no message) with its images settled. */
function allShown(): boolean {
  const roots = Array.from(document.querySelectorAll('presently-presence'), (element) => element.shadowRoot);
  return (
    roots.length > 0 &&
    roots.every(
      (root) =>
        root !== null &&
        root.querySelector('.avatar') !== null &&
        root.querySelector('.message') === null &&
        Array.from(root.querySelectorAll('img')).every((image) => image.complete),
    )
  );
}

/**
 * The compact rows and badges, on a page of another origin as a site would have them. Served from loopback,
 * as the service is: a page the browser makes up itself counts as public, and may not load the demo's
 * avatars from a loopback CDN.
 */
async function serveRowsPage(apiUrl: string): Promise<{ url: string; close(): void }> {
  const element = (id: string, layout: string) =>
    `<presently-presence user="${id}" layout="${layout}"></presently-presence>`;
  const body = [
    `<!doctype html><meta charset="utf-8"><script src="${apiUrl}/embed.js" defer></script>`,
    '<body style="margin:0"><div id="shot" style="display:grid;gap:8px;padding:8px;width:440px">',
    ...ROW_USERS.map((user) => element(user.id, 'compact')),
    `<div style="display:flex;flex-wrap:wrap;gap:6px">${ROW_USERS.map((user) => element(user.id, 'badge')).join('')}</div>`,
    '</div>',
  ].join('\n');
  const server = createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, close: () => server.close() };
}

async function main(): Promise<void> {
  if (!hasChromium()) {
    throw new Error(`${CHROMIUM_PATH} is missing: apt-get install chromium fonts-noto-color-emoji`);
  }
  const app = await startApp(
    loadConfig({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn' }),
    { logger: pino({ level: 'warn' }) },
  );
  const browser = await launchChromium({ deviceScaleFactor: SCALE });
  try {
    process.stdout.write(`demo running at ${app.url}; letting it play for ${SETTLE_MS / 1000} s\n`);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    mkdirSync(OUT_DIR, { recursive: true });
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 520, height: 600 });

    const cards = [
      { file: 'light.png', user: DEMO_USERS.nova.id, query: 'theme=light&fields=mood,location' },
      { file: 'dark.png', user: DEMO_USERS.mira.id, query: 'theme=dark' },
    ];
    for (const { file, user, query } of cards) {
      await page.goto(`${app.url}/v1/users/${user}/embed?${query}`);
      await page.waitForFunction(allShown);
      const path = join(OUT_DIR, file);
      await page.locator('presently-presence .card').screenshot({ path, omitBackground: true });
      process.stdout.write(`${path}\n`);
    }

    const rows = await serveRowsPage(app.url);
    await page.goto(rows.url);
    await page.waitForFunction(allShown);
    rows.close();
    const path = join(OUT_DIR, 'compact.png');
    await page.locator('#shot').screenshot({ path, omitBackground: true });
    process.stdout.write(`${path}\n`);
  } finally {
    await browser.close();
    await app.close();
  }
}

await main();
