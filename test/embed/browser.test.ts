import type { GatewayActivity } from 'discord-api-types/v10';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { POLL_INTERVAL_MS, STREAM_SILENCE_MS } from '../../src/embed/feed.js';
import { customStatusActivity, gameActivity, spotifyActivity } from '../../src/simulator/activities.js';
import { DiscordSimulator, type PresenceInput } from '../../src/simulator/index.js';
import { insertApiKey } from '../support/api-key.js';
import { type Chromium, chromiumAvailable, launchChromium } from '../support/chromium.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { freePort } from '../support/node-process.js';
import { answerImagesOffline } from '../support/offline-images.js';
import { embedPage, problemsOf, type Site, startSite } from './site.js';

/**
 * `<presently-presence>` as a site uses it: headless Chromium loads embed.js from the service into pages of
 * a site of its own (another origin), and the simulated Discord drives the presences shown. Skipped, with
 * a notice, where Debian's chromium is missing (except under REQUIRE_CHROMIUM=1, as in CI).
 */

const available = chromiumAvailable('embed browser tests');

const GUILD = '300000000000000031';
const NOVA = {
  id: '94490510688792576',
  username: 'nova',
  global_name: 'Nova',
  avatar: '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b',
};
const MIRA = { id: '381456437152087040', username: 'mira', global_name: 'Mira' };
/** Monitored, and private: answered as nobody is. */
const JUNO = { id: '725054734427766827', username: 'juno', global_name: 'Juno' };
/** Shares no server with the bot. */
const STRANGER = '246834765493026816';
/** How soon a browser reconnects once a stream ends (`retry:`). */
const RETRY_MS = 200;
/** The budget of a change's way from Discord to every element showing it. */
const LIVE_WITHIN_MS = 1_000;

const HOSTILE_CSS = [
  '* { all: unset; color: red !important; font-size: 40px !important; line-height: 0 !important; font-family: serif !important }',
  // What the element itself inherits, and would hand down to its insides.
  '* { visibility: hidden !important; letter-spacing: 12px !important; text-transform: uppercase !important; font-style: italic !important; text-indent: 100px !important }',
  'div, p, span, img, dl, dt, dd, a, section { display: none !important }',
  'presently-presence * { display: none !important; opacity: 0 !important }',
  'html { font-size: 40px !important }',
].join('\n');

/** What the page's scripts keep on `window` for the tests. */
interface PageWindow {
  violations: string[];
  changes: { id: string; status: string | null; at: number }[];
  EventSource?: unknown;
}
interface ShadowNode {
  textContent: string | null;
  complete?: boolean;
  naturalWidth?: number;
  getAttribute(name: string): string | null;
  getBoundingClientRect(): { width: number; height: number };
  getAnimations(): unknown[];
}
interface PresenceElement {
  id: string;
  shadowRoot: {
    textContent: string | null;
    querySelector(selector: string): ShadowNode | null;
    querySelectorAll(selector: string): ArrayLike<ShadowNode>;
  } | null;
  setAttribute(name: string, value: string): void;
}
declare const window: PageWindow;
declare const document: {
  getElementById(id: string): PresenceElement | null;
  body: { style: { background: string } };
  addEventListener(
    type: string,
    listener: (event: {
      type: string;
      target: { id: string };
      detail?: { discord_status: string } | null;
      violatedDirective?: string;
      blockedURI?: string;
    }) => void,
    capture?: boolean,
  ): void;
};
declare function getComputedStyle(node: unknown): Record<string, string>;

/** Records CSP violations and every presence an element shows (with when), from before the page's scripts run. */
function recordInPage(): void {
  window.violations = [];
  window.changes = [];
  document.addEventListener('securitypolicyviolation', (event) =>
    window.violations.push(`${event.violatedDirective} ${event.blockedURI}`),
  );
  document.addEventListener(
    'presencechange',
    (event) =>
      window.changes.push({
        id: event.target.id,
        status: event.detail?.discord_status ?? null,
        at: Date.now(),
      }),
    true,
  );
}

const now = Date.now();
const TRACK = {
  song: 'Midnight City',
  artists: ['M83'],
  album: "Hurry Up, We're Dreaming",
  imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
  trackId: '1eyzqe2QqGZUmfcPZtrIyt',
  start: now - 20_000,
  end: now + 600_000,
};

