import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CARD_CONTENT_SECURITY_POLICY } from '../../src/http/card-serving.js';
import { CONTENT_SECURITY_POLICY } from '../../src/net/security-headers.js';
import { SocketClient } from '../socket/client.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { buildTestHttpServer } from '../support/http-server.js';

/**
 * Any answer can end up opened in a browser tab: a link to an error, a redirected request, a misbehaving
 * client. Whoever writes it — Fastify, the fast read path, the handler of requests no route sees, the
 * socket upgrade — it must carry nosniff and a CSP that lets it load and run nothing, and an error must
 * tell the client what it did wrong, never how the server is built.
 */
const USER = '94490510688792576';
const WRITER = '218486934151479296';
const LIMITED = '381456437152087040';
const GUILD = '300000000000000003';
/** RATE_LIMIT_WRITE: low, so a 429 is two requests away. */
const WRITES_PER_MINUTE = 3;

let harness: Harness;
let base: string;

beforeAll(async () => {
  harness = await startHarness({
    env: { RATE_LIMIT_WRITE: String(WRITES_PER_MINUTE), SOCKETS_PER_IP: '1' },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [USER, WRITER, LIMITED].map((id) => ({
          user: { id, username: `user${id.slice(-3)}` },
          presence: { status: 'online' as const },
        })),
      }),
  });
  base = harness.base;
  await eventually(() => expect(harness.app.view.get(USER)).toBeDefined());
});

afterAll(async () => {
  await harness.close();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function expectSecurityHeaders(answer: Answer, policy = CONTENT_SECURITY_POLICY): void {
  const shown = `${answer.status} ${JSON.stringify(answer.headers)} ${answer.body.slice(0, 300)}`;
  expect(answer.headers['x-content-type-options'], shown).toBe('nosniff');
  expect(answer.headers['content-security-policy'], shown).toBe(policy);
}

/** An error in the envelope, whose message says nothing of stacks, files or the libraries underneath. */
function expectCleanError(answer: Answer, status: number): void {
  expect(answer.status, answer.body).toBe(status);
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
  const body = JSON.parse(answer.body) as { success: boolean; error: { code: string; message: string } };
  expect(body).toEqual({ success: false, error: { code: expect.any(String), message: expect.any(String) } });
  expect(body.error.message).not.toMatch(/\bat .*:\d+|\.ts\b|\.js\b|node_modules|Error:|SQLITE|FST_/);
}

async function get(path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`${base}${path}`, init);
  return {
    status: response.status,
    headers: Object.fromEntries(response.headers),
    body: await response.text(),
  };
}

/** Bytes written to a fresh connection as they are; the first answer, read until the server closes. */
function raw(request: string): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? text.length);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0),
        headers,
        body: text.slice(split + 4, split + 4 + length),
      });
    });
  });
}

const upgrade = (path: string, headers: string[] = []) =>
  raw(
    [
      `GET ${path} HTTP/1.1`,
      'Host: localhost',
      'Connection: Upgrade',
      'Upgrade: websocket',
      ...headers,
      '',
      '',
    ].join('\r\n'),
  );
