import { connect } from 'node:net';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { presenceSchema } from '../../src/http/schemas/presence.js';
import { apiKeyFor, BOB, fixtureReady, NOBODY, ALICE as OWNER, seed } from '../socket/fixture.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Property-based: arbitrary HTTP requests — methods, paths, percent-encodings, queries, headers, bodies,
 * framing — written byte for byte to the real service on loopback. Whatever arrives, the answer is never
 * a 5xx, and an error is always the contract's JSON envelope (docs/api.md, "Errors"). Presence
 * reads of a monitored user go through the node:http fast path (src/http/fast-read.ts), everything else
 * through Fastify; both are hit, and a presence that comes back validates against the presence schema.
 */

/** Enough requests to reach every route and parser branch; few enough for a few seconds on 2 cores. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
/** Every answer arrives well within this; a request left hanging is a finding, not a slow test. */
const ANSWER_MS = 5_000;

const ajv = new Ajv({ allErrors: true, allowUnionTypes: true });
const validatePresence = ajv.compile(presenceSchema);

let h: Harness;
let port: number;
let ownerKey: string;
let otherKey: string;

beforeAll(async () => {
  // Limits on but far away: the limiter runs on every request (fast path included) without refusing.
  h = await startHarness({ setup: seed, env: { RATE_LIMIT_READ: '1000000', RATE_LIMIT_WRITE: '1000000' } });
  await fixtureReady(h);
  port = Number(new URL(h.base).port);
  ownerKey = await apiKeyFor(h, OWNER);
  otherKey = await apiKeyFor(h, BOB);
});

afterAll(async () => {
  await h?.close();
});

// ---- requests ------------------------------------------------------------------------------------------

/** Text with the characters that break parsers: controls, NUL, non-ASCII, lone surrogates, separators. */
const nasty = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom(
    '',
    ' ',
    '\t',
    '\0',
    '\r',
    '\n',
    '\r\n',
    '%',
    '%zz',
    '%00',
    '%E0%A4%A',
    '%C0%AF',
    '..',
    '//',
  ),
);
const snowflakeish = fc.oneof(
  fc.constantFrom(OWNER, BOB, NOBODY, '@me', '0', '18446744073709551615', '18446744073709551616', '1e3'),
  fc.bigInt({ min: 0n, max: 10n ** 25n }).map(String),
  nasty,
);
const kvKey = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_]{1,10}$/), fc.constant('a'.repeat(256)), nasty);
/** One path segment as it goes on the wire: as is, percent-encoded, or half-encoded. */
const onWire = (text: fc.Arbitrary<string>) =>
  fc.oneof(
    text.map((value) => value.toWellFormed()),
    text.map((value) => encodeURIComponent(value.toWellFormed())),
  );

const path = fc.oneof(
  { weight: 3, arbitrary: fc.constant(`/v1/users/${OWNER}`) },
  onWire(snowflakeish).map((id) => `/v1/users/${id}`),
  fc
    .tuple(
      onWire(snowflakeish),
      fc.constantFrom('history', 'stats', 'top-tracks', 'card.svg', 'kv', 'kv/', 'unknown', ''),
    )
    .map(([id, tail]) => `/v1/users/${id}/${tail}`),
  fc.tuple(onWire(snowflakeish), onWire(kvKey)).map(([id, key]) => `/v1/users/${id}/kv/${key}`),
  fc.constantFrom('/v1/version', '/v1/users', '/v1/users/', '/socket', '/', '*', '/v1/health', '/metrics'),
  onWire(snowflakeish).map((id) => `/${id}.png`),
  fc.array(onWire(nasty), { maxLength: 4 }).map((segments) => `/${segments.join('/')}`),
  fc.webUrl().map((url) => url), // the absolute form
);
/** A query string; `wire` draws its parts as written on the wire (raw or encoded) rather than encoded. */
const queryOf = (wire: (text: fc.Arbitrary<string>) => fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant('') },
    fc
      .array(
        fc.tuple(
          fc.oneof(fc.constantFrom('limit', 'theme', 'compression', 'id', '__proto__'), wire(nasty)),
          fc.oneof(
            fc.constantFrom(
              '',
              '0',
              '1',
              '-1',
              '999',
              '1.5',
              '1e3',
              'NaN',
              'dark',
              'zlib_json',
              '%zz',
              '%E0%A4',
            ),
            wire(nasty),
          ),
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((pairs) => `?${pairs.map(([key, value]) => `${key}=${value}`).join('&')}`),
  );
const query = queryOf(onWire);
const encodedQuery = queryOf((text) => text.map((value) => encodeURIComponent(value.toWellFormed())));

const method = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'POST') },
  fc.constantFrom('PROPFIND', 'TRACE', 'CONNECT', 'FOO', 'get', 'M-SEARCH', 'PURGE'),
);

