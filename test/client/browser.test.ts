import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, bump, fixtureReady, NOBODY, seed } from '../socket/fixture.js';
import { CHROMIUM_PATH, type Chromium, hasChromium, launchChromium } from '../support/chromium.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * `presently/client` in a browser: headless Chromium loads the client's modules (compiled from
 * src/client as `npm run build` would, served by a page server of their own on loopback, so the API is
 * another origin, as on a real site) and uses them with the browser's own fetch, WebSocket and
 * DecompressionStream.
 */

const available = hasChromium();
if (!available) {
  console.warn(`client browser tests skipped: ${CHROMIUM_PATH} is missing (apt-get install chromium)`);
}

const CLIENT_DIR = new URL('../../src/client/', import.meta.url);
const PAGE = [
  '<!doctype html><script type="module">',
  "import * as presently from './index.js';",
  'window.presently = presently;',
  '</script>',
].join('\n');
/** What the browser logs for the 404 the error test asks for: expected, not a problem. */
const EXPECTED_404 = 'the server responded with a status of 404';

/** What the page's script puts on `window`, and what the tests read from it. */
interface PageWindow {
  presently: typeof import('../../src/client/index.js');
  updates: string[];
  socket: import('../../src/client/index.js').PresentlySocket;
}
declare const window: PageWindow;

async function compiled(file: string): Promise<string> {
  const source = await readFile(new URL(file.replace(/\.js$/, '.ts'), CLIENT_DIR), 'utf8');
  return ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
}

describe.skipIf(!available)('PresentlyClient in headless Chromium', () => {
  let h: Harness;
  let browser: Chromium;
  let page: Page;
  let pages: Server;
  const problems: string[] = [];

  beforeAll(async () => {
    h = await startHarness({ setup: seed });
    await fixtureReady(h);
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('console', (message) => {
      const text = message.text();
      if ((message.type() === 'error' || message.type() === 'warning') && !text.includes(EXPECTED_404)) {
        problems.push(text);
      }
    });
    page.on('pageerror', (error) => problems.push(error.message));
    pages = createServer((request, response) => {
      const file = (request.url ?? '').slice(1);
      const answer = (type: string, body: string) =>
        response.writeHead(200, { 'content-type': type }).end(body);
      if (file === 'page.html') return answer('text/html', PAGE);
      if (!/^[a-z-]+\.js$/.test(file)) return response.writeHead(404).end();
      compiled(file).then(
        (code) => answer('text/javascript', code),
        () => response.writeHead(500).end(),
      );
    });
    pages.listen(0, '127.0.0.1');
    await once(pages, 'listening');
    const { port } = pages.address() as { port: number };
    await page.goto(`http://127.0.0.1:${port}/page.html`);
    await page.waitForFunction(() => window.presently !== undefined);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    pages?.close();
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
    expect(problems).toEqual([]);
  });
});
