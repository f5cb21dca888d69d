import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { refusedUpgrade, SocketClient, socketUrl, terminateAll } from '../socket/client.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * Behind a reverse proxy every request comes from the proxy's address; the client is the one the proxy
 * names in X-Forwarded-For, when (and only when) TRUST_PROXY says to believe it. Every per-client limit
 * and every log line about a request go by that client.
 */
const USER = '80351110224678912';
const GUILD = '300000000000000001';
const READS = 2;

interface Started {
  h: Harness;
  /** Every log line the app wrote, parsed. */
  lines: Record<string, unknown>[];
}

async function start(env: Record<string, string>): Promise<Started> {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const h = await startHarness({
    env: { RATE_LIMIT_READ: String(READS), SOCKETS_PER_IP: '1', ...env },
    logger,
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
      }),
  });
  await eventually(() => expect(h.app.view.get(USER)).toBeDefined());
  return { h, lines };
}

/** The status of a read sent as `client` (through a proxy that says so in X-Forwarded-For). */
async function read(h: Harness, path: string, client: string): Promise<number> {
  const response = await fetch(`${h.base}${path}`, { headers: { 'x-forwarded-for': client } });
  await response.arrayBuffer();
  return response.status;
}

/** The presence read answered outside Fastify, and a read Fastify answers. */
const FAST = `/v1/users/${USER}`;
const ROUTED = '/v1/version';

/** A request that fails inside (500), so the service logs a line about it. */
async function failingRequest(h: Harness, client: string): Promise<void> {
  const spy = vi.spyOn(h.app.store.history, 'stats').mockRejectedValueOnce(new Error('store away'));
  try {
    expect(await read(h, `/v1/users/${USER}/stats`, client)).toBe(500);
  } finally {
    spy.mockRestore();
  }
}

function failureLine(lines: Record<string, unknown>[]): Record<string, unknown> | undefined {
  return lines.find((line) => line.msg === 'request failed');
}

afterEach(async () => {
  await terminateAll();
});

describe.each([
  ['a hop count', '1'],
  ['the proxy address range', '127.0.0.1/8'],
])('TRUST_PROXY as %s (%s)', (_what, trustProxy) => {
  let started: Started;

  beforeAll(async () => {
    started = await start({ TRUST_PROXY: trustProxy });
  });

  afterAll(async () => {
    await started?.h.close();
  });

  it('clients behind the proxy have a read budget each, on the fast path and through Fastify', async () => {
    const { h } = started;
    await inOneReadWindow();
    const [a, b, c] = ['198.51.100.1', '198.51.100.2', '198.51.100.3'];
    expect([await read(h, FAST, a), await read(h, FAST, a), await read(h, FAST, a)]).toEqual([200, 200, 429]);
    expect([await read(h, FAST, b), await read(h, ROUTED, b), await read(h, ROUTED, b)]).toEqual([
      200, 200, 429,
    ]);
    expect(await read(h, ROUTED, c)).toBe(200);
    // The proxy's chain: what the nearest proxy says is the client, however it was reached.
    expect(await read(h, ROUTED, `203.0.113.77, ${c}`)).toBe(200);
    expect(await read(h, ROUTED, c)).toBe(429);
  });

  it('clients behind the proxy have a socket cap each', async () => {
    const { h } = started;
    await SocketClient.connect(h.base, '', { 'x-forwarded-for': '198.51.100.10' });
    await SocketClient.connect(h.base, '', { 'x-forwarded-for': '198.51.100.11' });
    const refused = await refusedUpgrade(socketUrl(h.base), { 'x-forwarded-for': '198.51.100.10' });
    expect(refused.statusCode).toBe(429);
  });

  it('log lines about a request name the client, not the proxy', async () => {
    await failingRequest(started.h, '198.51.100.20');
    expect(failureLine(started.lines)).toMatchObject({ clientAddress: '198.51.100.20' });
  });

  it('an X-Forwarded-For entry that is not an IP address names no client: the peer that wrote it is the client', async () => {
    const { h, lines } = started;
    await inOneReadWindow();
    const junk = `${randomUUID()}${'x'.repeat(15_000)}`;
    lines.length = 0;
    await failingRequest(h, junk);
    expect(failureLine(lines)).toMatchObject({ clientAddress: '127.0.0.1' });
    expect(await read(h, FAST, `198.51.100.50, ${randomUUID()}`)).toBe(200);
    // The peer's third read: however the text changes, it is one client's budget.
    expect(await read(h, ROUTED, '1.2.3')).toBe(429);
    expect(await read(h, ROUTED, 'fe80::1%eth0')).toBe(429);
    // An address with blanks around it is that address; junk further back is never looked at.
    expect(await read(h, ROUTED, `${junk}, \t198.51.100.51 `)).toBe(200);
    expect(await read(h, ROUTED, '198.51.100.51')).toBe(200);
    expect(await read(h, ROUTED, '198.51.100.51')).toBe(429);
  });

  it('IPv6 clients in one /64 share a budget; in another /64 they do not', async () => {
    const { h } = started;
    await inOneReadWindow();
    expect([
      await read(h, ROUTED, '2001:db8:0:1::1'),
      await read(h, ROUTED, '2001:db8:0:1::2'),
      await read(h, ROUTED, '2001:db8:0:1:ffff:ffff:ffff:ffff'),
    ]).toEqual([200, 200, 429]);
    expect(await read(h, ROUTED, '2001:db8:0:2::1')).toBe(200);
    // An IPv4 client seen through an IPv6 socket is that IPv4 client.
    expect([
      await read(h, ROUTED, '::ffff:198.51.100.30'),
      await read(h, ROUTED, '198.51.100.30'),
      await read(h, ROUTED, '198.51.100.30'),
    ]).toEqual([200, 200, 429]);
  });
});

describe.each([
  ['unset', {}],
  ['a range the peer is not in', { TRUST_PROXY: '10.0.0.0/8' }],
])('TRUST_PROXY %s', (_what, env: Record<string, string>) => {
  let started: Started;

  beforeAll(async () => {
    started = await start(env);
  });

  afterAll(async () => {
    await started?.h.close();
  });

  it("ignores an untrusted peer's X-Forwarded-For: every limit and log line goes by the peer", async () => {
    const { h, lines } = started;
    await inOneReadWindow();
    await failingRequest(h, '198.51.100.1');
    expect(failureLine(lines)).toMatchObject({ clientAddress: '127.0.0.1' });
    // That failed read was the peer's first; this is its second, and the budget is spent.
    expect(await read(h, FAST, '198.51.100.2')).toBe(200);
    expect(await read(h, ROUTED, '198.51.100.3')).toBe(429);

    await SocketClient.connect(h.base, '', { 'x-forwarded-for': '198.51.100.4' });
    const refused = await refusedUpgrade(socketUrl(h.base), { 'x-forwarded-for': '198.51.100.5' });
    expect(refused.statusCode).toBe(429);
  });
});
