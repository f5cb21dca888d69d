import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { closeEndedInTurn } from '../../src/socket/ended-in-turn.js';
import { eventually } from '../support/eventually.js';
import { RawConnection } from '../support/raw-http.js';
import { ALICE, seededHarness } from './fixture.js';

const UPGRADE =
  'GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';

/** A ws server whose connections' ends wait in `work` until a test runs it. */
class EndedServer {
  readonly work: Array<() => void> = [];
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly server: Server = createServer();
  private readonly opened: Array<(ws: WebSocket) => void> = [];
  private pushed: (() => void) | null = null;

  constructor() {
    this.server.on('upgrade', (request: IncomingMessage, socket, head) => {
      this.wss.handleUpgrade(request, socket, head, (ws) => {
        closeEndedInTurn(socket, {
          push: (work) => {
            this.work.push(work);
            this.pushed?.();
          },
        });
        this.opened.shift()?.(ws);
      });
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A client's connection, upgraded: the server's socket for it, and the client's raw connection. */
  async connect(base: string): Promise<{ ws: WebSocket; client: RawConnection }> {
    const ws = new Promise<WebSocket>((resolve) => this.opened.push(resolve));
    const client = await RawConnection.open(base);
    await client.write(UPGRADE);
    await client.waitFor(/^HTTP\/1\.1 101 /);
    return { ws: await ws, client };
  }

  /** Resolves once `count` ends wait in the work queue. */
  async ended(count: number): Promise<void> {
    while (this.work.length < count) await new Promise<void>((resolve) => (this.pushed = resolve));
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    this.server.close();
  }
}

describe('a connection that ends without a closing handshake', () => {
  let server: EndedServer;
  afterEach(async () => {
    await server.close();
  });

  it('is closed when the work queue reaches it, not in the turn its end was read', async () => {
    server = new EndedServer();
    const base = await server.listen();
    const clients = await Promise.all(Array.from({ length: 20 }, () => server.connect(base)));
    for (const { client } of clients) client.socket.end();
    await server.ended(clients.length);
    // Every end read, none closed yet: the clients still hold their connections.
    expect(clients.map(({ ws }) => ws.readyState)).toEqual(clients.map(() => 1));
    const closed = clients.map(({ ws }) => once(ws, 'close'));
    for (const work of server.work.splice(0)) work();
    await Promise.all(closed);
    // Our side ended too: each client sees its connection closed.
    await Promise.all(clients.map(({ client }) => client.closed));
  });

  it('closed meanwhile, is left alone when its turn comes', async () => {
    server = new EndedServer();
    const base = await server.listen();
    const { ws, client } = await server.connect(base);
    client.socket.end();
    await server.ended(1);
    const closed = once(ws, 'close');
    ws.terminate();
    await closed;
    expect(() => (server.work.shift() as () => void)()).not.toThrow();
    await client.closed;
  });
});

describe('the gateway', () => {
  const service = seededHarness();

  it('closes and lets go of sockets whose clients went away together, and answers others meanwhile', async () => {
    const h = service();
    const before = h.app.sockets?.socketCount ?? 0;
    const clients = await Promise.all(
      Array.from({ length: 80 }, async () => {
        const client = await RawConnection.open(h.base);
        await client.write(UPGRADE.replace('GET / ', 'GET /socket '));
        await client.waitFor(/^HTTP\/1\.1 101 /);
        return client;
      }),
    );
    await eventually(() => expect(h.app.sockets?.socketCount).toBe(before + 80));
    for (const client of clients) client.socket.end();
    expect((await fetch(`${h.base}/v1/users/${ALICE}`)).status).toBe(200);
    await Promise.all(clients.map((client) => client.closed));
    await eventually(() => expect(h.app.sockets?.socketCount).toBe(before));
  });
});
