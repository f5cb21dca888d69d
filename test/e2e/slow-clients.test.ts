import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_HEADER_BYTES } from '../../src/http/timeouts.js';
import { SocketClient } from '../socket/client.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { lastJsonBody, RawConnection, statusLines } from '../support/raw-http.js';

/**
 * Clients that hold connections open by being slow on purpose (slowloris: headers a line at a time; a
 * body that trickles or never ends) are cut off by the server, while everyone else keeps being answered.
 * The timeouts are shortened through their configuration variables so the test sees them act; the
 * defaults are the same code with larger numbers.
 */

const GUILD = '400000000000000001';
const USER = '80351110224678912';
const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_000;
const KEEP_ALIVE_TIMEOUT_MS = 1_500;
const KIB = 1024;

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    env: {
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
    },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Slow Guild',
        members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
      }),
  });
  await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(true));
});

afterAll(async () => {
  await h?.close();
});

/** The contract's envelope for a request the server gave up on. */
function expectTimedOutAnswer(text: string): void {
  expect(statusLines(text)).toEqual(['HTTP/1.1 408 Request Timeout']);
  expect(lastJsonBody(text)).toEqual({
    success: false,
    error: { code: 'bad_request', message: expect.any(String) },
  });
}

/** Meanwhile, ordinary clients: a presence read (the fast path) and a Fastify route, back to back. */
async function ordinaryTraffic(until: () => boolean): Promise<number> {
  let answered = 0;
  while (!until()) {
    const [presence, version] = await Promise.all([
      fetch(`${h.base}/v1/users/${USER}`),
      fetch(`${h.base}/v1/version`),
    ]);
    expect(presence.status).toBe(200);
    expect(version.status).toBe(200);
    await Promise.all([presence.arrayBuffer(), version.arrayBuffer()]);
    answered += 2;
  }
  return answered;
}

