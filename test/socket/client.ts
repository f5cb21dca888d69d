import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { inflateSync } from 'node:zlib';
import WebSocket from 'ws';

/** A frame as the client sees it, decoded (inflated first for zlib sockets). */
export interface Frame {
  op: number;
  seq?: number;
  t?: string;
  d?: unknown;
}

export interface RawMessage {
  data: Buffer;
  binary: boolean;
}

export interface CloseEvent {
  code: number;
  reason: string;
}

const DEFAULT_WAIT_MS = 5_000;
const live = new Set<SocketClient>();

/** `ws://host:port/socket` (with the query, if any) for the harness's `http://host:port` base. */
export function socketUrl(base: string, query = ''): string {
  return `${base.replace(/^http/, 'ws')}/socket${query}`;
}

/**
 * A real `ws` client that records every frame in order. Frames are taken with `next()`/`nextEvent()`;
 * nothing is ever dropped, so a test can assert exactly what arrived between two points.
 */
export class SocketClient {
  readonly frames: Frame[] = [];
  readonly raw: RawMessage[] = [];
  readonly closed: Promise<CloseEvent>;
  closeEvent: CloseEvent | undefined;
  private cursor = 0;
  private readonly wakers = new Set<() => void>();

  private constructor(readonly ws: WebSocket) {
    live.add(this);
    ws.on('error', () => {
      // surfaced through `closed`
    });
    ws.on('message', (data, isBinary) => {
      const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      this.raw.push({ data: buffer, binary: isBinary });
      const text = isBinary ? inflateSync(buffer).toString() : buffer.toString();
      this.frames.push(JSON.parse(text) as Frame);
      this.wake();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        live.delete(this);
        this.closeEvent = { code, reason: reason.toString() };
        resolve(this.closeEvent);
        this.wake();
      });
    });
  }

  /** Opens a socket and waits for the upgrade (not for Hello); `headers` go with the upgrade request. */
  static open(url: string, headers: Record<string, string> = {}): Promise<SocketClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      const client = new SocketClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_request, response) => {
        live.delete(client);
        reject(new Error(`upgrade refused: HTTP ${response.statusCode}`));
      });
      ws.once('error', reject);
    });
  }

  /** Opens a socket and takes its Hello. */
  static async connect(
    base: string,
    query = '',
    headers: Record<string, string> = {},
  ): Promise<SocketClient> {
    const client = await SocketClient.open(socketUrl(base, query), headers);
    const hello = await client.next();
    if (hello.op !== 1) throw new Error(`expected Hello first, got ${JSON.stringify(hello)}`);
    return client;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** Sends a heartbeat every `everyMs` until the socket closes, reading or not. */
  keepAlive(everyMs: number): void {
    const timer = setInterval(() => {
      if (this.ws.readyState === WebSocket.OPEN) this.send({ op: 3 });
    }, everyMs);
    void this.closed.then(() => clearInterval(timer));
  }

  /** The TCP connection under the socket: to write frames by hand, or to stop reading. */
  get tcp(): Socket {
    return (this.ws as unknown as { _socket: Socket })._socket;
  }

  /** Writes bytes as they are, e.g. several `wireFrame`s in one TCP write. */
  writeRaw(bytes: Buffer): void {
    this.tcp.write(bytes);
  }

  /** The next frame not taken yet; fails after `timeoutMs` or if the socket closes first. */
  async next(timeoutMs = DEFAULT_WAIT_MS): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = this.frames[this.cursor];
      if (frame !== undefined) {
        this.cursor++;
        return frame;
      }
      if (this.closeEvent) {
        throw new Error(`socket closed (${this.closeEvent.code} ${this.closeEvent.reason}) while waiting`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no frame within ${timeoutMs} ms`);
      await this.sleepUntilWoken(left);
    }
  }

  /** Takes frames up to and including the first that matches; returns them all, the match last. */
  async until(match: (frame: Frame) => boolean, timeoutMs = DEFAULT_WAIT_MS): Promise<Frame[]> {
    const deadline = Date.now() + timeoutMs;
    const taken: Frame[] = [];
    for (;;) {
      const frame = await this.next(Math.max(deadline - Date.now(), 1));
      taken.push(frame);
      if (match(frame)) return taken;
    }
  }

  /** Subscribes (op 2) and takes the INIT_STATE that answers it. */
  async subscribe(d: Record<string, unknown>): Promise<Frame> {
    this.send({ op: 2, d });
    const frame = await this.next();
    if (frame.t !== 'INIT_STATE') throw new Error(`expected INIT_STATE, got ${JSON.stringify(frame)}`);
    return frame;
  }

  /** Frames received but not taken yet. */
  get pending(): Frame[] {
    return this.frames.slice(this.cursor);
  }

  /** Waits for the close the server sends. */
  async closedWith(timeoutMs = DEFAULT_WAIT_MS): Promise<CloseEvent> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`socket still open after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A WebSocket ping (RFC 6455 control frame). The server's `ws` answers it as it reads it, after every
   * frame sent before it, and the gateway never hears it (it listens to messages only), so it is no sign of
   * life: a 'pong' proves the server has taken every earlier frame of ours and had not closed the socket
   * by then; 'closed' that it had (a closing server sends no pong).
   */
  ping(timeoutMs = DEFAULT_WAIT_MS): Promise<'pong' | 'closed'> {
    if (this.closeEvent) return Promise.resolve('closed');
    return new Promise((resolve, reject) => {
      const finish = (result: 'pong' | 'closed' | Error): void => {
        clearTimeout(timer);
        this.ws.off('pong', onPong);
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      const onPong = (): void => finish('pong');
      const timer = setTimeout(() => finish(new Error(`no pong within ${timeoutMs} ms`)), timeoutMs);
      this.ws.on('pong', onPong);
      void this.closed.then(() => finish('closed'));
      this.ws.ping();
    });
  }

  /** Closes cleanly and waits for the handshake to finish. */
  async close(): Promise<CloseEvent> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.close(1000);
    }
    return this.closedWith();
  }

  private wake(): void {
    for (const waker of this.wakers) waker();
    this.wakers.clear();
  }

  private sleepUntilWoken(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const waker = () => {
        clearTimeout(timer);
        this.wakers.delete(waker);
        resolve();
      };
      const timer = setTimeout(waker, ms);
      this.wakers.add(waker);
    });
  }
}

