import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_USERS } from '../../src/demo/cast.js';
import { generateApiKey } from '../../src/keys/api-key.js';
import { refusedUpgrade, SocketClient, socketUrl } from '../socket/client.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';
import { RawConnection } from '../support/raw-http.js';

/**
 * The service as `npm start` runs it, in its own process, given what a client with no key can send, all
 * at once and over and over: nothing of it may reach the process's last line of defence (a fatal log line
 * and an exit), and afterwards the service answers as before.
 */

let service: NodeProcess;

beforeAll(async () => {
  service = await startNodeProcess('hostile', {
    DATABASE_URL: 'sqlite::memory:',
    LOG_LEVEL: 'info',
    RATE_LIMIT_WRITE: '120',
  });
});

afterAll(async () => {
  await service?.stop();
});

/** A JSON body deep enough that parsing it costs, and no JSON object of strings at that. */
const NESTED = `${'['.repeat(500_000)}${']'.repeat(500_000)}`;
const USER = DEMO_USERS.nova.id;

function fatalLines(output: string): string[] {
  return output.split('\n').filter((line) => line.includes('"level":60') || line.includes('uncaught'));
}

describe('a hostile client without a key', () => {
  it('reaches nothing that ends the process, and the service answers as before', async () => {
    const { url } = service;
    const attacks: Promise<unknown>[] = [];

    // Bodies to routes that take none, and to none at all.
    for (let i = 0; i < 8; i++) {
      attacks.push(
        fetch(`${url}/v1/users/@me/kv${i % 2 ? '' : '/x'}`, {
          method: i % 2 ? 'POST' : 'DELETE',
          headers: { 'content-type': 'application/json' },
          body: NESTED,
        }).then((response) => expect([401, 404]).toContain(response.status)),
      );
    }
    // Writes with made-up keys until the address's budget refuses them.
    // Until the budget is spent, then once more: that refusal is held for a while (the client keeps asking).
    const statuses: number[] = [];
    while (statuses.at(-1) !== 429 && statuses.length < 130) {
      const response = await fetch(`${url}/v1/users/@me/kv/x`, {
        method: 'PUT',
        headers: { authorization: generateApiKey() },
        body: 'v',
      });
      statuses.push(response.status);
    }
    // The DELETEs above count against the same budget: refused for their key, then for the budget.
    expect(statuses.length).toBeGreaterThan(100);
    expect(statuses.slice(0, -1).every((status) => status === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    const held = await fetch(`${url}/v1/users/@me/kv/x`, { method: 'PUT', body: 'v' });
    expect(held.status).toBe(429);
    expect(held.headers.get('connection')).toBe('close');

    // A handshake that is not one.
    const handshake = await RawConnection.open(url);
    await handshake.write(
      'GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    );
    await handshake.waitFor(/HTTP\/1\.1 400/);

    // Sockets: every subscription at once, a frame too large, garbage, then a subscribe flood, after which
    // the address gets no new socket for a while.
    const everyone = await SocketClient.connect(url);
    everyone.send({ op: 2, d: { subscribe_to_all: true } });
    expect((await everyone.next()).t).toBe('INIT_STATE');
    everyone.ws.send('x'.repeat(70 * 1024));
    expect((await everyone.closedWith()).code).toBe(1009);
    const garbage = await SocketClient.connect(url);
    garbage.ws.send(Buffer.from([0xff, 0xfe, 0x00]));
    expect([1007, 4006]).toContain((await garbage.closedWith()).code);
    const flood = await SocketClient.connect(url, '?compression=zlib_json');
    const unmonitored = Array.from({ length: 1000 }, (_, i) => String(10n ** 17n + BigInt(i)));
    for (let i = 0; i < 30; i++) flood.send({ op: 2, d: { subscribe_to_ids: unmonitored } });
    expect((await flood.closedWith()).code).toBe(4009);
    expect((await refusedUpgrade(socketUrl(url))).statusCode).toBe(429);
    // Upgrades reset by their client while their refusal is held, or as soon as they are sent.
    const handshakeTo = (path: string) =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
    for (let i = 0; i < 40; i++) {
      const reset = await RawConnection.open(url);
      await reset.write(handshakeTo(i % 2 === 0 ? '/socket' : '/nope'));
      reset.socket.resetAndDestroy();
    }

    // HTTP that is not HTTP, headers past the cap.
    const raw = await RawConnection.open(url);
    await raw.write('NOT HTTP AT ALL\r\n\r\n');
    await raw.closed;
    const big = await RawConnection.open(url);
    await big.write(`GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    await big.waitFor(/HTTP\/1\.1 431/);

    await Promise.all(attacks);
    expect((await fetch(`${url}/v1/health`)).status).toBe(200);
    expect((await fetch(`${url}/v1/users/${USER}`)).status).toBe(200);
    expect(service.child.exitCode).toBeNull();
    expect(fatalLines(service.output())).toEqual([]);
    // And it still stops as it should.
    expect(await service.stop()).toBe(0);
    expect(fatalLines(service.output())).toEqual([]);
  });
});
