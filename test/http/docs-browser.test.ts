import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_PATH, OPENAPI_PATH } from '../../src/http/routes/docs.js';
import { type Chromium, chromiumAvailable, launchChromium } from '../support/chromium.js';
import { type Harness, startHarness } from '../support/harness.js';
import { type OpenApiDocument, operationsOf } from '../support/openapi.js';

/**
 * The docs page as a reader sees it: headless Chromium opens `/docs` and Swagger UI draws every operation
 * from the assets the service serves itself, under the page's CSP, with nothing asked of any other host.
 * Skipped, with a notice, where Debian's chromium is missing (except under REQUIRE_CHROMIUM=1, as in CI).
 */

const available = chromiumAvailable('docs browser tests');

interface PageTextElement {
  textContent: string | null;
}
declare const document: {
  querySelectorAll(selector: string): ArrayLike<PageTextElement>;
  addEventListener(type: 'securitypolicyviolation', listener: (event: Violation) => void): void;
};
declare const window: { __violations: string[] };
interface Violation {
  violatedDirective: string;
  blockedURI: string;
}

/** What a page did that the docs page must not: fail a request, leave loopback, break its CSP. */
interface Observed {
  requests: string[];
  failed: string[];
  console: string[];
}

function observe(page: Page): Observed {
  const observed: Observed = { requests: [], failed: [], console: [] };
  page.on('request', (request) => observed.requests.push(request.url()));
  page.on('requestfailed', (request) =>
    observed.failed.push(`${request.url()}: ${request.failure()?.errorText}`),
  );
  page.on('response', (response) => {
    if (response.status() >= 400) observed.failed.push(`${response.url()}: ${response.status()}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') observed.console.push(message.text());
  });
  page.on('pageerror', (error) => observed.console.push(`page error: ${error.message}`));
  return observed;
}

describe.skipIf(!available)('the docs page in headless Chromium', () => {
  let harness: Harness;
  let browser: Chromium;
  let documented: OpenApiDocument;

  beforeAll(async () => {
    harness = await startHarness();
    documented = (await (await fetch(`${harness.base}${OPENAPI_PATH}`)).json()) as OpenApiDocument;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  it('lists every operation of the document, from local assets, with no failure and no CSP violation', async () => {
    const page = await browser.context.newPage();
    const observed = observe(page);
    // Reported by the page itself too: a console message is one way to see a violation, the event another.
    await page.addInitScript(() => {
      window.__violations = [];
      document.addEventListener('securitypolicyviolation', (event) =>
        window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`),
      );
    });
    await page.goto(`${harness.base}${DOCS_PATH}`);
    const operations = operationsOf(documented);
    await page.waitForFunction(
      (count) => document.querySelectorAll('.opblock').length === count,
      operations.length,
      { timeout: 15_000 },
    );
    const shown = await page.evaluate(() =>
      Array.from(document.querySelectorAll('.opblock-summary-path'), (element) =>
        element.textContent?.trim(),
      ),
    );
    expect(shown.sort()).toEqual(operations.map(([route]) => route.split(' ')[1]).sort());
    const title = await page.evaluate(() => document.querySelectorAll('.info .title')[0]?.textContent ?? '');
    expect(title).toContain('Presently');

    const origin = new URL(harness.base).origin;
    expect(
      observed.requests.filter((url) => new URL(url).origin !== origin && !url.startsWith('data:')),
    ).toEqual([]);
    expect(observed.requests).toContain(`${origin}${DOCS_PATH}/static/swagger-ui-bundle.js`);
    expect(observed.failed).toEqual([]);
    expect(observed.console).toEqual([]);
    expect(await page.evaluate(() => window.__violations)).toEqual([]);
    await page.close();
  });

  it('"Try it out" calls the API on the same origin', async () => {
    const page = await browser.context.newPage();
    const observed = observe(page);
    await page.goto(`${harness.base}${DOCS_PATH}#/Service`);
    const version = page.locator('.opblock', { hasText: '/v1/version' });
    await version.locator('.opblock-summary').click();
    await version.getByRole('button', { name: 'Try it out' }).click();
    await version.getByRole('button', { name: 'Execute' }).click();
    await expect
      .poll(async () =>
        (
          await version.locator('.live-responses-table tr.response .response-col_status').textContent()
        )?.trim(),
      )
      .toBe('200');
    expect(observed.requests).toContain(`${new URL(harness.base).origin}/v1/version`);
    expect(observed.failed).toEqual([]);
    expect(observed.console).toEqual([]);
    await page.close();
  });

  it('another site cannot frame the page', async () => {
    // A page of another origin (another port of loopback, so the browser's local-network rules leave it
    // to the CSP to refuse) that frames the docs.
    const framer = createServer((_request, response) =>
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<!doctype html><iframe src="${harness.base}${DOCS_PATH}"></iframe>`),
    );
    await new Promise<void>((resolve) => framer.listen(0, '127.0.0.1', resolve));
    const page = await browser.context.newPage();
    try {
      const observed = observe(page);
      await page.goto(`http://127.0.0.1:${(framer.address() as AddressInfo).port}/`);
      await expect.poll(() => observed.console.join('\n')).toMatch(/frame-ancestors 'none'/);
      const framed = page.frames().find((frame) => frame.url().startsWith(harness.base));
      expect(framed ? await framed.locator('.opblock').count() : 0).toBe(0);
    } finally {
      await page.close();
      framer.closeAllConnections();
      await new Promise((resolve) => framer.close(resolve));
    }
  });
});
