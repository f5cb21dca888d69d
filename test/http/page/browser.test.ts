import type { Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARD_WIDTH } from '../../../src/card/layout.js';
import { customStatusActivity, gameActivity } from '../../../src/simulator/activities.js';
import { type Chromium, chromiumAvailable, launchChromium } from '../../support/chromium.js';
import { eventually } from '../../support/eventually.js';
import { type Harness, startHarness } from '../../support/harness.js';

/**
 * The landing page as a person uses it: headless Chromium against the real service, driven by the
 * simulated Discord. The page runs under its own CSP; any violation, script error or failed request
 * fails the test. Skipped, with a notice, where Debian's chromium is missing (except under
 * REQUIRE_CHROMIUM=1, as in CI).
 */

const available = chromiumAvailable('landing page browser tests');

/** The page's script runs in the browser; these are the few things the test reads from it. */
interface PageImage {
  complete: boolean;
  naturalWidth: number;
  src: string;
}
declare const document: {
  getElementById(id: string): (PageImage & { textContent: string | null }) | null;
};
declare const navigator: { clipboard: { readText(): Promise<string> } };

const GUILD = '300000000000000020';
const ALICE = { id: '80351110224678912', username: 'alice', global_name: 'Alice' };
const BOB = { id: '155149108183695360', username: 'bob', global_name: '<b>Bob</b>' };
/** Shares no server with the bot. */
const STRANGER = '246834765493026816';
/** Short, so a page that does not heartbeat as the Hello says is closed (4007) within the test. */
const HEARTBEAT_MS = 500;
/** Stands for STALE_AFTER_DISCONNECT_MS. */
const STALE_AFTER_MS = 300;