const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/merge-patch+json',
  'text/plain',
  'text/plain; charset=latin1',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'image/png',
  '',
  ';;;',
  'application/json; charset',
);
const commonHeader = fc.oneof(
  contentType.map((value) => ['Content-Type', value] as const),
  fc
    .constantFrom('gzip', 'deflate', 'br', 'identity', 'x-nope', 'gzip, gzip')
    .map((value) => ['Content-Encoding', value] as const),
  fc
    .constantFrom('gzip', 'br;q=0', '*', 'identity;q=0', '')
    .map((value) => ['Accept-Encoding', value] as const),
  fc
    .constantFrom('text/html', 'application/json', 'image/svg+xml', '*/*;q=0', 'x/y')
    .map((value) => ['Accept', value] as const),
  fc.constantFrom('owner', 'bearer', 'other', 'garbage', 'empty', 'bearer-empty', 'basic').map(
    (which) =>
      [
        'Authorization',
        {
          owner: () => ownerKey,
          bearer: () => `Bearer ${ownerKey}`,
          other: () => otherKey,
          garbage: () => 'prs_not-a-key',
          empty: () => '',
          'bearer-empty': () => 'Bearer ',
          basic: () => 'Basic dXNlcjpwYXNz',
        }[which](),
      ] as const,
  ),
  fc.constantFrom('*', 'W/"x"', '"nope"').map((value) => ['If-None-Match', value] as const),
  fc.constantFrom('https://example.com', 'null', '').map((value) => ['Origin', value] as const),
  fc.constantFrom('PUT', 'GET', 'FOO', '').map((value) => ['Access-Control-Request-Method', value] as const),
  fc.constantFrom('bytes=0-1', 'bytes=-5', 'lines=1').map((value) => ['Range', value] as const),
  fc.constant(['Expect', '100-continue'] as const),
  fc.constantFrom('keep-alive', 'upgrade', 'close').map((value) => ['Connection', value] as const),
  fc.constantFrom('websocket', 'h2c').map((value) => ['Upgrade', value] as const),
  fc
    .tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/), fc.string({ maxLength: 40 }))
    .map(([name, value]) => [`X-${name}`, value.replace(/[\r\n\0]/g, '')] as const),
);
/** Now and then headers over Node's 16 KiB limit (431). */
const header = fc.oneof(
  { weight: 20, arbitrary: commonHeader },
  fc.constant(['X-Big', 'a'.repeat(20_000)] as const),
);

const body = fc.oneof(
  { weight: 3, arbitrary: fc.constant(Buffer.alloc(0)) },
  fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 })).map(json),
  fc.jsonValue({ maxDepth: 3 }).map(json),
  fc.string({ maxLength: 50 }).map((text) => Buffer.from(text)),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
  fc.constantFrom(129 * 1024, 1024 * 1024 + 1).map((size) => Buffer.alloc(size, 0x61)),
);
/** How the body is framed: as declared, chunked, with a wrong or no length. */
const framing = fc.constantFrom('length', 'length', 'chunked', 'none', 'short', 'nonsense');

interface RawRequest {
  method: string;
  target: string;
  version: string;
  headers: (readonly [string, string])[];
  body: Buffer;
  framing: string;
}

/** Anything: every part drawn from its whole range, most requests malformed somewhere. */
const anyRequest: fc.Arbitrary<RawRequest> = fc.record({
  method,
  target: fc.tuple(path, query).map(([p, q]) => `${p}${q}`),
  version: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 x', 'HTTP/1.1\0'),
  headers: fc.array(header, { maxLength: 5 }),
  body,
  framing,
});

