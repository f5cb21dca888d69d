import type { ImageType } from './images.js';

/**
 * An image's width and height from its header, without decoding it: a few hundred kilobytes of PNG can
 * declare 8,000 × 8,000 pixels, which a rasterizer would allocate a quarter of a gigabyte to draw.
 * https://www.w3.org/TR/png/#11IHDR, GIF89a's logical screen, JPEG's SOF segments, WebP's VP8/VP8L/VP8X.
 */
export function imageSize(bytes: Buffer, type: ImageType): { width: number; height: number } | null {
  switch (type) {
    case 'image/png':
      return bytes.length < 24 ? null : { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
    case 'image/gif':
      return bytes.length < 10 ? null : { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
    case 'image/jpeg':
      return jpegSize(bytes);
    case 'image/webp':
      return webpSize(bytes);
  }
}

/** The first start-of-frame segment's size; markers are walked by their lengths. */
function jpegSize(bytes: Buffer): { width: number; height: number } | null {
  let at = 2;
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return null;
    const marker = bytes[at + 1] ?? 0;
    // Fill bytes before a marker.
    if (marker === 0xff) {
      at++;
      continue;
    }
    // SOF0–SOF15 but DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: bytes.readUInt16BE(at + 5), width: bytes.readUInt16BE(at + 7) };
    }
    at += 2 + bytes.readUInt16BE(at + 2);
  }
  return null;
}

function webpSize(bytes: Buffer): { width: number; height: number } | null {
  if (bytes.length < 30) return null;
  const chunk = bytes.toString('latin1', 12, 16);
  if (chunk === 'VP8X') return { width: 1 + bytes.readUIntLE(24, 3), height: 1 + bytes.readUIntLE(27, 3) };
  if (chunk === 'VP8L') {
    const bits = bytes.readUInt32LE(21);
    return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >>> 14) & 0x3fff) };
  }
  if (chunk === 'VP8 ')
    return { width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff };
  return null;
}