/** What each user is doing as a test starts. */
const STARTING: Record<string, PresenceInput & { activities: GatewayActivity[] }> = {
  [NOVA.id]: {
    status: 'online',
    activities: [
      customStatusActivity({ text: 'on repeat', emoji: { name: '🎧' } }),
      spotifyActivity({ ...TRACK, userId: NOVA.id }),
    ],
  },
  [MIRA.id]: {
    status: 'dnd',
    activities: [
      gameActivity({
        name: 'Celeste',
        applicationId: '512035578624524288',
        details: 'Chapter 7',
        start: now - 65_000,
        largeImage: '512036254624989184',
      }),
    ],
  },
  [JUNO.id]: { status: 'online', activities: [] },
};

describe.skipIf(!available)('<presently-presence> in headless Chromium', () => {
  let simulator: DiscordSimulator;
  let port: number;
  let h: Harness;
  let browser: Chromium;
  let site: Site;
  let cdnOrigin: string;

  /** The service on `port`, following the one simulated Discord across restarts. */
  const startService = async (): Promise<Harness> => {
    const service = await startHarness({
      discord: simulator,
      env: { PORT: String(port) },
      sse: { retryMs: RETRY_MS },
    });
    await eventually(() => {
      for (const user of [NOVA, MIRA, JUNO]) expect(service.app.registry.isMonitored(user.id)).toBe(true);
    }, 15_000);
    return service;
  };

  beforeAll(async () => {
    simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    await simulator.start();
    simulator.createGuild({
      id: GUILD,
      name: 'Embeds',
      members: [NOVA, MIRA, JUNO].map((user) => ({ user, presence: STARTING[user.id] })),
    });
    port = await freePort();
    h = await startService();
    cdnOrigin = new URL(simulator.cdnUrl).origin;
    const novaKey = await insertApiKey(h.app.store, NOVA.id);
    const kv = await fetch(`${h.base}/v1/users/@me/kv`, {
      method: 'PATCH',
      headers: { authorization: novaKey, 'content-type': 'application/json' },
      body: JSON.stringify({ mood: 'calm', location: 'Lisbon' }),
    });
    expect(kv.status).toBe(204);
    const junoKey = await insertApiKey(h.app.store, JUNO.id);
    const hidden = await fetch(`${h.base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: { authorization: junoKey, 'content-type': 'application/json' },
      body: JSON.stringify({ visibility: 'private' }),
    });
    expect(hidden.status).toBe(200);
    browser = await launchChromium();
    await answerImagesOffline(browser.context);
    await browser.context.addInitScript(recordInPage);
    site = await startSite();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await site?.close();
    await h?.close();
    await simulator?.stop();
  });

  beforeEach(async () => {
    for (const [id, presence] of Object.entries(STARTING)) simulator.setPresence(id, presence);
    await eventually(() => {
      for (const [id, presence] of Object.entries(STARTING)) {
        expect(h.app.registry.get(id)?.presence.discord_status).toBe(presence.status);
        expect(h.app.registry.get(id)?.presence.activities).toHaveLength(presence.activities.length);
      }
    });
  });

  async function open(
    path: string,
    body: string,
    options: { headers?: Record<string, string>; head?: string; before?: (page: Page) => Promise<void> } = {},
  ): Promise<{ page: Page; problems: string[]; requests: Request[] }> {
    const url = site.put(path, {
      body: embedPage(h.base, body, options.head),
      ...(options.headers ? { headers: options.headers } : {}),
    });
    const page = await browser.context.newPage();
    const problems = problemsOf(page);
    const requests: Request[] = [];
    page.on('request', (request) => requests.push(request));
    await options.before?.(page);
    await page.goto(url);
    return { page, problems, requests };
  }

  /** Waits until element `id` shows `text` (anywhere in its shadow root). */
  const shows = (page: Page, id: string, text: string, timeout = 5_000) =>
    page.waitForFunction(
      ([id, text]) => document.getElementById(id)?.shadowRoot?.textContent?.includes(text) ?? false,
      [id, text] as const,
      { timeout },
    );

  const shadowText = (page: Page, id: string) =>
    page.evaluate((id) => document.getElementById(id)?.shadowRoot?.textContent ?? '', id);

  const streamsOpened = (requests: Request[]) =>
    requests.filter((request) => request.url().includes('/v1/events?'));

  it('two users on a page of another origin, over one stream: a change reaches both within a second', async ({
    annotate,
  }) => {
    const { page, problems, requests } = await open(
      '/two',
      `<presently-presence id="nova" user="${NOVA.id}" fields="mood, location, nothing_here"></presently-presence>
       <presently-presence id="mira" user="${MIRA.id}" layout="compact"></presently-presence>`,
    );
    await shows(page, 'nova', 'Midnight City');
    await shows(page, 'mira', 'Playing Celeste');
    const nova = await shadowText(page, 'nova');
    for (const text of [
      'Nova',
      '@nova',
      'Online',
      '🎧 on repeat',
      'Listening to Spotify',
      'by M83',
      'mood',
      'calm',
      'Lisbon',
    ]) {
      expect(nova).toContain(text);
    }
    expect(nova).not.toContain('nothing_here');
    expect(await shadowText(page, 'mira')).toContain('Do not disturb');
    // One stream for the page, of both users.
    const streams = streamsOpened(requests);
    expect(streams).toHaveLength(1);
    expect(streams[0]?.url()).toMatch(new RegExp(`ids=(${NOVA.id},${MIRA.id}|${MIRA.id},${NOVA.id})`));

    const changedAt = Date.now();
    simulator.setPresence(NOVA.id, { status: 'idle', activities: [customStatusActivity({ text: 'lunch' })] });
    simulator.setPresence(MIRA.id, { status: 'online', activities: [] });
    await page.waitForFunction(
      () =>
        (document.getElementById('nova')?.shadowRoot?.textContent?.includes('Idle') ?? false) &&
        (document.getElementById('mira')?.shadowRoot?.textContent?.includes('Online') ?? false),
      undefined,
      { timeout: LIVE_WITHIN_MS },
    );
    const changes = await page.evaluate(() => window.changes);
    const latency = (id: string, status: string) =>
      (changes.find((change) => change.id === id && change.status === status)?.at ?? Number.NaN) - changedAt;
    const measured = { nova: latency('nova', 'idle'), mira: latency('mira', 'online') };
    expect(measured.nova).toBeLessThan(LIVE_WITHIN_MS);
    expect(measured.mira).toBeLessThan(LIVE_WITHIN_MS);
    await annotate(`change to element: Nova ${measured.nova} ms, Mira ${measured.mira} ms`);
    expect(await shadowText(page, 'nova')).toContain('lunch');
    expect(await shadowText(page, 'nova')).not.toContain('Midnight City');
    expect(streamsOpened(requests)).toHaveLength(1);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('says so, readably, for a user not monitored, a private user, an id that is not one, and no user', async () => {
    const { page, problems, requests } = await open(
      '/states',
      `<presently-presence id="stranger" user="${STRANGER}"></presently-presence>
       <presently-presence id="private" user="${JUNO.id}"></presently-presence>
       <presently-presence id="bad" user="not-an-id"></presently-presence>
       <presently-presence id="none"></presently-presence>
       <presently-presence id="elsewhere" user="${NOVA.id}" base="javascript:alert(1)"></presently-presence>`,
    );
    await shows(page, 'stranger', 'No presence to show');
    await shows(page, 'private', 'No presence to show');
    // A private user is told apart from one who is not there by nothing but the id.
    expect((await shadowText(page, 'private')).replace(JUNO.id, 'ID')).toBe(
      (await shadowText(page, 'stranger')).replace(STRANGER, 'ID'),
    );
    expect(await shadowText(page, 'bad')).toBe('“not-an-id” is not a Discord user id.');
    expect(await shadowText(page, 'none')).toBe('Set the user attribute to a Discord user id.');
    expect(await shadowText(page, 'elsewhere')).toBe('base “javascript:alert(1)” is not a web address.');
    // Nothing was asked about what is not an id, and nothing of the private user's came.
    expect(requests.map((request) => request.url()).filter((url) => url.includes('not-an-id'))).toEqual([]);
    expect(await page.evaluate(() => window.changes.filter((change) => change.status !== null))).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('draws whole under a hostile stylesheet and a strict CSP, with no violation', async () => {
    site.put('/hostile.css', { body: HOSTILE_CSS, type: 'text/css' });
    const policy = [
      "default-src 'self'",
      `script-src ${h.base}`,
      `connect-src ${h.base}`,
      `img-src ${h.base} ${cdnOrigin} https:`,
      "require-trusted-types-for 'script'",
    ].join('; ');
    const { page, problems } = await open(
      '/strict',
      `<div><p>Hello from a hostile site</p></div><presently-presence id="nova" user="${NOVA.id}"></presently-presence>`,
      { headers: { 'content-security-policy': policy }, head: '<link rel="stylesheet" href="/hostile.css">' },
    );
    await shows(page, 'nova', 'Nova');
    await page.waitForFunction(() => {
      const avatar = document.getElementById('nova')?.shadowRoot?.querySelector('.avatar img');
      return avatar?.complete === true && (avatar.naturalWidth ?? 0) > 0;
    });
    const drawn = await page.evaluate(() => {
      const root = document.getElementById('nova')?.shadowRoot;
      const look = (selector: string) => {
        const node = root?.querySelector(selector);
        const style = node ? getComputedStyle(node) : {};
        const box = node?.getBoundingClientRect();
        return {
          display: style.display,
          visibility: style.visibility,
          letterSpacing: style.letterSpacing,
          textTransform: style.textTransform,
          fontStyle: style.fontStyle,
          textIndent: style.textIndent,
          opacity: style.opacity,
          color: style.color,
          fontSize: style.fontSize,
          width: Math.round(box?.width ?? 0),
          height: Math.round(box?.height ?? 0),
        };
      };
      return {
        card: look('.card'),
        name: look('.name'),
        bar: look('.progress'),
        avatar: look('.avatar img'),
      };
    });
    expect(drawn.card).toMatchObject({
      display: 'grid',
      visibility: 'visible',
      opacity: '1',
      fontSize: '14px',
    });
    expect(drawn.card.color).not.toBe('rgb(255, 0, 0)');
    expect(drawn.card.width).toBeGreaterThan(300);
    expect(drawn.card.height).toBeGreaterThan(150);
    expect(drawn.name).toMatchObject({
      display: 'block',
      visibility: 'visible',
      fontSize: '16px',
      letterSpacing: 'normal',
      textTransform: 'none',
      fontStyle: 'normal',
      textIndent: '0px',
    });
    expect(drawn.name.height).toBeGreaterThan(10);
    expect(drawn.bar.display).toBe('block');
    expect(drawn.bar.width).toBeGreaterThan(100);
    expect(drawn.avatar).toMatchObject({ display: 'block', width: 56, height: 56 });
    expect(await page.evaluate(() => window.violations)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('the iframe page, framed by a page of another origin', async () => {
    const src = `${h.base}/v1/users/${NOVA.id}/embed?theme=dark&layout=compact`;
    const { page, problems } = await open(
      '/framed',
      `<iframe id="frame" src="${src}" title="Discord presence" width="440" height="96" style="border:0"></iframe>`,
    );
    const frame = page.frameLocator('#frame');
    const card = frame.locator('presently-presence .card');
    await card.getByText('Midnight City', { exact: false }).waitFor();
    expect(await card.getAttribute('data-layout')).toBe('compact');
    expect(await card.getAttribute('data-theme')).toBe('dark');
    expect(await card.evaluate((node) => getComputedStyle(node).backgroundColor)).toBe('rgb(30, 31, 34)');
    const inside = page.frames().find((each) => each.url() === src);
    // The frame's page is transparent: the site shows around the card.
    expect(await inside?.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe(
      'rgba(0, 0, 0, 0)',
    );
    expect(await inside?.evaluate(() => window.violations)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('follows its attributes: theme, layout and fields redraw it; colours come from custom properties', async () => {
    const { page, problems } = await open(
      '/attributes',
      `<presently-presence id="nova" user="${NOVA.id}"></presently-presence>`,
      { head: '<style>.pink { --presently-background: rgb(255, 192, 203) }</style>' },
    );
    await shows(page, 'nova', 'Nova');
    const look = () =>
      page.evaluate(() => {
        const root = document.getElementById('nova')?.shadowRoot;
        const card = root?.querySelector('.card');
        return {
          background: card ? getComputedStyle(card).backgroundColor : '',
          height: Math.round(card?.getBoundingClientRect().height ?? 0),
          layout: card?.getAttribute('data-layout'),
          fields: root?.querySelector('.fields')?.textContent ?? null,
        };
      });
    const set = (name: string, value: string) =>
      page.evaluate(([name, value]) => document.getElementById('nova')?.setAttribute(name, value), [
        name,
        value,
      ] as const);

    await page.emulateMedia({ colorScheme: 'light' });
    const full = await look();
    expect(full).toMatchObject({ background: 'rgb(255, 255, 255)', layout: 'full', fields: null });
    await page.emulateMedia({ colorScheme: 'dark' });
    expect((await look()).background).toBe('rgb(30, 31, 34)');
    await set('theme', 'light');
    expect((await look()).background).toBe('rgb(255, 255, 255)');
    await set('class', 'pink');
    expect((await look()).background).toBe('rgb(255, 192, 203)');

    await set('fields', 'location');
    expect((await look()).fields).toBe('locationLisbon');
    await set('layout', 'compact');
    const compact = await look();
    expect(compact.layout).toBe('compact');
    expect(compact.height).toBeLessThan(full.height / 2);
    expect(compact.fields).toBeNull();
    await set('layout', 'badge');
    const badge = await look();
    expect(badge.layout).toBe('badge');
    expect(badge.height).toBeLessThan(compact.height);
    expect(await page.locator('#nova').evaluate((node) => getComputedStyle(node).display)).toBe(
      'inline-block',
    );
    // A value it does not know is the default, as for HTML's own attributes.
    await set('layout', 'sideways');
    expect((await look()).layout).toBe('full');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('is labelled for assistive technology, and honours reduced motion', async () => {
    const { page, problems } = await open(
      '/a11y',
      `<presently-presence id="nova" user="${NOVA.id}"></presently-presence>
       <presently-presence id="mira" user="${MIRA.id}"></presently-presence>`,
    );
    await shows(page, 'nova', 'Midnight City');
    await shows(page, 'mira', 'elapsed');
    const labels = await page.evaluate(() => {
      const nova = document.getElementById('nova')?.shadowRoot;
      const mira = document.getElementById('mira')?.shadowRoot;
      const attributes = (node: ShadowNode | null | undefined, names: string[]) =>
        Object.fromEntries(names.map((name) => [name, node?.getAttribute(name) ?? null]));
      return {
        card: attributes(nova?.querySelector('.card'), ['role', 'aria-label', 'aria-live', 'aria-busy']),
        avatar: attributes(nova?.querySelector('.avatar img'), ['alt']),
        art: attributes(nova?.querySelector('img.art'), ['alt']),
        progress: attributes(nova?.querySelector('[role=progressbar]'), [
          'aria-label',
          'aria-valuemin',
          'aria-valuemax',
          'aria-valuenow',
          'aria-valuetext',
        ]),
        timers: Array.from(mira?.querySelectorAll('[role=timer]') ?? [], (node) =>
          node.getAttribute('aria-live'),
        ),
        dot: attributes(nova?.querySelector('.dot'), ['aria-hidden']),
      };
    });
    expect(labels.card).toEqual({
      role: 'group',
      'aria-label': 'Nova on Discord',
      'aria-live': 'polite',
      'aria-busy': 'false',
    });
    expect(labels.avatar).toEqual({ alt: 'Avatar of Nova' });
    expect(labels.art).toEqual({ alt: "Album art of Hurry Up, We're Dreaming" });
    expect(labels.progress).toMatchObject({
      'aria-label': 'Track progress',
      'aria-valuemin': '0',
      'aria-valuemax': String(Math.round((TRACK.end - TRACK.start) / 1000)),
    });
    expect(Number(labels.progress['aria-valuenow'])).toBeGreaterThanOrEqual(20);
    expect(labels.progress['aria-valuetext']).toMatch(/^\d+:\d\d of 10:20$/);
    // The running clocks are not read out every second.
    expect(labels.timers).toEqual(['off']);
    expect(labels.dot).toEqual({ 'aria-hidden': 'true' });

    /** The bar once the next second's tick has moved it: its running animations, and its transition. */
    const afterTick = async () => {
      const bar = () =>
        page.evaluate(() => {
          const root = document.getElementById('nova')?.shadowRoot;
          const fill = root?.querySelector('.fill');
          return {
            at: root?.querySelector('[role=progressbar]')?.getAttribute('aria-valuenow') ?? '',
            transition: fill ? getComputedStyle(fill).transitionDuration : '',
            animations: fill?.getAnimations().length ?? -1,
          };
        });
      const { at } = await bar();
      await eventually(async () => expect((await bar()).at).not.toBe(at), 3_000);
      return bar();
    };
    await page.emulateMedia({ reducedMotion: 'no-preference' });
    expect(await afterTick()).toMatchObject({ transition: '1s', animations: 1 });
    await page.emulateMedia({ reducedMotion: 'reduce' });
    expect(await afterTick()).toMatchObject({ transition: '0s', animations: 0 });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('without EventSource, stays live through the client’s own reader of the stream', async () => {
    const { page, problems, requests } = await open(
      '/no-event-source',
      `<presently-presence id="mira" user="${MIRA.id}"></presently-presence>`,
      {
        before: async (page) => {
          await page.addInitScript(() => {
            window.EventSource = undefined;
          });
        },
      },
    );
    await shows(page, 'mira', 'Mira');
    simulator.setPresence(MIRA.id, {
      status: 'idle',
      activities: [customStatusActivity({ text: 'no EventSource here' })],
    });
    await shows(page, 'mira', 'no EventSource here', LIVE_WITHIN_MS);
    expect(streamsOpened(requests).map((request) => request.resourceType())).toEqual(['fetch']);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('where the stream is blocked (a filter in the way), reads the presence every poll interval', async () => {
    const { page, requests } = await open(
      '/blocked',
      `<presently-presence id="nova" user="${NOVA.id}"></presently-presence>`,
      {
        before: async (page) => {
          await page.clock.install();
          await page.route('**/v1/events?**', (route) => route.abort('blockedbyclient'));
        },
      },
    );
    await shows(page, 'nova', 'Nova');
    const reads = () => requests.filter((request) => request.url().includes('/v1/users?ids=')).length;
    expect(reads()).toBe(1);
    simulator.setPresence(NOVA.id, { status: 'dnd', activities: [customStatusActivity({ text: 'polled' })] });
    await eventually(() => expect(h.app.registry.get(NOVA.id)?.presence.discord_status).toBe('dnd'));
    await page.clock.fastForward(STREAM_SILENCE_MS);
    expect(await shadowText(page, 'nova')).not.toContain('polled');
    await page.clock.fastForward(POLL_INTERVAL_MS);
    await eventually(async () => expect(await shadowText(page, 'nova')).toContain('polled'));
    expect(await shadowText(page, 'nova')).toContain('Do not disturb');
    expect(reads()).toBe(2);
    await page.close();
  });

  it('lives through the service restarting: its stream reconnects, and shows the next change', async () => {
    const { page, problems, requests } = await open(
      '/restart',
      `<presently-presence id="nova" user="${NOVA.id}"></presently-presence>`,
    );
    // The connection refused while the service is down is the one thing expected to fail.
    const failed = (text: string) => /ERR_CONNECTION_REFUSED/.test(text);
    await shows(page, 'nova', 'Nova');
    await h.close();
    h = await startService();
    simulator.setPresence(NOVA.id, {
      status: 'online',
      activities: [customStatusActivity({ text: 'back again' })],
    });
    await shows(page, 'nova', 'back again', 15_000);
    // It came over the stream, opened again: the presence was read once, when the page opened.
    expect(streamsOpened(requests).length).toBeGreaterThanOrEqual(2);
    expect(requests.filter((request) => request.url().includes('/v1/users?ids=')).length).toBe(1);
    expect(problems.filter((problem) => !failed(problem))).toEqual([]);
    await page.close();
  });
});