/** Requests a client could mean: valid HTTP, the API's own routes and methods, odd values inside. */
const readTarget = fc.oneof(
  { weight: 3, arbitrary: fc.constant(`/v1/users/${OWNER}`) },
  fc.constantFrom(OWNER, BOB, NOBODY, '@me').map((id) => `/v1/users/${id}`),
  fc
    .tuple(
      fc.constantFrom(OWNER, '@me', BOB, NOBODY),
      fc.constantFrom('history', 'stats', 'top-tracks', 'card.svg'),
    )
    .map(([id, tail]) => `/v1/users/${id}/${tail}`),
  fc.constant('/v1/version'),
);
const kvKeyTarget = fc
  .tuple(fc.constantFrom(OWNER, '@me', '@me', BOB), fc.stringMatching(/^[A-Za-z0-9_]{1,12}$/))
  .map(([id, key]) => `/v1/users/${id}/kv/${key}`);
const kvTarget = fc.constantFrom(OWNER, '@me', '@me', BOB).map((id) => `/v1/users/${id}/kv`);
/** What a client means: a route's own method, valid HTTP; odd values and headers inside. */
const meant = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('GET', 'GET', 'HEAD', 'OPTIONS'), readTarget) },
  fc.tuple(fc.constantFrom('PUT', 'DELETE', 'OPTIONS'), kvKeyTarget),
  fc.tuple(fc.constantFrom('PATCH', 'PATCH', 'OPTIONS'), kvTarget),
);

/** Requests a client could mean: valid HTTP, the API's own routes and methods, odd values inside. */
const plausibleRequest: fc.Arbitrary<RawRequest> = fc
  .record({
    meant: fc.tuple(meant, encodedQuery),
    headers: fc
      .tuple(
        fc.constantFrom('owner', 'owner', 'bearer', 'other', null),
        fc.array(commonHeader, { maxLength: 2 }),
      )
      .map(([auth, rest]) => {
        const key = auth === 'owner' ? ownerKey : auth === 'bearer' ? `Bearer ${ownerKey}` : otherKey;
        return [...(auth ? [['Authorization', key] as const] : []), ...rest];
      }),
    body: fc.oneof(
      fc
        .dictionary(fc.stringMatching(/^[A-Za-z0-9_]{1,8}$/), fc.string({ maxLength: 30 }), { maxKeys: 3 })
        .map(json),
      body,
    ),
    framing: fc.constantFrom('length', 'length', 'length', 'chunked'),
  })
  .map(({ meant: [[method, path], q], headers, ...rest }) => ({
    method,
    target: `${path}${q}`,
    version: 'HTTP/1.1',
    // A PATCH says it is JSON, unless a drawn Content-Type says otherwise.
    headers:
      method === 'PATCH' && !headers.some(([name]) => name === 'Content-Type')
        ? [...headers, ['Content-Type', 'application/json'] as const]
        : headers,
    ...rest,
  }));

const request = fc.oneof({ weight: 3, arbitrary: plausibleRequest }, { weight: 2, arbitrary: anyRequest });

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function encode(r: RawRequest): Buffer {
  const lines = [`${r.method} ${r.target} ${r.version}`, 'Host: localhost'];
  for (const [name, value] of r.headers) lines.push(`${name}: ${value}`);
  if (!r.headers.some(([name]) => name === 'Connection')) lines.push('Connection: close');
  let payload = r.body;
  switch (r.framing) {
    case 'length':
      lines.push(`Content-Length: ${payload.length}`);
      break;
    case 'short':
      lines.push(`Content-Length: ${Math.max(payload.length - 1, 0)}`);
      break;
    case 'nonsense':
      lines.push('Content-Length: 12abc');
      break;
    case 'chunked':
      lines.push('Transfer-Encoding: chunked');
      payload = Buffer.concat([
        Buffer.from(payload.length > 0 ? `${payload.length.toString(16)}\r\n` : ''),
        payload,
        Buffer.from(payload.length > 0 ? '\r\n0\r\n\r\n' : '0\r\n\r\n'),
      ]);
      break;
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
}

// ---- answers -------------------------------------------------------------------------------------------

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** Everything the server wrote on the connection, for failure messages. */
  wire: string;
}

/**
 * Writes the request and reads the first final answer (1xx interim answers skipped; an answer to HEAD has
 * no body). Resolves once it is whole, or with null when the server closed without answering.
 */
