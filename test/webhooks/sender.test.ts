import { once } from 'node:events';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RESPONSE_BODY_CAP, WebhookSender } from '../../src/webhooks/sender.js';

/** One attempt: answers read only so far, redirects never followed, literal addresses checked. */

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(listener: RequestListener): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((request, response) => {
    requests++;
    listener(request, response);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

function sender(allowPrivate = true): WebhookSender {
  const made = new WebhookSender({
    policy: { allowPrivate, resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
    userAgent: 'test',
    timeoutMs: 2_000,
  });
  closers.push(() => made.close());
  return made;
}

describe('an attempt', () => {
  it('reads a large answer only up to the cap, and counts its status', async () => {
    let written = 0;
    let closedEarly = false;
    const { url } = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const more = (): void => {
        while (written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!response.write(chunk)) {
            response.once('drain', more);
            return;
          }
        }
        response.end();
      };
      response.on('close', () => {
        closedEarly = !response.writableFinished;
      });
      more();
    });
    const result = await sender().send(`${url}/hook`, {}, '{}');
    expect(result).toEqual({ delivered: true, status: 200, error: null, retryable: false });
    await expect.poll(() => closedEarly).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
    expect(RESPONSE_BODY_CAP).toBeLessThanOrEqual(64 * 1024);
  });

  it('does not follow a redirect', async () => {
    const elsewhere = await serve((_request, response) => response.end());
    const { url } = await serve((_request, response) => {
      response.writeHead(307, { location: `${elsewhere.url}/stolen` }).end();
    });
    expect(await sender().send(`${url}/hook`, {}, '{}')).toEqual({
      delivered: false,
      status: 307,
      error: 'redirect (HTTP 307) not followed',
      retryable: false,
    });
    expect(elsewhere.requests()).toBe(0);
  });

  it('refuses a literal private address unless allowed, before connecting', async () => {
    const target = await serve((_request, response) => response.end());
    expect(await sender(false).send(`${target.url}/hook`, {}, '{}')).toEqual({
      delivered: false,
      status: null,
      error: 'refused: the host is 127.0.0.1 (loopback address), which webhooks may not reach',
      retryable: false,
    });
    expect(target.requests()).toBe(0);
    expect((await sender(true).send(`${target.url}/hook`, {}, '{}')).delivered).toBe(true);
  });
});