const WS_HANDSHAKE = ['Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];

describe('answers written by Fastify', () => {
  it.each([
    ['a presence read answered outside Fastify', `/v1/users/${USER}`],
    ['history', `/v1/users/${USER}/history`],
    ['stats', `/v1/users/${USER}/stats`],
    ['top tracks', `/v1/users/${USER}/top-tracks`],
    ['the version', '/v1/version'],
  ])('%s: 200 with the headers', async (_what, path) => {
    const answer = await get(path);
    expect(answer.status).toBe(200);
    expectSecurityHeaders(answer);
  });

  it('a HEAD of a presence (Fastify) carries what the same GET (fast path) carries', async () => {
    const answer = await get(`/v1/users/${USER}`, { method: 'HEAD' });
    expect(answer.status).toBe(200);
    expectSecurityHeaders(answer);
  });

  it('a CORS preflight', async () => {
    const answer = await get(`/v1/users/@me/kv/theme`, {
      method: 'OPTIONS',
      headers: { origin: 'https://example.com', 'access-control-request-method': 'PUT' },
    });
    expect(answer.status).toBe(204);
    expectSecurityHeaders(answer);
  });

  it('the card keeps its own policy, which lets it draw its inline images and styles', async () => {
    const answer = await get(`/v1/users/${USER}/card.svg`);
    expect(answer.status).toBe(200);
    expectSecurityHeaders(answer, CARD_CONTENT_SECURITY_POLICY);
  });

  it.each([
    ['an unknown route', '/nope', 404],
    ['a user not monitored', '/v1/users/123456789012345678', 404],
    ['an id that is not one', '/v1/users/abc', 400],
    ['a query option out of its rule', `/v1/users/${USER}/top-tracks?limit=x`, 400],
    [
      'a card option out of its rule, to a client asking for JSON',
      `/v1/users/${USER}/card.svg?theme=neon`,
      400,
    ],
  ])('%s: a clean error with the headers', async (what, path, status) => {
    const answer = await get(path, what.includes('JSON') ? { headers: { accept: 'application/json' } } : {});
    expectCleanError(answer, status);
    expectSecurityHeaders(answer);
  });

  it('KV writes refused for their key, size and type', async () => {
    const key = await insertApiKey(harness.app.store, WRITER);
    const put = (headers: Record<string, string>, body: string) =>
      get(`/v1/users/@me/kv/mood`, { method: 'PUT', headers, body });
    for (const [answer, status] of [
      [await put({}, 'x'), 401],
      [await put({ authorization: key }, 'x'.repeat(200 * 1024)), 413],
      [
        await get('/v1/users/@me/kv', {
          method: 'PATCH',
          headers: { authorization: key, 'content-type': 'image/png' },
          body: 'x',
        }),
        415,
      ],
    ] as const) {
      expectCleanError(answer, status);
      expectSecurityHeaders(answer);
    }
  });

  it('a rate-limited write', async () => {
    const key = await insertApiKey(harness.app.store, LIMITED);
    const put = () =>
      get('/v1/users/@me/kv/mood', { method: 'PUT', headers: { authorization: key }, body: 'x' });
    for (let i = 0; i < WRITES_PER_MINUTE; i++) expect((await put()).status).toBe(204);
    const answer = await put();
    expectCleanError(answer, 429);
    expectSecurityHeaders(answer);
  });

  it('a failure inside: 500 that names nothing of the cause', async () => {
    // What a store that cannot write looks like from inside: a driver error naming the file.
    const spy = vi.spyOn(harness.app.store.history, 'stats').mockRejectedValueOnce(
      Object.assign(new Error('SQLITE_IOERR: disk I/O error in /var/lib/presently/presently.db'), {
        code: 'SQLITE_IOERR',
      }),
    );
    try {
      const answer = await get(`/v1/users/${USER}/stats`);
      expectCleanError(answer, 500);
      expect(answer.body).not.toContain('presently.db');
      expectSecurityHeaders(answer);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('answers written outside Fastify', () => {
  it.each([
    [
      'a broken URL encoding (a framework error)',
      'GET /v1/users/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      400,
    ],
    ['a request line that is not HTTP (the HTTP parser)', 'GARBAGE\r\n\r\n', 400],
    ['headers over the cap', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ])('%s', async (_what, request, status) => {
    const answer = await raw(request);
    expectCleanError(answer, status);
    expectSecurityHeaders(answer);
  });

  it('upgrades that do not become sockets: no socket there, not a handshake', async () => {
    for (const [answer, status] of [
      [await upgrade('/nope', WS_HANDSHAKE), 404],
      [await upgrade('/socket', ['Sec-WebSocket-Version: 13']), 400],
    ] as const) {
      expectCleanError(answer, status);
      expectSecurityHeaders(answer);
    }
  });

  it('an upgrade over SOCKETS_PER_IP', async () => {
    const open = await SocketClient.connect(base);
    try {
      const answer = await upgrade('/socket', WS_HANDSHAKE);
      expectCleanError(answer, 429);
      expectSecurityHeaders(answer);
    } finally {
      open.ws.close();
      await open.closedWith();
    }
  });
});

describe('errors with a client status from the code underneath', () => {
  it("are a 400 that does not repeat the error's own message", async () => {
    const app = await buildTestHttpServer();
    // Fastify gives a body stream's errors status 400 and keeps their message: this is one such error.
    app.get('/stream-failed', async () => {
      throw Object.assign(new Error('inflate failed at /srv/presently/node_modules/minizlib/index.js:154'), {
        statusCode: 400,
      });
    });
    try {
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const response = await fetch(`${url}/stream-failed`);
      const answer = {
        status: response.status,
        headers: Object.fromEntries(response.headers),
        body: await response.text(),
      };
      expectCleanError(answer, 400);
      expect(answer.body).not.toContain('inflate');
      expectSecurityHeaders(answer);
    } finally {
      await app.close();
    }
  });
});
