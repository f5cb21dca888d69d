import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { pngFile, scanlines } from '../png/encode.js';

/**
 * Images of one colour (or a ring of it): enough for the simulated CDN to answer with a real image (a
 * card renderer can fetch, embed and decode it) whose colour tells images apart.
 */

export type Rgb = readonly [red: number, green: number, blue: number];

/** The largest image made; bigger requests get this size (the colour is all there is to see). */
export const MAX_PNG_SIZE = 512;

const sideOf = (size: number): number => Math.max(1, Math.min(MAX_PNG_SIZE, Math.floor(size)));

/** A `size`×`size` PNG of one colour. */
export function solidPng(size: number, colour: Rgb): Buffer {
  const side = sideOf(size);
  const pixels = new Uint8Array(side * side * 3);
  for (let i = 0; i < side * side; i++) pixels.set(colour, i * 3);
  return pngFile(side, side, 'rgb', deflateSync(scanlines(pixels, side, side, 'rgb')));
}

/**
 * A `size`×`size` PNG, transparent but for a ring of one colour at its edge (the outer sixth of its
 * radius): what an avatar decoration looks like, drawn over an avatar that shows through.
 */
export function ringPng(size: number, colour: Rgb): Buffer {
  const side = sideOf(size);
  const pixels = new Uint8Array(side * side * 4);
  const centre = side / 2;
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const distance = Math.hypot(x + 0.5 - centre, y + 0.5 - centre) / centre;
      if (distance >= 5 / 6 && distance <= 1)
        pixels.set([colour[0], colour[1], colour[2], 255], (y * side + x) * 4);
    }
  }
  return pngFile(side, side, 'rgba', deflateSync(scanlines(pixels, side, side, 'rgba')));
}

/** A stable colour for any key (an avatar hash, an emoji id…): the first three bytes of its SHA-256. */
export function colourFor(key: string): Rgb {
  const digest = createHash('sha256').update(key).digest();
  return [digest[0] ?? 0, digest[1] ?? 0, digest[2] ?? 0];
}
