import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

/** WebSocket opcodes (RFC 6455, 5.2). */
export const Opcode = { Continuation: 0, Text: 1, Binary: 2, Close: 8, Ping: 9, Pong: 10 } as const;

/** What a close frame without a code stands for (RFC 6455, 7.1.5). */
export const NO_STATUS = 1005;

/** The longest frame header: 2 bytes, a 64-bit length, a masking key. */
const MAX_HEADER_BYTES = 14;
const EMPTY = Buffer.alloc(0);

/**
 * One client frame, FIN set, masked with a zero key: a client must mask, and a zero key leaves the payload
 * as it is, so a flood costs its sender a header per frame and nothing more.
 */
export function clientFrame(payload: Buffer | string, opcode: number = Opcode.Text): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const lengthBytes = body.length < 126 ? 0 : body.length < 65_536 ? 2 : 8;
  const header = Buffer.alloc(2 + lengthBytes + 4);
  header[0] = 0x80 | opcode;
  if (lengthBytes === 0) header[1] = 0x80 | body.length;
  else if (lengthBytes === 2) {
    header[1] = 0x80 | 126;
    header.writeUInt16BE(body.length, 2);
  } else {
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(body.length), 2);
  }
  return Buffer.concat([header, body]);
}

function headerSize(head: Buffer): number | undefined {
  if (head.length < 2) return undefined;
  const length7 = (head[1] as number) & 0x7f;
  const masked = ((head[1] as number) & 0x80) !== 0;
  const size = 2 + (length7 === 126 ? 2 : length7 === 127 ? 8 : 0) + (masked ? 4 : 0);
  return head.length >= size ? size : undefined;
}

function payloadLength(head: Buffer): number {
  const length7 = (head[1] as number) & 0x7f;
  if (length7 === 126) return head.readUInt16BE(2);
  if (length7 === 127) return Number(head.readBigUInt64BE(2));
  return length7;
}

/**
 * Reads a server's frames from a byte stream, whatever the chunks: counts messages and payload bytes
 * without keeping any, and hands on the code of a close frame. A client that only measures what it is sent
 * needs no more, and spends next to nothing on a megabyte.
 */
export class FrameReader {
  /** Payload bytes of every frame so far. */
  payloadBytes = 0;
  /** Data messages completed (their final fragment read). */
  messages = 0;
  private head: Buffer = EMPTY;
  private remaining = 0;
  private opcode = 0;
  private fin = false;
  private closePayload: Buffer[] | null = null;

  constructor(private readonly onClose: (code: number) => void) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, chunk.length - at);
        this.closePayload?.push(chunk.subarray(at, at + take));
        this.payloadBytes += take;
        this.remaining -= take;
        at += take;
        if (this.remaining === 0) this.frameEnded();
        continue;
      }
      const take = Math.min(MAX_HEADER_BYTES - this.head.length, chunk.length - at);
      const head = Buffer.concat([this.head, chunk.subarray(at, at + take)]);
      const size = headerSize(head);
      if (size === undefined) {
        this.head = head;
        at += take;
        continue;
      }
      at += size - this.head.length;
      this.head = EMPTY;
      this.opcode = (head[0] as number) & 0x0f;
      this.fin = ((head[0] as number) & 0x80) !== 0;
      this.remaining = payloadLength(head);
      this.closePayload = this.opcode === Opcode.Close ? [] : null;
      if (this.remaining === 0) this.frameEnded();
    }
  }

  private frameEnded(): void {
    if (this.opcode === Opcode.Close) {
      const payload = Buffer.concat(this.closePayload ?? []);
      this.closePayload = null;
      this.onClose(payload.length >= 2 ? payload.readUInt16BE(0) : NO_STATUS);
    } else if (this.fin && this.opcode < Opcode.Close) this.messages++;
  }
}

export interface RawSocketHandlers {
  /** The upgrade was answered 101: frames may be sent. */
  open(socket: RawSocket): void;
  /** The server's close frame arrived, with its code. */
  closed?(code: number): void;
  /** The upgrade was answered with another status (e.g. 429 past the sockets per address). */
  refused?(status: number): void;
  /** The TCP connection is gone, whatever ended it. */
  ended?(): void;
}

/**
 * A WebSocket client written by hand over TCP, from a chosen loopback address: what a hostile client
 * (or one that only counts bytes) is, without a WebSocket library's work per message.
 */
export class RawSocket {
  readonly reader: FrameReader;
  readonly socket: Socket;
  private upgraded = false;
  private response = '';

  constructor(base: string, path: string, localAddress: string, handlers: RawSocketHandlers) {
    const url = new URL(base);
    this.reader = new FrameReader((code) => handlers.closed?.(code));
    this.socket = connect({ host: url.hostname, port: Number(url.port), localAddress });
    this.socket.setNoDelay(true);
    this.socket.on('error', () => undefined);
    this.socket.once('close', () => handlers.ended?.());
    this.socket.once('connect', () => {
      this.socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    this.socket.on('data', (chunk: Buffer) => {
      if (this.upgraded) {
        this.reader.push(chunk);
        return;
      }
      this.response += chunk.toString('latin1');
      const end = this.response.indexOf('\r\n\r\n');
      if (end < 0) return;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(this.response)?.[1] ?? 0);
      if (status !== 101) {
        handlers.refused?.(status);
        this.socket.destroy();
        return;
      }
      this.upgraded = true;
      const rest = Buffer.from(this.response.slice(end + 4), 'latin1');
      this.response = '';
      handlers.open(this);
      if (rest.length > 0) this.reader.push(rest);
    });
  }

  /** Bytes received so far, headers and all. */
  get bytesRead(): number {
    return this.socket.bytesRead;
  }

  /** Sends one text frame; false when the socket's buffer is full (wait for 'drain'). */
  send(frame: Buffer): boolean {
    return this.socket.write(frame);
  }

  destroy(): void {
    this.socket.destroy();
  }
}