function exchange(bytes: Buffer, answersHead: boolean): Promise<RawResponse | null> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (result: RawResponse | null | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const timer = setTimeout(
      () => finish(new Error(`no whole answer within ${ANSWER_MS} ms: ${received.toString('latin1')}`)),
      ANSWER_MS,
    );
    const parse = (closed: boolean): void => {
      let offset = 0;
      for (;;) {
        const end = received.indexOf('\r\n\r\n', offset);
        if (end < 0) break;
        const head = received.subarray(offset, end).toString('latin1');
        const [statusLine = '', ...lines] = head.split('\r\n');
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
        const headers: Record<string, string> = {};
        for (const line of lines) {
          const colon = line.indexOf(':');
          if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        if (status >= 100 && status < 200 && status !== 101) {
          offset = end + 4;
          continue;
        }
        const rest = received.subarray(end + 4);
        const wire = received.toString('latin1');
        const length = headers['content-length'];
        if (length !== undefined && rest.length >= Number(length)) {
          finish({ status, headers, body: rest.subarray(0, Number(length)), wire });
        } else if (answersHead || status === 101 || status === 204 || status === 304) {
          finish({ status, headers, body: Buffer.alloc(0), wire });
        } else if (closed && length === undefined) {
          finish({ status, headers, body: rest, wire });
        } else if (closed) {
          finish(new Error(`the answer was cut short: ${wire}`));
        }
        return;
      }
      if (closed)
        finish(received.length === 0 ? null : new Error(`not HTTP: ${received.toString('latin1')}`));
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      parse(false);
    });
    socket.on('error', () => parse(true));
    socket.on('close', () => parse(true));
    socket.on('connect', () => socket.write(bytes));
  });
}

function check(r: RawRequest, response: RawResponse | null): void {
  const shown = `${encode(r).toString('latin1').slice(0, 600)}\n--- answer ---\n${response?.wire.slice(0, 600)}`;
  // Node cuts a CONNECT nobody handles without a word, as it should; everything else gets an answer.
  if (response === null) {
    expect(r.method, `no answer to:\n${shown}`).toBe('CONNECT');
    return;
  }
  expect(response.status, shown).toBeGreaterThanOrEqual(101);
  expect(response.status, shown).toBeLessThan(500);
  if (response.status === 101) return; // a WebSocket upgrade at /socket: the socket tests take it from there
  expect(response.headers['access-control-allow-origin'], shown).toBe('*');
  expect(response.headers['x-content-type-options'], shown).toBe('nosniff');
  const bodyless = r.method === 'HEAD' || response.status === 204 || response.status === 304;
  if (bodyless) return;
  if (response.status >= 300 && response.status < 400) {
    // The avatar quick links (/:id.png of a monitored user) and /discord: only where to go.
    expect(response.headers.location, shown).toMatch(/^https?:\/\//);
    return;
  }
  const type = response.headers['content-type'];
  if (response.status >= 400 || type?.startsWith('application/json')) {
    expect(type, shown).toBe('application/json; charset=utf-8');
    const envelope = JSON.parse(response.body.toString('utf8')) as {
      success: boolean;
      data?: { discord_user?: unknown };
      error?: unknown;
    };
    if (response.status >= 400) {
      expect(envelope, shown).toEqual({
        success: false,
        error: { code: expect.any(String), message: expect.any(String) },
      });
    } else {
      expect(envelope.success, shown).toBe(true);
      if (envelope.data?.discord_user !== undefined && !validatePresence(envelope.data)) {
        expect.fail(`${ajv.errorsText(validatePresence.errors)}\n${shown}`);
      }
    }
  } else if (type?.startsWith('text/html')) {
    // The landing page: `/` (or its absolute form) asked for by a browser.
    expect(new URL(r.target, 'http://localhost').pathname, shown).toBe('/');
    expect(
      r.headers.some(([name, value]) => name === 'Accept' && value === 'text/html'),
      shown,
    ).toBe(true);
  } else if (type?.startsWith('text/plain')) {
    // Prometheus's text format: `/metrics`, open while no METRICS_TOKEN is set.
    expect(new URL(r.target, 'http://localhost').pathname, shown).toBe('/metrics');
    expect(response.status, shown).toBe(200);
  } else {
    // The card is the only other success that is not JSON.
    expect(type, shown).toMatch(/^image\/svg\+xml/);
  }
}

describe('arbitrary HTTP requests', () => {
  it('never get a 5xx, and every error is the JSON envelope', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        check(r, await exchange(encode(r), r.method === 'HEAD'));
      }),
      { numRuns: RUNS },
    );
    // And the service is still itself: the fast path serves the monitored user.
    const response = await fetch(`${h.base}/v1/users/${OWNER}`);
    expect(response.status).toBe(200);
    expect(validatePresence(((await response.json()) as { data: unknown }).data)).toBe(true);
  });
});
