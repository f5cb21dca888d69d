import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { deflate } from 'node:zlib';
import { renderAsync } from '@resvg/resvg-js';
import { pngFile, scanlines } from '../png/encode.js';
import { FONT_FILES } from './font.js';

const deflateAsync = promisify(deflate);

/**
 * The card as PNG, for places that show no SVG (Discord's and social sites' embeds, some Markdown
 * renderers): the SVG rasterized by resvg with the card's own font files. resvg draws no animation, so
 * the PNG is the card's first frame: the true time.
 */

/** The card's own size: twice it (for high-density screens) is four times the pixels to draw and pack. */
export const PNG_SCALE = 1;

/**
 * What draws a PNG, as a string for its ETag: the renderer's version, the scale and the font files. The
 * same markup drawn by another of these is another picture.
 */
export const PNG_RENDERER = [
  createRequire(import.meta.url)('@resvg/resvg-js/package.json').version as string,
  PNG_SCALE,
  ...FONT_FILES.map((file) => createHash('sha1').update(readFileSync(file)).digest('hex')),
].join(' ');

/** Rasterizations at once: resvg runs on libuv's pool, which file and DNS work share. */
const CONCURRENCY = 2;
/** Rasterizations waiting their turn; past it a request is refused rather than held, with its card, in memory. */
const MAX_WAITING = 256;
/**
 * Characters of the cards drawn or waiting, together: a card with the largest images is a megabyte or
 * two of markup, and 256 of them would hold half a gigabyte.
 */
const MAX_HELD_CHARS = 64 * 1024 * 1024;
let held = 0;

/**
 * resvg draws no colour-font glyphs and would draw emoji as empty boxes: the PNG leaves them out. The
 * renderer puts every emoji run in this element and escapes all user text, so the pattern matches only
 * those runs (with the space after one, which would otherwise open the line).
 */
const EMOJI_RUN = /<tspan class="emoji">[^<]*<\/tspan> ?/g;

/**
 * A card refused because the renderer holds as many as it may: its code is the API's `rate_limited`, as
 * the card routes answer it. A refusal, not a fault: like the API's errors it takes no stack trace.
 */
export class RendererBusyError extends Error {
  readonly code = 'rate_limited';

  constructor() {
    const { stackTraceLimit } = Error;
    Error.stackTraceLimit = 0;
    super('Too many PNG cards are being drawn; try again in a second');
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'RendererBusyError';
  }
}

let running = 0;
const waiting: (() => void)[] = [];

/** Waits for a free rasterization; the returned function frees it, or hands it to the next in line. */
async function turn(): Promise<() => void> {
  if (running < CONCURRENCY) running++;
  else if (waiting.length >= MAX_WAITING) {
    throw new RendererBusyError();
  } else {
    // Woken by a finishing rasterization, which passes its place on rather than freeing it.
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  return () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
}

/**
 * The PNG of a card's SVG, drawn and compressed off the event loop: resvg rasterizes on libuv's pool, and
 * so does zlib (resvg's own encoder would run on the event loop).
 */
export async function rasterize(svg: string): Promise<Buffer> {
  if (held + svg.length > MAX_HELD_CHARS) {
    throw new RendererBusyError();
  }
  held += svg.length;
  try {
    return await draw(svg);
  } finally {
    held -= svg.length;
  }
}

async function draw(svg: string): Promise<Buffer> {
  const done = await turn();
  try {
    const image = await renderAsync(svg.replace(EMOJI_RUN, ''), {
      fitTo: { mode: 'zoom', value: PNG_SCALE },
      // Only the card's fonts: the same glyphs wherever the service runs, and no scan of system fonts.
      font: { fontFiles: [...FONT_FILES], loadSystemFonts: false },
      imageRendering: 0,
      shapeRendering: 2,
      textRendering: 1,
    });
    const { width, height } = image;
    const compressed = await deflateAsync(scanlines(image.pixels, width, height, 'rgba'));
    return pngFile(width, height, 'rgba', compressed);
  } finally {
    done();
  }
}
