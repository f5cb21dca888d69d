import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { ALICE, bump, fixtureReady, seed } from '../socket/fixture.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH, chromiumAvailable } from '../support/chromium.js';
import { type ClientPage, openClientPage } from '../support/client-page.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { freePort } from '../support/node-process.js';
import {
  binariesAvailable,
  httpsGet,
  type ReverseProxy,
  startCaddy,
  startNginx,
} from '../support/reverse-proxies.js';

/**
 * A browser's EventSource behind nginx or Caddy from deploy/, on a page of another origin, while the
 * service restarts: the proxy cannot reach the service for a while, and what it says then must leave
 * EventSource reconnecting. EventSource gives up for good on any answer but a 200 stream (a 502 without
 * CORS headers above all), and tries again after a network error.
 */

/** How soon the browser reconnects once a stream ends or a connection fails (`retry:`). */
const RETRY_MS = 200;
/** EventSource's readyState once it has given up. */
const CLOSED = 2;

/** What the page's script puts on `window`, and what the tests read from it. */
interface PageWindow {
  EventSource: new (
    url: string,
  ) => {
    readyState: number;
    onopen: (() => void) | null;
    onerror: (() => void) | null;
    addEventListener(type: string, listener: (event: { data: string }) => void): void;
    close(): void;
  };
  texts: (string | null)[];
  /** The readyState at each error: 0 (CONNECTING) while it will try again, 2 (CLOSED) once it gave up. */
  errors: number[];
  opens: number;
  source: { close(): void };
}
declare const window: PageWindow;

const PROXIES = [
  { name: 'nginx', start: startNginx, binaries: ['nginx', 'openssl'] },
  { name: 'caddy', start: startCaddy, binaries: ['caddy'] },
];

describe.each(PROXIES)('an EventSource behind $name', ({ name, start, binaries }) => {
  const available =
    binariesAvailable(`event stream behind ${name}`, binaries, binaries.join(' ')) &&
    chromiumAvailable(`event stream behind ${name}`);
  let simulator: DiscordSimulator;
  let port: number;
  let h: Harness | undefined;
  let proxy: ReverseProxy;
  let browser: Browser;
  let client: ClientPage;
  let page: Page;

  /** The service on `port`, following the one simulated Discord across restarts. */
  const startService = async (): Promise<Harness> => {
    const service = await startHarness({
      discord: simulator,
      env: { PORT: String(port), TRUST_PROXY: '127.0.0.1' },
      sse: { retryMs: RETRY_MS },
    });
    // Started again, it lists the guild only after Discord's 30 s between listings; the users it needs
    // come with the guild itself.
    await fixtureReady(service, { listed: false });
    return service;
  };

  beforeAll(async () => {
    if (!available) return;
    simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    await simulator.start();
    seed(simulator);
    port = await freePort();
    h = await startService();
    proxy = await start(port);
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
    // The proxy's certificate is the test's own (nginx) or Caddy's local authority's.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    client = await openClientPage(context);
    page = client.page;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    client?.close();
    await proxy?.stop();
    await h?.close();
    await simulator?.stop();
  });

  const texts = () => page.evaluate(() => window.texts);
  const errors = () => page.evaluate(() => window.errors);

  it.runIf(available)('reconnects by itself when the service restarts', async () => {
    await page.evaluate(
      ({ url }) => {
        window.texts = [];
        window.errors = [];
        window.opens = 0;
        const source = new window.EventSource(url);
        source.onopen = () => window.opens++;
        source.onerror = () => window.errors.push(source.readyState);
        source.addEventListener('presence', (event) =>
          window.texts.push(JSON.parse(event.data).custom_status?.text ?? null),
        );
        window.source = source;
      },
      // The stream of several ids, which waits for an id not monitored yet: a user's own stream is answered
      // 404 in the moment after a start before the gateway has listed its members, and EventSource gives up.
      { url: `https://[::1]:${proxy.httpsPort}/v1/events?ids=${ALICE}` },
    );
    await eventually(async () => expect(await texts()).toHaveLength(1));

    await h?.close();
    h = undefined;
    // The stream ended, then at least one try went to the proxy while nothing listened behind it.
    await eventually(async () => expect((await errors()).length).toBeGreaterThanOrEqual(2), 10_000);
    expect(await errors(), `${name} made EventSource give up:\n${proxy.output()}`).not.toContain(CLOSED);
    // A read is still told that the gateway is bad.
    expect((await httpsGet(proxy.httpsPort, `/v1/users/${ALICE}`, proxy.ca)).status).toBe(502);

    h = await startService();
    const text = bump(h, ALICE);
    await eventually(async () => expect(await texts()).toContain(text), 15_000);
    expect(await page.evaluate(() => window.opens)).toBeGreaterThanOrEqual(2);
    expect(await errors()).not.toContain(CLOSED);
    await page.evaluate(() => window.source.close());
  });
});
