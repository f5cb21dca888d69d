import { inflateSync } from 'node:zlib';

/** A decoded image: RGBA, 8 bits a channel, rows top to bottom. */
export interface DecodedPng {
  width: number;
  height: number;
  /** width × height × 4 bytes. */
  rgba: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Bytes a pixel for the colour types a renderer writes: grey, RGB, grey+alpha, RGBA (8-bit). */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

/**
 * A PNG decoder for what Chromium, resvg and librsvg write: 8-bit, not interlaced, no palette. The tests
 * read pixels of real renderings with it; anything else is an error, not a guess.
 */
export function decodePng(png: Buffer): DecodedPng {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let colourType = -1;
  const data: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      colourType = body[9] ?? -1;
      if (body[8] !== 8 || body[12] !== 0) throw new Error('only 8-bit, non-interlaced PNGs');
    } else if (type === 'IDAT') data.push(body);
    at += 12 + length;
  }
  const channels = CHANNELS[colourType];
  if (channels === undefined) throw new Error(`PNG colour type ${colourType} is not decoded here`);
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? (pixels[y * stride + x - channels] ?? 0) : 0;
      const up = y > 0 ? (pixels[(y - 1) * stride + x] ?? 0) : 0;
      const upLeft = x >= channels && y > 0 ? (pixels[(y - 1) * stride + x - channels] ?? 0) : 0;
      const predictor =
        filter === 0
          ? 0
          : filter === 1
            ? left
            : filter === 2
              ? up
              : filter === 3
                ? (left + up) >> 1
                : paeth(left, up, upLeft);
      pixels[y * stride + x] = ((line[x] ?? 0) + predictor) & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    const p = pixels.subarray(i * channels, (i + 1) * channels);
    const [r = 0, g = 0, b = 0, a = 255] =
      channels === 1 ? [p[0], p[0], p[0]] : channels === 2 ? [p[0], p[0], p[0], p[1]] : Array.from(p);
    rgba.set([r, g, b, a], i * 4);
  }
  return { width, height, rgba };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** The RGBA of one pixel. */
export function pixelAt(image: DecodedPng, x: number, y: number): [number, number, number, number] {
  const i = (Math.round(y) * image.width + Math.round(x)) * 4;
  return [image.rgba[i] ?? 0, image.rgba[i + 1] ?? 0, image.rgba[i + 2] ?? 0, image.rgba[i + 3] ?? 0];
}