/** Cuts every client still open (for afterEach/afterAll); returns once each has seen its close. */
export async function terminateAll(): Promise<void> {
  const clients = [...live];
  for (const client of clients) client.ws.terminate();
  await Promise.all(clients.map((client) => client.closed));
}

/** A client frame as it goes on the wire (final, masked as RFC 6455 asks of clients); text by default. */
export function wireFrame(payload: string | Buffer, opcode = 0x1): Buffer {
  const data = Buffer.from(payload);
  const extended = data.length < 126 ? 0 : data.length < 0x10000 ? 2 : 8;
  const head = Buffer.alloc(2 + extended + 4);
  head[0] = 0x80 | opcode;
  head[1] = 0x80 | (extended === 0 ? data.length : extended === 2 ? 126 : 127);
  if (extended === 2) head.writeUInt16BE(data.length, 2);
  if (extended === 8) head.writeBigUInt64BE(BigInt(data.length), 2);
  const mask = randomBytes(4);
  mask.copy(head, 2 + extended);
  for (let i = 0; i < data.length; i++) data[i] = (data[i] as number) ^ (mask[i % 4] as number);
  return Buffer.concat([head, data]);
}

export interface RefusedUpgrade {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Opens a socket that the server must refuse: resolves with the HTTP answer the ws client saw. */
export function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<RefusedUpgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => {
      ws.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    ws.once('error', (error) => reject(error));
    ws.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          statusCode: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
      response.on('error', reject);
    });
  });
}

/** A hand-written upgrade request (e.g. a malformed one ws itself would never send): status and body. */
export function rawUpgrade(
  base: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ statusCode: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${base}${path}`, {
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', ...headers },
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ statusCode: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
    });
    request.on('upgrade', (response, socket) => {
      socket.destroy();
      resolve({ statusCode: response.statusCode ?? 0, body: '' });
    });
    request.on('error', reject);
    request.end();
  });
}
