import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { DEMO_USERS } from '../../../src/demo/cast.js';
import { createLogger } from '../../../src/log.js';
import { type Chromium, chromiumAvailable, launchChromium } from '../../support/chromium.js';
import { eventually } from '../../support/eventually.js';
import { answerImagesOffline } from '../../support/offline-images.js';

/**
 * The landing page of a service in demo mode, in headless Chromium: it opens on the featured demo user,
 * live, and a KV write with the API key the log printed shows there as it happens. Skipped, with a notice,
 * where Debian's chromium is missing (except under REQUIRE_CHROMIUM=1, as in CI).
 */

const available = chromiumAvailable('demo page browser test');

describe.skipIf(!available)('the landing page in demo mode, in headless Chromium', () => {
  const lines: string[] = [];
  let app: App;
  let browser: Chromium;

  beforeAll(async () => {
    app = await startApp(
      loadConfig({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: '0', RATE_LIMIT_READ: '0' }),
      { logger: createLogger('info', false, { write: (line: string) => void lines.push(line) }) },
    );
    await eventually(() => expect(app.view.size).toBe(Object.keys(DEMO_USERS).length));
    browser = await launchChromium();
    // The preview of the element shows Nova's album art, from Spotify's host.
    await answerImagesOffline(browser.context);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('opens on Nova, live, and shows a KV write made with the printed key as it happens', async () => {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
    });

    await page.goto(`${app.url}/`);
    const presence = page.locator('#presence');
    await presence.getByText('KV keys').waitFor();
    expect(await presence.textContent()).toContain('Nova');
    expect(await presence.textContent()).toContain('location, mood, website');
    expect(await page.locator('#connection').getAttribute('data-state')).toBe('live');
    expect(page.url()).toBe(`${app.url}/`);

    // Live: the write comes over the page's socket, with no request of the page's own.
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    const key = /prs_[\w-]{43}/.exec(lines.find((line) => line.includes('API key of Nova')) ?? '')?.[0];
    const written = await fetch(`${app.url}/v1/users/@me/kv`, {
      method: 'PATCH',
      headers: { authorization: key ?? '', 'content-type': 'application/json' },
      body: JSON.stringify({ tried_it: 'yes' }),
    });
    expect(written.status).toBe(204);
    await presence.getByText('tried_it').waitFor();
    expect(requested.filter((url) => url.includes('/v1/users/') && !url.includes('/card.'))).toEqual([]);
    expect(await page.locator('#connection').getAttribute('data-state')).toBe('live');
    expect(problems).toEqual([]);
    await page.close();
  });
});
