import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { BrowserContext, Page } from 'playwright-core';
import ts from 'typescript';

const CLIENT_DIR = new URL('../../src/client/', import.meta.url);
const PAGE = [
  // No icon: a request for /favicon.ico would be a 404 in the console.
  '<!doctype html><link rel="icon" href="data:,"><script type="module">',
  "import * as presently from './index.js';",
  'window.presently = presently;',
  '</script>',
].join('\n');

async function compiled(file: string): Promise<string> {
  const source = await readFile(new URL(file.replace(/\.js$/, '.ts'), CLIENT_DIR), 'utf8');
  return ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
}

/**
 * A page server of its own on loopback, so the API is another origin, as on a real site: `page.html`
 * imports `presently/client` (src/client compiled as `npm run build` would) and puts it on
 * `window.presently`.
 */
async function serveClientPage(): Promise<{ url: string; close(): void }> {
  const pages = createServer((request, response) => {
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
  return { url: `http://127.0.0.1:${port}/page.html`, close: () => pages.close() };
}

declare const window: { presently?: unknown };

export interface ClientPage {
  page: Page;
  /** What went wrong in the page: console errors and warnings, script errors. */
  problems: string[];
  /** Stops the page server (the browser is the caller's). */
  close(): void;
}

/**
 * A new page of `context` with `presently/client` loaded on `window.presently`, from a page server of its
 * own. Console messages that contain `expected` are no problem.
 */
export async function openClientPage(context: BrowserContext, expected?: string): Promise<ClientPage> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    const text = message.text();
    const bad = message.type() === 'error' || message.type() === 'warning';
    if (bad && (expected === undefined || !text.includes(expected))) problems.push(text);
  });
  page.on('pageerror', (error) => problems.push(error.message));
  const pages = await serveClientPage();
  await page.goto(pages.url);
  await page.waitForFunction(() => window.presently !== undefined);
  return { page, problems, close: () => pages.close() };
}
