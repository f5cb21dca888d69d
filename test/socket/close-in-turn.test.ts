import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { closeInTurn } from '../../src/socket/close-in-turn.js';
import { eventually } from '../support/eventually.js';
import { RawConnection } from '../support/raw-http.js';
import { wireFrame } from './client.js';
import { ALICE, seededHarness } from './fixture.js';

const UPGRADE =
  'GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';

/** A close frame as a client sends it: its code, then its reason. */
function closeFrame(code: number, reason: string): Buffer {
  const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
  payload.writeUInt16BE(code, 0);
  payload.write(reason, 2);
  return wireFrame(payload, 0x8);
}

/** A ws server whose clients' leaving waits in `work` until a test runs it. */
class LeavingServer {
  readonly work: Array<() => void> = [];
  /** Clients told to be leaving, as the gateway is. */
  leaving = 0;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly server: Server = createServer();
  private readonly opened: Array<(opened: { ws: WebSocket; connection: Duplex }) => void> = [];
  private pushed: (() => void) | null = null;

  constructor() {
    this.server.on('upgrade', (request: IncomingMessage, socket, head) => {
      this.wss.handleUpgrade(request, socket, head, (ws) => {
        closeInTurn(
          ws,
          socket,
          {
            push: (work) => {
              this.work.push(work);
              this.pushed?.();
            },
          },
          () => this.leaving++,
        );
        this.opened.shift()?.({ ws, connection: socket });
      });
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /**
   * A client's connection, upgraded: the server's socket for it and the server's end of the connection,
   * and the client's raw connection.
   */
  async connect(base: string): Promise<{ ws: WebSocket; connection: Duplex; client: RawConnection }> {
    const opened = new Promise<{ ws: WebSocket; connection: Duplex }>((resolve) => this.opened.push(resolve));
    const client = await RawConnection.open(base);
    await client.write(UPGRADE);
    await client.waitFor(/^HTTP\/1\.1 101 /);
    return { ...(await opened), client };
  }

  /** Resolves once `count` clients' leaving waits in the work queue. */
  async left(count: number): Promise<void> {
    while (this.work.length < count) await new Promise<void>((resolve) => (this.pushed = resolve));
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    this.server.close();
  }
}

describe('a connection that ends without a closing handshake', () => {
  let server: LeavingServer;
  afterEach(async () => {
    await server.close();
  });

  it('is closed when the work queue reaches it, not in the turn its end was read', async () => {
    server = new LeavingServer();
    const base = await server.listen();
    const clients = await Promise.all(Array.from({ length: 20 }, () => server.connect(base)));
    for (const { client } of clients) client.socket.end();
    await server.left(clients.length);
    // Every end read, none closed yet: the clients still hold their connections, told to be leaving.
    expect(clients.map(({ ws }) => ws.readyState)).toEqual(clients.map(() => 1));
    expect(server.leaving).toBe(clients.length);
    const closed = clients.map(({ ws }) => once(ws, 'close'));
    for (const work of server.work.splice(0)) work();
    await Promise.all(closed);
    // Our side ended too: each client sees its connection closed.
    await Promise.all(clients.map(({ client }) => client.closed));
  });

  it('closed meanwhile, is left alone when its turn comes', async () => {
    server = new LeavingServer();
    const base = await server.listen();
    const { ws, client } = await server.connect(base);
    client.socket.end();
    await server.left(1);
    const closed = once(ws, 'close');
    ws.terminate();
    await closed;
    expect(() => (server.work.shift() as () => void)()).not.toThrow();
    await client.closed;
  });
});

describe('a client that sends a close frame', () => {
  let server: LeavingServer;
  afterEach(async () => {
    await server.close();
  });

  it('is answered and closed when the work queue reaches it, with the code it sent', async () => {
    server = new LeavingServer();
    const base = await server.listen();
    const clients = await Promise.all(Array.from({ length: 20 }, () => server.connect(base)));
    for (const { client } of clients) await client.write(closeFrame(4000, 'bye').toString('latin1'));
    await server.left(clients.length);
    // Heard, not answered yet: no close frame has come back.
    expect(clients.map(({ ws }) => ws.readyState)).toEqual(clients.map(() => 1));
    expect(server.leaving).toBe(clients.length);
    expect(clients.every(({ client }) => !client.text.includes('\x88'))).toBe(true);
    const closed = clients.map(({ ws }) => once(ws, 'close'));
    for (const work of server.work.splice(0)) work();
    for (const [code, reason] of await Promise.all(closed)) {
      expect(code).toBe(4000);
      expect(String(reason)).toBe('bye');
    }
    // Each client gets the close frame back with its code, then the end of the connection.
    await Promise.all(clients.map(({ client }) => client.closed));
    for (const { client } of clients) expect(client.text).toContain('\x88\x05\x0f\xa0bye');
  });

  it('has what follows it dropped, not read as frames', async () => {
    server = new LeavingServer();
    const base = await server.listen();
    const { ws, connection, client } = await server.connect(base);
    const messages: unknown[] = [];
    ws.on('message', (data) => messages.push(data));
    await client.write(closeFrame(1000, '').toString('latin1'));
    await server.left(1);
    // A frame after the close frame, heard before the close is answered.
    const errors: unknown[] = [];
    ws.on('error', (error) => errors.push(error));
    const heard = once(connection, 'data');
    await client.write(wireFrame('{"op":3}').toString('latin1'));
    await heard;
    const closed = once(ws, 'close');
    for (const work of server.work.splice(0)) work();
    expect((await closed)[0]).toBe(1000);
    expect(messages).toEqual([]);
    expect(errors).toEqual([]);
  });
});

describe('the gateway', () => {
  const service = seededHarness();

  it('closes and lets go of sockets whose clients went away together, and goes on serving', async () => {
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
