import type { Duplex } from 'node:stream';

/**
 * WebSocket messages written straight onto the connection, so a message whose bytes are mostly shared
 * with other sockets costs each socket only its own few bytes: the frame header and what differs go in
 * one small buffer, and the shared bytes are written as they are held, never copied. ws keeps no state
 * between whole messages for a server socket without permessage-deflate, so these interleave with the
 * frames it sends itself. See https://www.rfc-editor.org/rfc/rfc6455#section-5.2 for the header.
 */

const FIN_TEXT = 0x81;
const FIN_BINARY = 0x82;
/** Payload lengths up to this fit in the header's first length byte; then 16 bits, then 64. */
const SHORT_LENGTH = 125;
const MEDIUM_LENGTH = 0xffff;

/**
 * A buffer holding the header of an unfragmented, unmasked frame of `payloadLength` bytes, followed by
 * room for `ownLength` bytes of the payload: the caller writes them at `buffer.length - ownLength`.
 */
export function frameStart(payloadLength: number, binary: boolean, ownLength: number): Buffer {
  const headerLength = payloadLength <= SHORT_LENGTH ? 2 : payloadLength <= MEDIUM_LENGTH ? 4 : 10;
  const start = Buffer.allocUnsafe(headerLength + ownLength);
  start[0] = binary ? FIN_BINARY : FIN_TEXT;
  if (headerLength === 2) {
    start[1] = payloadLength;
  } else if (headerLength === 4) {
    start[1] = 126;
    start.writeUInt16BE(payloadLength, 2);
  } else {
    start[1] = 127;
    start.writeUInt32BE(Math.floor(payloadLength / 2 ** 32), 2);
    start.writeUInt32BE(payloadLength >>> 0, 6);
  }
  return start;
}

/** Writes a frame begun by `frameStart`: its start, the shared bytes, then `end` if any, in one write. */
export function writeFrame(connection: Duplex, start: Buffer, shared: Buffer, end?: Buffer): void {
  connection.cork();
  connection.write(start);
  connection.write(shared);
  if (end) connection.write(end);
  connection.uncork();
}
