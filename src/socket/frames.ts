import { deflateRawSync, deflateSync } from 'node:zlib';
import { Op } from './protocol.js';

/**
 * Event frames are built once per change and shared by every subscriber. Only `seq` differs per socket,
 * and it comes first, so a frame is a few per-socket bytes followed by the shared tail
 * `"t":"…","d":…}`: no subscriber costs a serialization. zlib subscribers get the tail deflated once,
 * too: a zlib stream is a header, deflate blocks and a checksum, so the per-socket head goes in a stored
 * (uncompressed) block in front of the shared compressed blocks, and the checksum is combined from the
 * two parts' checksums.
 */
export class SharedEvent {
  readonly tail: Buffer;
  private compressedTail: Buffer | undefined;
  private tailAdler = 0;

  constructor(t: string, dJson: string) {
    this.tail = Buffer.from(`"t":"${t}","d":${dJson}}`);
  }

  text(seq: number): Buffer {
    // One allocation per socket: the head is ASCII, written in place in front of the shared tail.
    const head = eventHeadText(seq);
    const frame = Buffer.allocUnsafe(head.length + this.tail.length);
    frame.write(head, 0, 'latin1');
    this.tail.copy(frame, head.length);
    return frame;
  }

  zlib(seq: number): Buffer {
    if (this.compressedTail === undefined) {
      this.compressedTail = deflateRawSync(this.tail);
      this.tailAdler = adler32(this.tail);
    }
    const head = eventHead(seq);
    const checksum = Buffer.alloc(4);
    checksum.writeUInt32BE(adler32Combine(adler32(head), this.tailAdler, this.tail.length));
    return Buffer.concat([ZLIB_HEADER, storedBlock(head), this.compressedTail, checksum]);
  }
}

/** A frame sent to one socket only (Hello, INIT_STATE): serialized for it alone. */
export function singleFrame(json: string, compressed: boolean): Buffer | string {
  return compressed ? deflateSync(json) : json;
}

export function helloJson(heartbeatIntervalMs: number): string {
  return `{"op":${Op.Hello},"d":{"heartbeat_interval":${heartbeatIntervalMs}}}`;
}

export function eventJson(seq: number, t: string, dJson: string): string {
  return `{"op":${Op.Event},"seq":${seq},"t":"${t}","d":${dJson}}`;
}

function eventHeadText(seq: number): string {
  return `{"op":${Op.Event},"seq":${seq},`;
}

function eventHead(seq: number): Buffer {
  return Buffer.from(eventHeadText(seq));
}

/** CMF 0x78 (deflate, 32 KiB window), FLG 0x01: a valid header with no preset dictionary. */
const ZLIB_HEADER = Buffer.from([0x78, 0x01]);
const ADLER_MOD = 65521;

/** A non-final stored deflate block: BFINAL 0, BTYPE 00, then LEN and its complement. */
function storedBlock(data: Buffer): Buffer {
  const block = Buffer.alloc(5 + data.length);
  block[0] = 0;
  block.writeUInt16LE(data.length, 1);
  block.writeUInt16LE(~data.length & 0xffff, 3);
  data.copy(block, 5);
  return block;
}

export function adler32(data: Buffer): number {
  let a = 1;
  let b = 0;
  for (let i = 0; i < data.length; i++) {
    a = (a + (data[i] as number)) % ADLER_MOD;
    b = (b + a) % ADLER_MOD;
  }
  return ((b << 16) | a) >>> 0;
}

/** The Adler-32 of `first ‖ second` from the two checksums and the second part's length. */
export function adler32Combine(first: number, second: number, secondLength: number): number {
  const a1 = first & 0xffff;
  const b1 = first >>> 16;
  const a2 = second & 0xffff;
  const b2 = second >>> 16;
  const a = (a1 + a2 - 1 + ADLER_MOD) % ADLER_MOD;
  const b = (b1 + b2 + (secondLength % ADLER_MOD) * ((a1 - 1 + ADLER_MOD) % ADLER_MOD)) % ADLER_MOD;
  return ((b << 16) | a) >>> 0;
}
