import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import { buildHttpServer } from '../../src/http/server.js';
import { ApiKeyService } from '../../src/keys/service.js';
import { DEFAULT_KV_MAX_BYTES } from '../../src/kv/rules.js';
import { KvService } from '../../src/kv/service.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry, type PresenceView } from '../../src/presence/registry/registry.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { readVersionInfo } from '../../src/version.js';

const ALICE = { id: '80351110224678912', username: 'alice', global_name: 'Alice', avatar: null };
const GUILD = '100000000000000001';

let app: FastifyInstance;
let base: string;
const registry = new PresenceRegistry({
  cdnUrl: 'https://cdn.discordapp.com',
  youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
});
/** Throws for one id, to show what an unexpected failure looks like from outside. */
const BROKEN_ID = '666';
const view: PresenceView = {
  get size() {
    return registry.size;
  },
  get(userId) {
    if (userId === BROKEN_ID) throw new Error('secret internal detail');
    return registry.get(userId);
  },
  body(userId) {
    if (userId === BROKEN_ID) throw new Error('secret internal detail');
    return registry.body(userId);
  },
};

beforeAll(async () => {
  registry.memberSeen(GUILD, ALICE, {
    status: 'online',
    activities: [],
    client_status: { desktop: 'online' },
  });
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  app = await buildHttpServer({
    view,
    keys: new ApiKeyService(store.apiKeys),
    kv: new KvService(store.kv, new LocalBus(), DEFAULT_KV_MAX_BYTES),
    history: store.history,
    version: readVersionInfo(),
    logger: pino({ level: 'silent' }),
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await app.close();
});

async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
}

describe('GET /v1/users/:id', () => {
  it('answers the presence in the envelope, with CORS', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const body = (await response.json()) as { success: boolean; data: Record<string, unknown> };
    expect(body.success).toBe(true);
    expect(body.data).toMatchObject({
      discord_user: { id: ALICE.id, username: 'alice' },
      discord_status: 'online',
      active_on_discord_desktop: true,
      kv: {},
      member_since: 1439227597529,
    });
  });

  it('answers a HEAD like the GET without a body', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });

  it('404 user_not_monitored for a valid id nobody shares a server with', async () => {
    await expectError(await fetch(`${base}/v1/users/123456789012345678`), 404, 'user_not_monitored');
  });

  it('says "the bot" in user_not_monitored when no gateway has named it (an API node)', async () => {
    const response = await fetch(`${base}/v1/users/123456789012345678`);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toBe(
      'User 123456789012345678 is not being monitored by Presently: join a server the bot is in',
    );
  });

  it.each(['abc', '12a', '123456789012345678901', '18446744073709551616', '-5', '%20', '@you'])(
    '400 invalid_user_id for %j',
    async (id) => {
      await expectError(await fetch(`${base}/v1/users/${id}`), 400, 'invalid_user_id');
    },
  );

  it('accepts the largest 64-bit id', async () => {
    await expectError(await fetch(`${base}/v1/users/18446744073709551615`), 404, 'user_not_monitored');
  });

  it('500 internal_error as JSON, without leaking the cause', async () => {
    const response = await fetch(`${base}/v1/users/${BROKEN_ID}`);
    const text = await response.clone().text();
    expect(text).not.toContain('secret internal detail');
    await expectError(response, 500, 'internal_error');
  });
});

describe('unknown routes and methods', () => {
  it.each([
    ['POST', '/'],
    ['GET', '/nope'],
    ['GET', '/v1/users/1/unknown'],
    ['POST', `/v1/users/${ALICE.id}`],
    ['DELETE', '/v1/version'],
  ])('%s %s → 404 not_found', async (method, path) => {
    await expectError(await fetch(`${base}${path}`, { method }), 404, 'not_found');
  });

  it('answers a malformed URL in JSON, not as an HTML page', async () => {
    const { status, body, headers } = await rawRequest('GET', '/v1/users/%E0%A4%A');
    expect(status).toBeLessThan(500);
    expect(headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(body).success).toBe(false);
  });

  it('answers a request body on a GET without failing', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/xml' },
      body: '<x/>',
    });
    expect(response.status).toBeLessThan(500);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });
});

