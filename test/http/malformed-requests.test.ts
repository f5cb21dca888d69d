import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../support/http-server.js';
import { RawConnection } from '../support/raw-http.js';

/**
 * Requests node:http would answer by itself, outside any route: each is answered in the contract's
 * envelope, a JSON body a client can read, and its connection closes.
 */
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  ({ app, base } = await startHttpServer());
});

afterAll(async () => {
  await app?.close();
});

/** Sends `request` on a connection of its own; resolves with the answer's status, headers and JSON body. */
async function send(request: string): Promise<{ status: number; head: string; body: unknown }> {
  const connection = await RawConnection.open(base);
  await connection.write(request);
  await connection.closed;
  const text = connection.text;
  const split = text.indexOf('\r\n\r\n');
  return {
    status: Number(text.slice(9, 12)),
    head: text.slice(0, split).toLowerCase(),
    body: JSON.parse(text.slice(split + 4)),
  };
}

describe('a request node:http refuses', () => {
  it.each([
    ['an HTTP/1.1 request without Host', 'GET /v1/version HTTP/1.1\r\n\r\n', 400],
    ['a write without Host', 'PUT /v1/users/@me/kv/a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello', 400],
    [
      'an Expect other than 100-continue',
      'GET /v1/version HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n',
      417,
    ],
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n', 400],
    ['headers over the cap', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ])('%s is answered in the envelope, and its connection closes', async (_what, request, status) => {
    const answer = await send(request);
    expect(answer.status).toBe(status);
    expect(answer.head).toContain('content-type: application/json');
    expect(answer.head).toContain('connection: close');
    expect(answer.body).toEqual({
      success: false,
      error: { code: 'bad_request', message: expect.any(String) },
    });
  });

  it('an HTTP/1.0 request needs no Host', async () => {
    const answer = await send('GET /v1/version HTTP/1.0\r\n\r\n');
    expect(answer.status).toBe(200);
  });
});
