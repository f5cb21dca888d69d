import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, chromiumAvailable, launchChromium } from '../../support/chromium.js';
import { eventually } from '../../support/eventually.js';
import { type Harness, startHarness } from '../../support/harness.js';

/**
 * `/privacy` and `/terms` as a person reads them: headless Chromium against the real service. The pages
 * run under the landing page's CSP; any violation, script error or failed request fails the test. Skipped,
 * with a notice, where Debian's chromium is missing (except under REQUIRE_CHROMIUM=1, as in CI).
 */

const available = chromiumAvailable('privacy and terms pages browser tests');

/** What the test reads of the page, in the page. */
interface PageElement {
  textContent: string | null;
}
declare const document: {
  documentElement: { scrollWidth: number; clientWidth: number };
  querySelectorAll(selector: string): ArrayLike<PageElement & { href: string }>;
  querySelector(selector: string): PageElement | null;
};
declare function getComputedStyle(
  element: unknown,
  pseudo?: string,
): { content: string; borderBottomStyle: string; backgroundColor: string };

const GUILD = '300000000000000040';
const ALICE = { id: '80351110224678912', username: 'alice' };
const CONTACT = 'ops@example.org <on call>';
/** A phone's width in CSS pixels. */
const PHONE = { width: 375, height: 740 };

describe.skipIf(!available)('the privacy and terms pages in headless Chromium', () => {
  let harness: Harness;
  let browser: Chromium;

  beforeAll(async () => {
    harness = await startHarness({
      env: { RETENTION_DAYS: '7', OPERATOR_CONTACT: CONTACT, RATE_LIMIT_READ: '600' },
      setup: (sim) => sim.createGuild({ id: GUILD, name: 'Legal', members: [{ user: ALICE }] }),
    });
    await eventually(() => expect(harness.app.registry.get(ALICE.id)).toBeDefined());
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  /** A new page, and what went wrong in it: console errors and warnings (CSP violations among them), script errors, failed or refused requests. */
  async function openPage(): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') {
        problems.push(`console ${message.type()}: ${message.text()}`);
      }
    });
    page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
    page.on('requestfailed', (request) =>
      problems.push(`failed: ${request.url()} ${request.failure()?.errorText}`),
    );
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
    });
    return { page, problems };
  }

  it('the privacy page renders in the landing page’s style, with this instance’s facts', async () => {
    const { page, problems } = await openPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.goto(`${harness.base}/privacy`);
    expect(await page.title()).toBe('Privacy · Presently');
    expect(await page.locator('h1').textContent()).toBe('Privacy on this instance');
    expect(await page.locator('#retention').textContent()).toContain('erased 7 days later');
    // The operator's text is text.
    expect(await page.locator('#operator-contact').textContent()).toBe(CONTACT);
    expect(await page.getByRole('cell', { name: 'GUILD_PRESENCES' }).isVisible()).toBe(true);
    expect(await page.getByRole('cell', { name: '/presently forget all:True' }).isVisible()).toBe(true);
    // The landing page's stylesheet, applied: its header rule and its layout.
    const header = page.locator('header.site');
    expect(await header.evaluate((element) => getComputedStyle(element).borderBottomStyle)).toBe('solid');
    // It loads itself and its stylesheet, nothing else.
    expect(requested.map((url) => new URL(url).pathname)).toEqual([
      '/privacy',
      expect.stringMatching(/^\/page\/page\.[\w-]+\.css$/),
    ]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('links work: from the landing page’s footer to both pages, between them, and back', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${harness.base}/`);
    await page.locator('footer').getByRole('link', { name: 'Privacy' }).click();
    await page.waitForURL(`${harness.base}/privacy`);
    expect(await page.locator('h1').textContent()).toBe('Privacy on this instance');
    await page.locator('footer').getByRole('link', { name: 'Terms' }).click();
    await page.waitForURL(`${harness.base}/terms`);
    expect(await page.locator('h1').textContent()).toBe('Terms of use');
    expect(await page.locator('main').textContent()).toContain('600 a minute per client address');
    await page.locator('main').getByRole('link', { name: 'Privacy' }).click();
    await page.waitForURL(`${harness.base}/privacy`);
    await page.getByRole('link', { name: 'Live viewer' }).click();
    await page.waitForURL(`${harness.base}/`);
    expect(await page.locator('h1').textContent()).toContain('Discord presence');
    // Every other link of both pages leads somewhere that answers.
    for (const path of ['/privacy', '/terms']) {
      await page.goto(`${harness.base}${path}`);
      const hrefs = await page.evaluate(() =>
        Array.from(document.querySelectorAll('a[href]'), (link) => link.href),
      );
      for (const href of new Set(hrefs)) {
        if (href.startsWith('mailto:')) continue;
        const response = await page.request.get(href);
        expect(response.status(), href).toBe(200);
      }
    }
    expect(problems).toEqual([]);
    await page.close();
  });

  it('reads on a phone: nothing wider than the screen, each table cell named for its column', async () => {
    const { page, problems } = await openPage();
    await page.setViewportSize(PHONE);
    for (const path of ['/privacy', '/terms']) {
      await page.goto(`${harness.base}${path}`);
      const { scrollWidth, clientWidth } = await page.evaluate(() => ({
        scrollWidth: document.documentElement.scrollWidth,
        clientWidth: document.documentElement.clientWidth,
      }));
      expect(scrollWidth, path).toBeLessThanOrEqual(clientWidth);
    }
    await page.goto(`${harness.base}/privacy`);
    expect(await page.locator('thead').first().isVisible()).toBe(false);
    const label = await page
      .locator('td.api')
      .first()
      .evaluate((cell) => getComputedStyle(cell, '::before').content);
    expect(label).toBe('"With the API: "');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('follows the system’s dark mode, as the landing page does', async () => {
    const { page, problems } = await openPage();
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto(`${harness.base}/terms`);
    const background = await page.evaluate(() => {
      const html = document.querySelector('html');
      return html ? getComputedStyle(html).backgroundColor : '';
    });
    expect(background).toBe('rgb(13, 17, 23)');
    expect(problems).toEqual([]);
    await page.close();
  });
});
