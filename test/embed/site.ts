import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';

/**
 * A website that embeds Presently: its pages on a loopback origin of their own (the API is another origin,
 * as it is for a real site; loopback like the API, so the browser's local-network rules let the page reach
 * it), each page with the headers the test gives it.
 */

export interface SitePage {
  body: string;
  type?: string;
  headers?: Record<string, string>;
}

export interface Site {
  origin: string;
  /** Serves `page` at `path` from now on. */
  put(path: string, page: SitePage): string;
  close(): Promise<void>;
}

export async function startSite(): Promise<Site> {
  const pages = new Map<string, SitePage>();
  const server: Server = createServer((request, response) => {
    const page = pages.get(request.url ?? '');
    // The browser asks for an icon: nothing, rather than a 404 in the console.
    if (!page) return response.writeHead(request.url === '/favicon.ico' ? 204 : 404).end();
    response
      .writeHead(200, { 'content-type': page.type ?? 'text/html; charset=utf-8', ...page.headers })
      .end(page.body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    origin,
    put(path, page) {
      pages.set(path, page);
      return `${origin}${path}`;
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A page of the site: `<script src>` of embed.js from `api`, then `body`. */
export function embedPage(api: string, body: string, head = ''): string {
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A site</title>',
    head,
    `<script src="${api}/embed.js" defer></script>`,
    `</head><body>${body}</body></html>`,
  ].join('\n');
}

/** What went wrong in a page: console errors and warnings, script errors, failed or refused requests. */
export function problemsOf(page: Page, expected: (text: string) => boolean = () => false): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    const text = message.text();
    if ((message.type() === 'error' || message.type() === 'warning') && !expected(text)) {
      problems.push(`console ${message.type()}: ${text}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
  page.on('requestfailed', (request) => {
    const text = `failed: ${request.url()} ${request.failure()?.errorText}`;
    if (!expected(text)) problems.push(text);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
  });
  return problems;
}