describe('slow clients', () => {
  it('cuts off clients that send headers a line at a time (slowloris) while others are answered', async () => {
    const started = Date.now();
    const slow = await Promise.all(Array.from({ length: 30 }, () => RawConnection.open(h.base)));
    for (const [index, connection] of slow.entries()) {
      await connection.write(`GET /v1/users/${USER} HTTP/1.1\r\nHost: presently\r\n`);
      let line = 0;
      // Each line arrives well within any per-read timeout: only a deadline for the whole can stop this.
      connection.startTrickle(200, () => `X-Slow-${index}-${line++}: still coming\r\n`);
    }
    // And one that connects and says nothing at all.
    const silent = await RawConnection.open(h.base);
    const all = [...slow, silent];

    const answered = await ordinaryTraffic(() => all.every((connection) => connection.isClosed));
    expect(answered).toBeGreaterThan(10);

    // Not before the headers timeout, and cut by it (a 408, not a close for any other reason).
    const closedAt = await Promise.all(all.map((connection) => connection.closed));
    for (const at of closedAt) expect(at - started).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    for (const connection of all) expectTimedOutAnswer(connection.text);
  });

  it('cuts off a KV write whose body trickles in, and writes nothing', async () => {
    const key = await insertApiKey(h.app.store, USER);
    const started = Date.now();
    const slow = await RawConnection.open(h.base);
    await slow.write(
      `PUT /v1/users/@me/kv/slow HTTP/1.1\r\nHost: presently\r\nAuthorization: ${key}\r\n` +
        'Content-Type: text/plain\r\nContent-Length: 1000\r\n\r\n',
    );
    slow.startTrickle(100, () => 'x');

    // A write at normal speed, meanwhile, is accepted.
    const normal = await fetch(`${h.base}/v1/users/@me/kv/normal`, {
      method: 'PUT',
      headers: { authorization: key },
      body: 'on time',
    });
    expect(normal.status).toBe(204);
    const answered = await ordinaryTraffic(() => slow.isClosed);
    expect(answered).toBeGreaterThan(10);

    expect((await slow.closed) - started).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expectTimedOutAnswer(slow.text);
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({ normal: 'on time' });
  });

  it('answers a read that carries an endless body, then cuts the connection, with one answer only', async () => {
    const endless = await RawConnection.open(h.base);
    await endless.write(
      `GET /v1/users/${USER} HTTP/1.1\r\nHost: presently\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    endless.startTrickle(100, () => '10\r\nxxxxxxxxxxxxxxxx\r\n');
    await endless.waitFor(/"discord_status":"online"/);

    await endless.closed;
    // The presence, and nothing after it: a second status line would be read as the answer to a request
    // the client never sent.
    expect(statusLines(endless.text)).toEqual(['HTTP/1.1 200 OK']);
    expect(lastJsonBody(endless.text)).toMatchObject({ success: true, data: { discord_status: 'online' } });
  });

  it('keeps an idle connection alive for HTTP_KEEP_ALIVE_TIMEOUT_MS, then closes it', async () => {
    const connection = await RawConnection.open(h.base);
    const request = 'GET /v1/version HTTP/1.1\r\nHost: presently\r\n\r\n';
    await connection.write(request);
    await connection.waitFor(/"changelog"/);
    expect(connection.text).toMatch(/Keep-Alive: timeout=1\r\n/i);
    expect(h.app.http.server.keepAliveTimeout).toBe(KEEP_ALIVE_TIMEOUT_MS);

    // Reused…
    await connection.write(request);
    await eventually(() => expect(statusLines(connection.text)).toHaveLength(2));
    const second = Date.now();

    // …and closed by the server once idle for the timeout, not before.
    expect((await connection.closed) - second).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 200);
  });

  it('leaves sockets open long past the request timeout: a socket is not a slow request', async () => {
    const client = await SocketClient.connect(h.base);
    // A request younger than the socket whose body never ends: once node:http has cut it for the request
    // timeout, it has looked at the older socket too.
    const key = await insertApiKey(h.app.store, USER);
    const younger = await RawConnection.open(h.base);
    await younger.write(
      `PUT /v1/users/@me/kv/never HTTP/1.1\r\nHost: presently\r\nAuthorization: ${key}\r\n` +
        'Content-Type: text/plain\r\nContent-Length: 10\r\n\r\nx',
    );
    await younger.closed;
    expectTimedOutAnswer(younger.text);
    const init = await client.subscribe({ subscribe_to_id: USER });
    expect(init.d).toMatchObject({ discord_status: 'online' });
    await client.close();
  });
});

describe('size caps', () => {
  /** A request whose headers add up to about `bytes`. */
  function withHeaders(requestLine: string, bytes: number, extra = ''): string {
    const lines: string[] = [];
    for (let size = 0, i = 0; size < bytes; i++) {
      const line = `X-Filler-${i}: ${'f'.repeat(200)}\r\n`;
      lines.push(line);
      size += line.length;
    }
    return `${requestLine}\r\nHost: presently\r\n${extra}${lines.join('')}\r\n`;
  }

  it.each([
    ['a presence read', `GET /v1/users/${USER} HTTP/1.1`, ''],
    ['a KV write', 'PUT /v1/users/@me/kv/k HTTP/1.1', 'Content-Length: 1\r\n'],
    ['a socket upgrade', 'GET /socket HTTP/1.1', 'Connection: Upgrade\r\nUpgrade: websocket\r\n'],
  ])('refuses headers over 16 KiB on %s with 431 in the envelope', async (_name, requestLine, extra) => {
    const connection = await RawConnection.open(h.base);
    await connection.write(withHeaders(requestLine, MAX_HEADER_BYTES + KIB, extra));
    await connection.closed;
    expect(statusLines(connection.text)).toEqual(['HTTP/1.1 431 Request Header Fields Too Large']);
    expect(connection.text).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/i);
    expect(lastJsonBody(connection.text)).toEqual({
      success: false,
      error: { code: 'bad_request', message: expect.any(String) },
    });
  });

  it('answers a read whose headers stay under the cap', async () => {
    const connection = await RawConnection.open(h.base);
    await connection.write(withHeaders(`GET /v1/users/${USER} HTTP/1.1`, MAX_HEADER_BYTES - 2 * KIB));
    await connection.waitFor(/"discord_status"/);
    expect(statusLines(connection.text)).toEqual(['HTTP/1.1 200 OK']);
    connection.destroy();
  });

  it.each([
    ['PUT', '/v1/users/@me/kv/huge', 'text/plain'],
    ['PATCH', '/v1/users/@me/kv', 'application/json'],
  ])(
    'refuses a %s declaring a body over its cap at once, without waiting for the body',
    async (method, path, type) => {
      const key = await insertApiKey(h.app.store, USER);
      const connection = await RawConnection.open(h.base);
      await connection.write(
        `${method} ${path} HTTP/1.1\r\nHost: presently\r\nAuthorization: ${key}\r\n` +
          `Content-Type: ${type}\r\nContent-Length: ${1024 * 1024 * 1024}\r\n\r\n{`,
      );
      await connection.closed;
      // Refused, not timed out (a 408): it did not wait for the body.
      expect(statusLines(connection.text)).toEqual(['HTTP/1.1 413 Payload Too Large']);
      expect(lastJsonBody(connection.text)).toMatchObject({ error: { code: 'payload_too_large' } });
    },
  );

  it('leaves unread the body of a route that takes none (DELETE): answered as if it had none', async () => {
    const key = await insertApiKey(h.app.store, USER);
    const response = await fetch(`${h.base}/v1/users/@me/kv/anything`, {
      method: 'DELETE',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ padding: 'p'.repeat(2 * 1024 * 1024) }),
    });
    expect(response.status).toBe(204);
  });
});
