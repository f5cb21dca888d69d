import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { clientFrame, FrameReader, NO_STATUS, Opcode, RawSocket } from '../../bench/lib/raw-socket.js';
import { eventually } from '../support/eventually.js';

/** A server frame as `ws` would send it: FIN, unmasked, the shortest length. */
function serverFrame(payload: Buffer, opcode: number = Opcode.Text, fin = true): Buffer {
  const length = payload.length;
  const head =
    length < 126
      ? Buffer.from([(fin ? 0x80 : 0) | opcode, length])
      : length < 65_536
        ? Buffer.from([(fin ? 0x80 : 0) | opcode, 126, length >> 8, length & 0xff])
        : Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | opcode, 127]), bigLength(length)]);
  return Buffer.concat([head, payload]);
}

function bigLength(length: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(length));
  return bytes;
}

function closeFrame(code: number): Buffer {
  const payload = Buffer.alloc(2 + 'rate_limited'.length);
  payload.writeUInt16BE(code);
  payload.write('rate_limited', 2);
  return serverFrame(payload, Opcode.Close);
}

describe('the bench’s frame reader', () => {
  const stream = Buffer.concat([
    serverFrame(Buffer.alloc(5, 'a')),
    serverFrame(Buffer.alloc(300, 'b'), Opcode.Text, false),
    serverFrame(Buffer.alloc(70_000, 'c'), Opcode.Continuation),
    serverFrame(Buffer.alloc(0), Opcode.Ping),
    closeFrame(4009),
  ]);

  it('counts messages and payload bytes and reads the close code, whatever the chunks', () => {
    for (const size of [1, 2, 3, 7, 13, 1000, stream.length]) {
      const closes: number[] = [];
      const reader = new FrameReader((code) => closes.push(code));
      for (let at = 0; at < stream.length; at += size) reader.push(stream.subarray(at, at + size));
      expect({ size, messages: reader.messages, bytes: reader.payloadBytes, closes }).toEqual({
        size,
        messages: 2,
        bytes: 5 + 300 + 70_000 + 2 + 'rate_limited'.length,
        closes: [4009],
      });
    }
  });

  it('takes a close frame without a code for 1005', () => {
    const closes: number[] = [];
    new FrameReader((code) => closes.push(code)).push(serverFrame(Buffer.alloc(0), Opcode.Close));
    expect(closes).toEqual([NO_STATUS]);
  });
});

describe('the bench’s raw WebSocket client', () => {
  let server: WebSocketServer | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('is a WebSocket client to ws: its masked frames arrive whole, and it reads what ws sends', async () => {
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => server?.once('listening', resolve));
    const received: string[] = [];
    const peers: string[] = [];
    server.on('connection', (ws, request) => {
      peers.push(request.socket.remoteAddress ?? '');
      ws.on('message', (data) => {
        received.push(data.toString());
        if (received.length === 2) {
          ws.send('x'.repeat(100_000));
          ws.send('{"op":1}');
          ws.close(4009, 'rate_limited');
        }
      });
    });
    const { port } = server.address() as AddressInfo;
    const closes: number[] = [];
    const socket = new RawSocket(`http://127.0.0.1:${port}`, '/socket', '127.0.9.1', {
      open: (self) => {
        self.send(clientFrame('{"op":2}'));
        self.send(clientFrame('y'.repeat(70_000)));
      },
      closed: (code) => closes.push(code),
    });
    await eventually(() => expect(closes).toEqual([4009]));
    expect(received).toEqual(['{"op":2}', 'y'.repeat(70_000)]);
    expect(peers).toEqual(['127.0.9.1']);
    expect(socket.reader.messages).toBe(2);
    expect(socket.reader.payloadBytes).toBe(100_000 + 8 + 2 + 'rate_limited'.length);
    socket.destroy();
  });

  it('tells of an upgrade answered with another status', async () => {
    server = new WebSocketServer({ host: '127.0.0.1', port: 0, verifyClient: () => false });
    await new Promise((resolve) => server?.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    const refused: number[] = [];
    new RawSocket(`http://127.0.0.1:${port}`, '/socket', '127.0.9.1', {
      open: () => refused.push(101),
      refused: (status) => refused.push(status),
    });
    await eventually(() => expect(refused).toEqual([401]));
  });
});