describe('CORS', () => {
  it('preflight echoes the requested headers and allows the API methods', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}/kv/theme`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://example.com',
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(response.status).toBeLessThan(300);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-headers')).toBe('authorization,content-type');
    expect(response.headers.get('access-control-allow-methods')).toContain('PUT');
    expect(response.headers.get('access-control-allow-methods')).toContain('PATCH');
    expect(response.headers.get('access-control-allow-methods')).toContain('DELETE');
  });
});

describe('GET /v1/version', () => {
  it("serves package.json's version and the changelog, newest first", async () => {
    const response = await fetch(`${base}/v1/version`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      data: { version: string; changelog: { version: string; date: string; changes: string[] }[] };
    };
    const info = readVersionInfo();
    expect(body.data.version).toBe(info.version);
    expect(body.data.changelog[0]?.version).toBe(info.version);
    expect(body.data.changelog[0]?.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(body.data.changelog[0]?.changes.length).toBeGreaterThan(0);
  });

  it('answers in the envelope, as JSON, with CORS', async () => {
    const response = await fetch(`${base}/v1/version`);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(await response.json()).toEqual({
      success: true,
      data: { version: readVersionInfo().version, changelog: expect.any(Array) },
    });
  });
});

/** A request written byte for byte: `line` is the request line, then headers, then an optional body. */
const wire = (line: string, headers: string[] = [], body = '') =>
  `${[line, 'Host: localhost', 'Connection: close', ...headers].join('\r\n')}\r\n\r\n${body}`;

describe('no request shape gets a 5xx or anything but the JSON envelope', () => {
  const id = ALICE.id;
  it.each([
    // paths
    ['a trailing slash', wire('GET /v1/users/ HTTP/1.1')],
    ['a double slash', wire(`GET //v1/users/${id} HTTP/1.1`)],
    ['a trailing slash after the id', wire(`GET /v1/users/${id}/ HTTP/1.1`)],
    ['a NUL byte', wire('GET /v1/users/%00 HTTP/1.1')],
    ['path traversal', wire('GET /v1/users/..%2f..%2fetc%2fpasswd HTTP/1.1')],
    ['a 2,000-digit id', wire(`GET /v1/users/${'9'.repeat(2000)} HTTP/1.1`)],
    ['a bad escape in the query', wire(`GET /v1/users/${id}?x=%zz HTTP/1.1`)],
    ['a repeated query parameter', wire(`GET /v1/users/${id}?id=1&id=2 HTTP/1.1`)],
    ['a bad escape in the path', wire('GET /% HTTP/1.1')],
    ['non-ASCII digits', wire('GET /v1/users/%D9%A1%D9%A2 HTTP/1.1')],
    ['an exponent', wire('GET /v1/users/1e3 HTTP/1.1')],
    ['hexadecimal', wire('GET /v1/users/0x10 HTTP/1.1')],
    ['a sign', wire('GET /v1/users/+1 HTTP/1.1')],
    ['upper-case route', wire('GET /v1/VERSION HTTP/1.1')],
    ['the asterisk form', wire('GET * HTTP/1.1')],
    ['the absolute form', wire('GET http://example.com/v1/version HTTP/1.1')],
    ['HTTP/1.0', wire(`GET /v1/users/${id} HTTP/1.0`)],
    // methods
    ['PUT on a presence', wire(`PUT /v1/users/${id} HTTP/1.1`, ['Content-Length: 2'], '{}')],
    ['DELETE on a presence', wire(`DELETE /v1/users/${id} HTTP/1.1`)],
    ['PATCH on the version', wire('PATCH /v1/version HTTP/1.1', ['Content-Length: 0'])],
    ['a WebDAV method', wire(`PROPFIND /v1/users/${id} HTTP/1.1`)],
    ['a method HTTP does not know', wire(`FOO /v1/users/${id} HTTP/1.1`)],
    ['OPTIONS that is not a preflight', wire(`OPTIONS /v1/users/${id} HTTP/1.1`)],
    ['OPTIONS with an origin only', wire('OPTIONS /v1/version HTTP/1.1', ['Origin: https://example.com'])],
    ['HEAD of an unknown user', wire('HEAD /v1/users/1 HTTP/1.1')],
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n'],
    // headers
    ['Accept: text/html', wire(`GET /v1/users/${id} HTTP/1.1`, ['Accept: text/html'])],
    ['Accept: application/xml', wire('GET /v1/users/1 HTTP/1.1', ['Accept: application/xml'])],
    [
      'a JSON body that is not JSON',
      wire(`GET /v1/users/${id} HTTP/1.1`, ['Content-Type: application/json', 'Content-Length: 2'], '{x'),
    ],
    ['a bad chunked body', wire(`GET /v1/users/${id} HTTP/1.1`, ['Transfer-Encoding: chunked'], 'zz\r\n')],
    ['Content-Length that is not a number', wire(`GET /v1/users/${id} HTTP/1.1`, ['Content-Length: abc'])],
    ['two Content-Lengths', wire(`GET /v1/users/${id} HTTP/1.1`, ['Content-Length: 1', 'Content-Length: 2'])],
    ['a header line without a colon', wire(`GET /v1/users/${id} HTTP/1.1`, ['Bad Header Line'])],
    ['20 KB of headers', wire(`GET /v1/users/${id} HTTP/1.1`, [`X-Big: ${'a'.repeat(20_000)}`])],
    ['Origin: null', wire(`GET /v1/users/${id} HTTP/1.1`, ['Origin: null'])],
    ['Range', wire(`GET /v1/users/${id} HTTP/1.1`, ['Range: bytes=0-1'])],
    ['If-None-Match: *', wire(`GET /v1/users/${id} HTTP/1.1`, ['If-None-Match: *'])],
    ['an empty Authorization', wire('GET /v1/users/@me HTTP/1.1', ['Authorization: '])],
  ])('%s', async (_what, request) => {
    const response = await rawExchange(request);
    expect(response.status, response.text).toBeGreaterThanOrEqual(200);
    expect(response.status, response.text).toBeLessThan(500);
    expect(response.headers['access-control-allow-origin'], response.text).toBe('*');
    expect(response.headers['x-content-type-options'], response.text).toBe('nosniff');
    // A 204 (OPTIONS), a 304 (If-None-Match) and a HEAD have no body to be JSON.
    if (response.status === 204 || response.status === 304 || request.startsWith('HEAD ')) {
      expect(response.body).toBe('');
      return;
    }
    expect(response.headers['content-type'], response.text).toBe('application/json; charset=utf-8');
    const body = JSON.parse(response.body) as {
      success: unknown;
      error?: { code: unknown; message: unknown };
    };
    expect(typeof body.success).toBe('boolean');
    if (body.success === false) {
      expect(body.error).toEqual({ code: expect.any(String), message: expect.any(String) });
    }
  });
});

/** Writes `request` on a fresh connection and reads the answer until the server closes it. */
function rawExchange(
  request: string,
): Promise<{ status: number; headers: Record<string, string>; body: string; text: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = split === -1 ? text : text.slice(0, split);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
      // Only the first answer: a body the route never read may be refused after it, in a second one.
      const rest = Buffer.from(split === -1 ? '' : text.slice(split + 4));
      const length =
        headers['content-length'] === undefined ? rest.length : Number(headers['content-length']);
      resolve({ status, headers, body: rest.subarray(0, length).toString('utf8'), text });
    });
  });
}

/** fetch() normalizes URLs; this sends the path byte for byte. */
function rawRequest(
  method: string,
  path: string,
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}