describe.skipIf(!available)('the landing page in headless Chromium', () => {
  let harness: Harness;
  let browser: Chromium;

  beforeAll(async () => {
    harness = await startHarness({
      socket: { heartbeatIntervalMs: HEARTBEAT_MS },
      // A shard down this long makes its users stale (30 s in production).
      gateway: { staleAfterMs: STALE_AFTER_MS },
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Page',
          members: [
            {
              user: ALICE,
              presence: {
                status: 'online',
                activities: [
                  customStatusActivity({ text: 'writing tests' }),
                  gameActivity({ name: 'Celeste', applicationId: '512035578624524288', start: Date.now() }),
                ],
              },
            },
            { user: BOB, presence: { status: 'idle' } },
          ],
        }),
    });
    await eventually(() => {
      expect(harness.app.registry.get(ALICE.id)).toBeDefined();
      expect(harness.app.registry.get(BOB.id)).toBeDefined();
    });
    browser = await launchChromium();
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: harness.base });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  /** A new page, and what went wrong in it: console errors (CSP violations among them), script errors, failed or refused requests. */
  async function openPage(): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') {
        problems.push(`console ${message.type()}: ${message.text()}`);
      }
    });
    page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
    page.on('requestfailed', (request) => {
      // The preview's event stream, closed as it should be when the id shown changes or the page goes.
      const closed =
        request.url().includes('/v1/events?') && request.failure()?.errorText === 'net::ERR_ABORTED';
      if (!closed) problems.push(`failed: ${request.url()} ${request.failure()?.errorText}`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
    });
    return { page, problems };
  }

  /** Waits until the element `id` shows `text`: all of its text with `exact`, else somewhere in it. */
  async function shows(page: Page, id: string, text: string, exact = false, timeout = 5_000): Promise<void> {
    await page.waitForFunction(
      (expected) => {
        const shown = document.getElementById(expected.id)?.textContent ?? '';
        return expected.exact ? shown === expected.text : shown.includes(expected.text);
      },
      { id, text, exact },
      { timeout },
    );
  }

  const showsStatus = (page: Page, label: string, timeout?: number) =>
    shows(page, 'presence-status', label, true, timeout);

  /** Waits until the card shown is a loaded image of the card's width; returns its URL. */
  async function loadedCard(page: Page, timeout = 5_000): Promise<string> {
    const handle = await page.waitForFunction(
      (width) => {
        const card = document.getElementById('card');
        return card?.complete && card.naturalWidth === width ? card.src : false;
      },
      CARD_WIDTH,
      { timeout },
    );
    return (await handle.jsonValue()) as string;
  }

  /** The card's URL, with or without the `?v=` the page adds to load it again. */
  const cardAt = (url: string) => new RegExp(`^${url.replace(/[.?]/g, '\\$&')}(\\?v=\\d+)?$`);
  /** Which time the page loaded the card: 0 at first, then one more for each presence it was sent. */
  const cardRevision = (url: string, loaded: string) => {
    expect(loaded).toMatch(cardAt(url));
    return Number(loaded.slice(url.length + '?v='.length) || 0);
  };

  it('shows the presence of the id typed in, live: a change shows as it happens, the card follows', async () => {
    const { page, problems } = await openPage();
    const opened: string[] = [];
    /** Heartbeats (op 3) the page sent on its first socket. */
    let heartbeats = 0;
    page.on('websocket', (socket) => {
      opened.push(socket.url());
      if (opened.length === 1) {
        socket.on('framesent', (frame) => {
          if (frame.payload === '{"op":3}') heartbeats++;
        });
      }
    });
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.goto(`${harness.base}/`);
    await expect(page.locator('h1').textContent()).resolves.toContain('Discord presence');

    await page.getByLabel('Discord user id').fill(ALICE.id);
    await page.keyboard.press('Enter');
    await showsStatus(page, 'Online');
    expect(page.url()).toBe(`${harness.base}/?id=${ALICE.id}`);
    const presence = await page.locator('#presence').textContent();
    expect(presence).toContain('Alice');
    expect(presence).toContain('writing tests');
    expect(presence).toContain('Playing Celeste');
    expect(await page.locator('#connection').getAttribute('data-state')).toBe('live');
    // The card shown at once, then again for the presence the socket brought (it may have changed since).
    const cardUrl = `${harness.base}/v1/users/${ALICE.id}/card.svg`;
    expect(await loadedCard(page)).toMatch(cardAt(cardUrl));
    let before = 0;
    await eventually(async () => {
      before = cardRevision(cardUrl, await loadedCard(page));
      expect(before).toBeGreaterThan(0);
    });

    const requestsBefore = requested.length;
    harness.simulator.setPresence(ALICE.id, {
      status: 'dnd',
      activities: [customStatusActivity({ text: 'heads down' })],
    });
    await showsStatus(page, 'Do not disturb');
    // It came over the socket: the page asked the API for nothing but the card since.
    const asked = requested.slice(requestsBefore).filter((url) => url.startsWith(`${harness.base}/v1/`));
    expect(asked.filter((url) => !cardAt(cardUrl).test(url))).toEqual([]);
    expect(await page.locator('#presence').textContent()).toContain('heads down');
    expect(await page.title()).toMatch(/^Alice · /);
    await eventually(async () =>
      expect(cardRevision(cardUrl, await loadedCard(page))).toBeGreaterThan(before),
    );

    // Four heartbeats later (the server closes a socket silent for two intervals) it is still the one
    // socket: the page heartbeats as Hello said.
    await eventually(() => expect(heartbeats).toBeGreaterThanOrEqual(4), 10 * HEARTBEAT_MS);
    expect(await page.locator('#connection').getAttribute('data-state')).toBe('live');
    expect(opened).toEqual([`${harness.base.replace('http', 'ws')}/socket`]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('fills the snippets in with the id and this origin, and copies them', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${harness.base}/?id=${BOB.id}`);
    await showsStatus(page, 'Idle');
    // The name is text, not markup.
    expect(await page.locator('#presence h3').textContent()).toBe('<b>Bob</b>');
    const snippets = page.locator('pre[id^="snippet-"]');
    expect(await snippets.count()).toBe(9);
    for (const text of await snippets.allTextContents()) {
      expect(text).toContain(BOB.id);
      expect(text).not.toContain('USER_ID');
    }
    expect(await page.locator('#snippet-card').textContent()).toBe(
      `![Discord presence](${harness.base}/v1/users/${BOB.id}/card.svg)`,
    );
    expect(await page.locator('#snippet-picture').textContent()).toBe(
      [
        '<picture>',
        `  <source media="(prefers-color-scheme: dark)" srcset="${harness.base}/v1/users/${BOB.id}/card.svg?theme=dark&bg=0d1117">`,
        `  <img alt="Discord presence" src="${harness.base}/v1/users/${BOB.id}/card.svg?theme=light">`,
        '</picture>',
      ].join('\n'),
    );
    expect(await page.locator('#snippet-embed').textContent()).toBe(
      [
        `<script src="${harness.base}/embed.js" defer></script>`,
        `<presently-presence user="${BOB.id}"></presently-presence>`,
      ].join('\n'),
    );
    expect(await page.locator('#snippet-iframe').textContent()).toBe(
      `<iframe src="${harness.base}/v1/users/${BOB.id}/embed?layout=compact" title="Discord presence" width="440" height="82" frameborder="0"></iframe>`,
    );
    expect(await page.locator('#snippet-socket').textContent()).toContain(
      `new WebSocket('${harness.base.replace('http', 'ws')}/socket')`,
    );
    expect(await page.locator('#snippet-events').textContent()).toContain(
      `new EventSource('${harness.base}/v1/users/${BOB.id}/events')`,
    );
    expect(await page.locator('#snippet-privacy').textContent()).toBe(
      [
        `# KEY: what the bot sends ${BOB.id} for ?apikey`,
        `curl -X PATCH -H "Authorization: $KEY" -H 'Content-Type: application/json' \\`,
        `  --data '{"hide_custom_status": true}' ${harness.base}/v1/users/@me/privacy`,
      ].join('\n'),
    );

    // Each button is named for its snippet, and works from the keyboard.
    for (const [snippet, title] of [
      ['curl', 'REST, from a shell'],
      ['fetch', 'REST, from JavaScript'],
      ['socket', 'Live, over the WebSocket'],
      ['events', 'Live, as Server-Sent Events'],
      ['privacy', 'Privacy, with your key'],
      ['card', 'Status card, in a README'],
      ['picture', "Light and dark cards, following GitHub's theme"],
      ['embed', 'The element, with its script'],
      ['iframe', 'A frame, where a site runs no scripts'],
    ]) {
      const button = page.getByRole('button', { name: `Copy ${title}` });
      await button.focus();
      await page.keyboard.press('Enter');
      // Its name follows its text ("Copied …"), so it is looked at by id from here.
      await expect.poll(() => page.locator(`#snippet-${snippet}-copy`).textContent()).toBe('Copied');
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      expect(copied).toBe(await page.locator(`#snippet-${snippet}`).textContent());
    }
    expect(await page.locator('#copy-status').textContent()).toBe(
      'Copied: A frame, where a site runs no scripts',
    );
    expect(problems).toEqual([]);
    await page.close();
  });

  it('puts it on your site: the live element of the id shown, and the other ways to show it, to copy', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${harness.base}/?id=${BOB.id}`);
    const preview = page.locator('#embed-preview .card');
    await preview.getByText('Idle').waitFor({ timeout: 5_000 });
    expect(await preview.getAttribute('aria-label')).toBe('<b>Bob</b> on Discord');
    // The real element, live: a change shows in it as in the viewer.
    harness.simulator.setPresence(BOB.id, { status: 'dnd', activities: [] });
    await preview.getByText('Do not disturb').waitFor({ timeout: 5_000 });
    await showsStatus(page, 'Do not disturb');

    // It follows the id the viewer shows, and so do the links.
    await page.locator('#user-id').fill(ALICE.id);
    await page.keyboard.press('Enter');
    await preview.getByText('Alice', { exact: true }).waitFor({ timeout: 5_000 });
    const anchors = await page.locator('ul.elsewhere a.copy-link').all();
    const links = await Promise.all(
      anchors.map(async (anchor) => [await anchor.textContent(), await anchor.getAttribute('href')]),
    );
    const base = `${harness.base}/v1/users/${ALICE.id}`;
    expect(links).toEqual(
      [`${base}/card.svg`, `${base}/recent.svg`, `${base}/top.svg`, `${harness.base}/mcp`].map((url) => [
        url,
        url,
      ]),
    );
    await page.getByRole('button', { name: 'Copy Top tracks, an image' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(`${base}/top.svg`);
    expect(await page.locator('#copy-status').textContent()).toBe('Copied: Top tracks, an image');
    expect(problems).toEqual([]);
    await page.close();
    harness.simulator.setPresence(BOB.id, { status: 'idle', activities: [] });
    await eventually(() => expect(harness.app.registry.get(BOB.id)?.presence.discord_status).toBe('idle'));
  });

  it('says when a user is not monitored, and the URL and the back button follow the id', async () => {
    const { page, problems } = await openPage();
    // The page's socket passes through the test, which sees what the server sends and can ask it something
    // of its own on that socket (its answer is not passed on to the page).
    const fromServer: { t?: string; d?: { user_id?: string } }[] = [];
    let toServer: WebSocketRoute | undefined;
    let markerAnswered = (): void => undefined;
    let markerSent = false;
    await page.routeWebSocket(/\/socket$/, (route) => {
      const server = route.connectToServer();
      toServer = server;
      route.onMessage((message) => server.send(message));
      server.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { t?: string; d?: { user_id?: string } };
        if (markerSent && frame.t === 'INIT_STATE') {
          markerSent = false;
          markerAnswered();
          return;
        }
        fromServer.push(frame);
        route.send(message);
      });
    });
    await page.goto(`${harness.base}/?id=${ALICE.id}`);
    await shows(page, 'presence', 'Alice');
    await page.locator('#user-id').fill(STRANGER);
    await page.locator('button[type="submit"]').click();
    await shows(page, 'presence-status', 'is not monitored');
    expect(page.url()).toBe(`${harness.base}/?id=${STRANGER}`);
    await loadedCard(page);

    // The user left behind is unsubscribed from: their changes do not replace what is shown. Once the
    // service has the change, an op 2 of the test's on the page's socket is answered after anything the
    // change sent that socket.
    harness.simulator.setPresence(ALICE.id, { status: 'idle' });
    await eventually(() => expect(harness.app.registry.get(ALICE.id)?.presence.discord_status).toBe('idle'));
    const answered = new Promise<void>((resolve) => {
      markerAnswered = resolve;
    });
    markerSent = true;
    toServer?.send(JSON.stringify({ op: 2, d: { subscribe_to_ids: [] } }));
    await answered;
    expect(
      fromServer.filter((frame) => frame.t === 'PRESENCE_UPDATE' && frame.d?.user_id === ALICE.id),
    ).toEqual([]);
    expect(await page.locator('#presence-status').textContent()).toContain('is not monitored');

    await page.goBack();
    await showsStatus(page, 'Idle');
    expect(await page.locator('#presence h3').textContent()).toBe('Alice');
    expect(await page.locator('#user-id').inputValue()).toBe(ALICE.id);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('back to the page without an id shows nobody', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${harness.base}/`);
    await page.locator('#user-id').fill(ALICE.id);
    await page.locator('button[type="submit"]').click();
    await shows(page, 'presence', 'Alice');
    await page.goBack();
    await page.waitForURL(`${harness.base}/`);
    await page.locator('#live').waitFor({ state: 'hidden' });
    expect(await page.locator('#user-id').inputValue()).toBe('');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('reconnects when the socket drops, and goes on showing changes', async () => {
    const { page, problems } = await openPage();
    const routes: WebSocketRoute[] = [];
    // The page's socket passes through a route the test can cut, as a network would.
    await page.routeWebSocket(/\/socket$/, (route) => {
      routes.push(route);
      route.connectToServer();
    });
    await page.goto(`${harness.base}/?id=${BOB.id}`);
    await showsStatus(page, 'Idle');

    await routes[0]?.close({ code: 1006, reason: 'cut' });
    await shows(page, 'connection', 'trying again');
    await eventually(() => expect(routes).toHaveLength(2), 5_000);
    await shows(page, 'connection', 'Live');

    harness.simulator.setPresence(BOB.id, { status: 'online' });
    await showsStatus(page, 'Online');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows a stale presence as unknown, with no status, and the status again once current', async () => {
    const { page, problems } = await openPage();
    harness.simulator.setPresence(BOB.id, { status: 'idle' });
    await page.goto(`${harness.base}/?id=${BOB.id}`);
    await showsStatus(page, 'Idle');

    // Discord unreachable: nothing is heard of Bob any more.
    harness.simulator.faults.gatewayDown();
    await shows(page, 'presence-status', 'Unknown since');
    expect(await page.locator('#presence-status').getAttribute('data-status')).toBe('unknown');
    expect(await page.locator('#presence').textContent()).not.toContain('Idle');

    // Back, and resumed: what was held is current again.
    harness.simulator.faults.gatewayBack();
    await showsStatus(page, 'Idle', 15_000);
    expect(await page.locator('#presence-status').getAttribute('data-status')).toBe('idle');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('without JavaScript: the content, the card and the snippets of a submitted id, and the note', async () => {
    const { page, problems } = await openPage();
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Emulation.setScriptExecutionDisabled', { value: true });
    await page.goto(`${harness.base}/`);
    // Playwright's text search skips <noscript>, so the note is found by its markup.
    const note = page.locator('noscript .note');
    expect(await note.isVisible()).toBe(true);
    expect(await note.textContent()).toContain('The live view needs JavaScript');
    expect(await page.getByText('Lanyard-compatible.').isVisible()).toBe(true);
    expect(await page.locator('table').textContent()).toContain('/v1/users/:id/card.svg');
    expect(await page.locator('#live').isVisible()).toBe(false);
    expect(await page.locator('button[data-copy]').first().isVisible()).toBe(false);

    // The form still works: a plain GET of /?id=…, answered with that user's card and snippets.
    await page.locator('#user-id').fill(ALICE.id);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${harness.base}/?id=${ALICE.id}`);
    expect(await page.locator('#snippet-curl').textContent()).toBe(
      `curl ${harness.base}/v1/users/${ALICE.id}`,
    );
    await loadedCard(page);
    expect(problems).toEqual([]);
    await page.close();
  });
});
