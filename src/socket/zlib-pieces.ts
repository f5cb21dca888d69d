import { constants, deflate, deflateRaw } from 'node:zlib';

/**
 * A zlib stream made of pieces deflated apart: the 2-byte header, then each piece's deflate blocks (none
 * final, each ending byte-aligned), then an empty final block and the Adler-32 of everything the pieces
 * held. A piece deflated once can so be sent inside any number of messages, to any number of sockets,
 * between bytes of their own (`storedBlock`), and nothing is deflated per socket.
 */

/** CMF 0x78 (deflate, 32 KiB window), FLG 0x01: a valid header with no preset dictionary. */
export const ZLIB_HEADER = Buffer.from([0x78, 0x01]);
/** An empty stored block with BFINAL set: ends the deflate data. */
const FINAL_BLOCK = Buffer.from([0x01, 0x00, 0x00, 0xff, 0xff]);
const ADLER_MOD = 65521;
/** Bytes summed before the modulo must be taken (zlib's NMAX): the sums still fit in 32 bits. */
const ADLER_RUN = 5552;
/** A stored block holds at most this many bytes. */
const MAX_STORED = 65_535;

/** Text deflated on its own, to be spliced into zlib streams. */
export interface DeflatedPiece {
  deflated: Buffer;
  /** Adler-32 and length of the text, for the checksum of the stream it goes into. */
  adler: number;
  length: number;
}

/**
 * Pieces deflated at once. Each holds zlib's state, which V8 counts as external memory, from when it is
 * made: made all at once for a flood of subscriptions, they set off back-to-back full collections.
 */
export const DEFLATES_AT_ONCE = 4;
/** Pieces up to this long (an INIT_STATE chunk) are summed on the loop: quick, with no stream or copy. */
const ADLER_ON_LOOP_BYTES = 128 * 1024;
let deflating = 0;
const waitingToDeflate: Array<() => void> = [];

/** Resolves once the caller may deflate: at once while fewer than DEFLATES_AT_ONCE are, else in turn. */
function turnToDeflate(): Promise<void> {
  if (deflating < DEFLATES_AT_ONCE) {
    deflating++;
    return Promise.resolve();
  }
  return new Promise((go) => waitingToDeflate.push(go));
}

/** The caller has deflated: its turn passes to the next waiting, if any. */
function doneDeflating(): void {
  const next = waitingToDeflate.shift();
  if (next) next();
  else deflating--;
}

/**
 * Deflates `text` off the event loop (zlib's thread pool) at the fastest level: pieces are large and sent
 * once per change or subscription, and no socket should wait on the CPU for them.
 */
export async function deflatePiece(text: Buffer): Promise<DeflatedPiece> {
  await turnToDeflate();
  const compressing = new Promise<Buffer>((resolve, reject) => {
    deflateRaw(
      text,
      { level: constants.Z_BEST_SPEED, finishFlush: constants.Z_SYNC_FLUSH },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
  const summing = text.length <= ADLER_ON_LOOP_BYTES ? adler32(text) : adler32OffLoop(text);
  try {
    const [deflated, adler] = await Promise.all([compressing, summing]);
    return { deflated, adler, length: text.length };
  } finally {
    // The turn passes on only once both streams are done, whichever failed.
    await Promise.allSettled([compressing, summing]);
    doneDeflating();
  }
}

/**
 * The Adler-32 of `text`, summed by zlib in its thread pool: zlib data ends with it, and stored (level 0)
 * it costs a copy. Summed here, a presence of megabytes would hold the event loop for milliseconds.
 */
function adler32OffLoop(text: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    // Room for all of it in one output chunk: in zlib's default 16 KiB ones, megabytes would come back
    // as hundreds of callbacks and a copy, on the event loop.
    const chunkSize = Math.max(constants.Z_MIN_CHUNK, text.length + (text.length >> 8) + 64);
    // Stored blocks look nothing up: the smallest window and hash table zlib allows are enough.
    const options = { level: constants.Z_NO_COMPRESSION, chunkSize, windowBits: 9, memLevel: 1 };
    deflate(text, options, (error, stored) => {
      if (error) reject(error);
      else resolve(stored.readUInt32BE(stored.length - 4));
    });
  });
}

/** Non-final stored (uncompressed) blocks holding `data`: the few bytes of a message that are its own. */
export function storedBlock(data: Buffer): Buffer {
  const blocks = Math.max(1, Math.ceil(data.length / MAX_STORED));
  const out = Buffer.allocUnsafe(data.length + blocks * 5);
  let at = 0;
  for (let from = 0; from < data.length || at === 0; from += MAX_STORED) {
    const part = data.subarray(from, from + MAX_STORED);
    out[at] = 0;
    out.writeUInt16LE(part.length, at + 1);
    out.writeUInt16LE(~part.length & 0xffff, at + 3);
    part.copy(out, at + 5);
    at += 5 + part.length;
  }
  return out;
}

/** The end of a stream of pieces whose text had Adler-32 `adler` altogether. */
export function streamEnd(adler: number): Buffer {
  const end = Buffer.allocUnsafe(FINAL_BLOCK.length + 4);
  FINAL_BLOCK.copy(end);
  end.writeUInt32BE(adler, FINAL_BLOCK.length);
  return end;
}

/** The Adler-32 of an empty text: where a running checksum starts. */
export const ADLER_START = 1;

export function adler32(data: Buffer): number {
  let a = 1;
  let b = 0;
  const { length } = data;
  for (let i = 0; i < length; ) {
    const end = Math.min(i + ADLER_RUN, length);
    for (; i < end; i++) {
      a += data[i] as number;
      b += a;
    }
    a %= ADLER_MOD;
    b %= ADLER_MOD;
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
