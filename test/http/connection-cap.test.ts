import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REFUSED_LINGER_BYTES, REFUSED_LINGER_MS } from '../../src/http/connection-cap.js';
import { CONTENT_SECURITY_POLICY } from '../../src/net/security-headers.js';
import { SocketClient, terminateAll } from '../socket/client.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { startHttpServer } from '../support/http-server.js';
import { lastJsonBody, RawConnection, statusLines } from '../support/raw-http.js';

const REQUEST = 'GET /v1/version HTTP/1.1\r\nHost: presently\r\n\r\n';
/** Another loopback address (Linux answers on all of 127.0.0.0/8): a second peer on one machine. */
const PROXY_ADDRESS = '127.0.0.2';

const opened: RawConnection[] = [];

async function open(base: string, localAddress?: string, halfOpen = false): Promise<RawConnection> {
  const connection = await RawConnection.open(base, localAddress, halfOpen);
  opened.push(connection);
  return connection;
}

/** A connection that answers a request: opened, asked, answered 200. */
async function served(base: string, localAddress?: string): Promise<RawConnection> {
  const connection = await open(base, localAddress);
  await connection.write(REQUEST);
  await connection.waitFor(/HTTP\/1\.1 200 /);
  return connection;
}

/** The headers of the first answer a connection received, names in lower case. */
function headersOf(text: string): Record<string, string> {
  const lines = text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n').slice(1);
  return Object.fromEntries(
    lines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
}

async function expectRefused(connection: RawConnection, perClient: number): Promise<void> {
  await connection.closed;
  expect(statusLines(connection.text)).toEqual(['HTTP/1.1 503 Service Unavailable']);
  const headers = headersOf(connection.text);
  expect(headers['content-type']).toBe('application/json; charset=utf-8');
  expect(headers.connection).toBe('close');
  expect(headers['access-control-allow-origin']).toBe('*');
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
  expect(lastJsonBody(connection.text)).toEqual({
    success: false,
    error: {
      code: 'too_many_connections',
      message: `at most ${perClient} connections at once per client`,
    },
  });
}

afterEach(async () => {
  for (const connection of opened.splice(0)) connection.destroy();
  await terminateAll();
});

describe('CONNECTIONS_PER_IP', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ env: { CONNECTIONS_PER_IP: '2' } });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('the connection past the cap is answered 503 before it sends anything, and closed; a close makes room', async () => {
    const first = await served(h.base);
    // An idle connection counts as much as a busy one.
    await open(h.base);
    await expectRefused(await open(h.base), 2);

    // A client that sends its request at once still reads the answer, not a reset.
    const eager = await open(h.base);
    await eager.write(REQUEST).catch(() => undefined);
    await expectRefused(eager, 2);

    first.destroy();
    await eventually(() => served(h.base));
  });

  it('a refused connection is read for at most REFUSED_LINGER_MS or REFUSED_LINGER_BYTES, however its client keeps sending', async () => {
    await eventually(async () => {
      await served(h.base);
      await served(h.base);
    });
    // A client that sends a little all the time: an idle timeout alone would never close it.
    const trickling = await open(h.base, undefined, true);
    const openedAt = Date.now();
    trickling.startTrickle(100, () => 'x');
    await expectRefused(trickling, 2);
    expect(Date.now() - openedAt).toBeLessThan(REFUSED_LINGER_MS * 3);
    // A client that streams is cut once it has sent more than the bound.
    const streaming = await open(h.base, undefined, true);
    const chunk = 'x'.repeat(16 * 1024);
    const streamedAt = Date.now();
    streaming.startTrickle(1, () => chunk);
    await streaming.closed;
    expect(Date.now() - streamedAt).toBeLessThan(REFUSED_LINGER_MS);
    expect(statusLines(streaming.text)).toEqual(['HTTP/1.1 503 Service Unavailable']);
    expect(streaming.socket.bytesWritten).toBeGreaterThan(REFUSED_LINGER_BYTES);
    for (const connection of opened.splice(0)) connection.destroy();
  });

  it('a connection that becomes a WebSocket leaves the count; refusals are counted in the metrics', async () => {
    // Until the server has seen the last test's connections close.
    await eventually(() => SocketClient.connect(h.base));
    await eventually(() => SocketClient.connect(h.base));
    await served(h.base);
    await served(h.base);
    await expectRefused(await open(h.base), 2);

    for (const connection of opened.splice(0)) connection.destroy();
    const scrape = await eventually(async () => {
      const connection = await served(h.base);
      await connection.write('GET /metrics HTTP/1.1\r\nHost: presently\r\nConnection: close\r\n\r\n');
      await connection.closed;
      return connection.text;
    });
    const refused = /presently_rate_limited_total\{limit="connections_per_ip"\} (\d+)/.exec(scrape);
    expect(Number(refused?.[1])).toBeGreaterThanOrEqual(3);
  });
});

describe('CONNECTIONS_PER_IP beside a trusted proxy', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ env: { CONNECTIONS_PER_IP: '1', TRUST_PROXY: PROXY_ADDRESS } });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('caps the peers that are clients, never the proxy, which carries many', async () => {
    for (let i = 0; i < 3; i++) await served(h.base, PROXY_ADDRESS);
    await served(h.base);
    await expectRefused(await open(h.base), 1);
  });
});

describe('CONNECTIONS_PER_IP on a node that serves no sockets', () => {
  it('caps connections, and a request with an Upgrade header is answered as any request', async () => {
    const { app, base } = await startHttpServer({ serveApi: false, connectionsPerIp: 1 });
    try {
      const connection = await open(base);
      await connection.write(
        'GET /v1/version HTTP/1.1\r\nHost: presently\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
      );
      await connection.waitFor(/HTTP\/1\.1 200 /);
      await expectRefused(await open(base), 1);
    } finally {
      await app.close();
    }
  });
});

describe('CONNECTIONS_PER_IP and upgrades that are refused', () => {
  let h: Harness;

  beforeAll(async () => {
    // Refusals held long enough to still be held when the next connection comes.
    h = await startHarness({
      env: { CONNECTIONS_PER_IP: '2', SOCKETS_PER_IP: '1' },
      abuseRefusalDelayMs: 60_000,
    });
  });

  afterAll(async () => {
    for (const connection of opened.splice(0)) connection.destroy();
    await h?.close();
  });

  it('counts an upgrade until it is accepted: held refusals take room, and a reset of one is nothing to report', async () => {
    await SocketClient.connect(h.base);
    const upgrade =
      'GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
    // Past SOCKETS_PER_IP: refused, the refusal held.
    const first = await open(h.base);
    await first.write(upgrade);
    const second = await open(h.base);
    await second.write(upgrade);
    await expectRefused(await open(h.base), 2);
    // A client resetting a held refusal ends only that connection; the service goes on.
    first.socket.resetAndDestroy();
    await first.closed;
    await served(h.base);
  });
});

describe('docs/limits.md', () => {
  it('gives the bounds of reading a refused connection the code has', () => {
    const row = readFileSync(new URL('../../docs/limits.md', import.meta.url), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('| ') && line.includes('`REFUSED_LINGER_MS`'));
    expect(row).toContain(
      `for at most ${REFUSED_LINGER_MS / 1000} s and ${REFUSED_LINGER_BYTES / 1024} KiB (\`REFUSED_LINGER_MS\`, \`REFUSED_LINGER_BYTES\`)`,
    );
  });
});
