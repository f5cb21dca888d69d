import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

/**
 * A minimal PNG encoder: one solid colour (or a ring of it), 8-bit truecolour. Enough for the simulated
 * CDN to answer with a real image (a card renderer can fetch, embed and decode it) whose colour tells
 * images apart.
 */

export type Rgb = readonly [red: number, green: number, blue: number];

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const COLOUR_TYPE_TRUECOLOUR = 2;
const COLOUR_TYPE_TRUECOLOUR_ALPHA = 6;
const BIT_DEPTH = 8;

/** The largest image the encoder makes; bigger requests get this size (the colour is all there is to see). */
export const MAX_PNG_SIZE = 512;

const sideOf = (size: number): number => Math.max(1, Math.min(MAX_PNG_SIZE, Math.floor(size)));

function headerOf(side: number, colourType: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header.writeUInt8(BIT_DEPTH, 8);
  header.writeUInt8(colourType, 9);
  // compression 0 (deflate), filter method 0, interlace 0: already zero.
  return header;
}

const pngOf = (header: Buffer, raw: Buffer): Buffer =>
  Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);

/** A `size`×`size` PNG of one colour. */
export function solidPng(size: number, colour: Rgb): Buffer {
  const side = sideOf(size);

  // Each scanline: filter byte 0 (None), then RGB triples.
  const row = Buffer.alloc(1 + side * 3);
  for (let x = 0; x < side; x++) {
    row[1 + x * 3] = colour[0];
    row[2 + x * 3] = colour[1];
    row[3 + x * 3] = colour[2];
  }
  const raw = Buffer.alloc(row.length * side);
  for (let y = 0; y < side; y++) row.copy(raw, y * row.length);
  return pngOf(headerOf(side, COLOUR_TYPE_TRUECOLOUR), raw);
}

/**
 * A `size`×`size` PNG, transparent but for a ring of one colour at its edge (the outer sixth of its
 * radius): what an avatar decoration looks like, drawn over an avatar that shows through.
 */
export function ringPng(size: number, colour: Rgb): Buffer {
  const side = sideOf(size);
  const stride = 1 + side * 4;
  const raw = Buffer.alloc(stride * side);
  const centre = side / 2;
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const distance = Math.hypot(x + 0.5 - centre, y + 0.5 - centre) / centre;
      if (distance < 5 / 6 || distance > 1) continue;
      raw.set([colour[0], colour[1], colour[2], 255], y * stride + 1 + x * 4);
    }
  }
  return pngOf(headerOf(side, COLOUR_TYPE_TRUECOLOUR_ALPHA), raw);
}

/** A stable colour for any key (an avatar hash, an emoji id…): the first three bytes of its SHA-256. */
export function colourFor(key: string): Rgb {
  const digest = createHash('sha256').update(key).digest();
  return [digest[0] ?? 0, digest[1] ?? 0, digest[2] ?? 0];
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length, 0);
  const typeAndData = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData), 0);
  return Buffer.concat([length, typeAndData, crc]);
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 as PNG defines it (ISO 3309); node:zlib's crc32 is newer than Node 20.0. */
function crc32(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
