import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, bump, fixtureReady, NOBODY, seed } from '../socket/fixture.js';
import { type Chromium, chromiumAvailable, launchChromium } from '../support/chromium.js';
import { type ClientPage, openClientPage } from '../support/client-page.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * `presently/client` in a browser: headless Chromium loads the client's modules (compiled from
 * src/client as `npm run build` would, served by a page server of their own on loopback, so the API is
 * another origin, as on a real site) and uses them with the browser's own fetch, WebSocket and
 * DecompressionStream. Skipped, with a notice, where Debian's chromium is missing (except under
 * REQUIRE_CHROMIUM=1, as in CI).
 */

const available = chromiumAvailable('client browser tests');

/** What the browser logs for the 404 the error test asks for: expected, not a problem. */
const EXPECTED_404 = 'the server responded with a status of 404';

/** What the page's script puts on `window`, and what the tests read from it. */
interface PageWindow {
  presently: typeof import('../../src/client/index.js');
  updates: string[];
  socket: import('../../src/client/index.js').PresentlySocket;
}
declare const window: PageWindow;

describe.skipIf(!available)('PresentlyClient in headless Chromium', () => {
  let h: Harness;
  let browser: Chromium;
  let client: ClientPage;
  let page: Page;

  beforeAll(async () => {
    h = await startHarness({ setup: seed });
    await fixtureReady(h);
    browser = await launchChromium();
    client = await openClientPage(browser.context, EXPECTED_404);
    page = client.page;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    client?.close();
    await h?.close();
  });

  it('reads a presence and throws the typed error, with the browser fetch', async () => {
    const result = await page.evaluate(
      async ({ base, id, nobody }) => {
        const api = new window.presently.PresentlyClient({ baseUrl: base });
        const presence = await api.presence(id);
        const failure = await api.presence(nobody).catch((error: unknown) => error);
        const error = failure as InstanceType<typeof window.presently.PresentlyError>;
        return {
          id: presence.discord_user.id,
          error: {
            isTyped: failure instanceof window.presently.PresentlyError,
            code: error.code,
            status: error.status,
          },
        };
      },
      { base: h.base, id: ALICE, nobody: NOBODY },
    );
    expect(result).toEqual({ id: ALICE, error: { isTyped: true, code: 'user_not_monitored', status: 404 } });
  });

  it("receives INIT_STATE and a live update over zlib_json with the browser's WebSocket", async () => {
    const init = await page.evaluate(
      async ({ base, id }) => {
        const api = new window.presently.PresentlyClient({ baseUrl: base });
        window.updates = [];
        window.socket = api.socket({ subscribe: id, compression: 'zlib_json' });
        window.socket.on('update', (update) => window.updates.push(update.custom_status?.text ?? ''));
        const presences = await new Promise<Record<string, unknown>>((resolve) =>
          window.socket.on('init', resolve),
        );
        return Object.keys(presences);
      },
      { base: h.base, id: ALICE },
    );
    expect(init).toEqual([ALICE]);
    const text = bump(h, ALICE);
    await eventually(async () => expect(await page.evaluate(() => window.updates)).toContain(text));
    await page.evaluate(() => window.socket.close());
    expect(client.problems).toEqual([]);
  });
});
