/**
 * The parts of a PNG file (https://www.w3.org/TR/png/): enough to wrap pixels, deflated by the caller
 * (at once or on libuv's pool), as an 8-bit, non-interlaced image.
 */

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const BIT_DEPTH = 8;

export const COLOUR_TYPE = { rgb: 2, rgba: 6 } as const;
export type ColourType = keyof typeof COLOUR_TYPE;
const CHANNELS: Record<ColourType, number> = { rgb: 3, rgba: 4 };

/**
 * The image data a PNG deflates: each row of `pixels` (tightly packed, `colour`'s channels, 8 bits each)
 * after a filter byte of 0 (none). Flat colours, what cards and simulated images are, compress well
 * without filters.
 */
export function scanlines(pixels: Uint8Array, width: number, height: number, colour: ColourType): Buffer {
  const row = width * CHANNELS[colour];
  const out = Buffer.alloc((row + 1) * height);
  for (let y = 0; y < height; y++) out.set(pixels.subarray(y * row, (y + 1) * row), y * (row + 1) + 1);
  return out;
}

/** The PNG file of a `width`×`height` image whose scanlines deflated to `compressed`. */
export function pngFile(width: number, height: number, colour: ColourType, compressed: Buffer): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.writeUInt8(BIT_DEPTH, 8);
  header.writeUInt8(COLOUR_TYPE[colour], 9);
  // compression 0 (deflate), filter method 0, interlace 0: already zero.
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', compressed),
    chunk('IEND', Buffer.alloc(0)),
  ]);
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
