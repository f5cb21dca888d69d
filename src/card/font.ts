import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readFont, type SubsettableFont, subsetWoff } from './font-subset.js';

/**
 * The card's own font, Presently Sans (a subset of Liberation Sans: Arial's metrics, SIL OFL; see
 * fonts/OFL.txt and scripts/card-fonts.py). Every SVG carries it as @font-face data, cut to the characters
 * that card draws, so a browser draws the card's text with the glyphs it was measured by, whatever fonts
 * the viewer has; the PNG renderer
 * draws with the same files. Characters outside the subset fall back to the viewer's sans-serif (in the
 * PNG, to Presently Sans Fallback; see fonts/LICENSES.md).
 */

export const FONT_FAMILY = 'Presently Sans';
export type Weight = 'regular' | 'bold';

const FILES: Record<Weight, string> = { regular: 'PresentlySans-Regular', bold: 'PresentlySans-Bold' };
const CSS_WEIGHTS: Record<Weight, number> = { regular: 400, bold: 700 };

const fontFile = (weight: Weight): string =>
  fileURLToPath(new URL(`./fonts/${FILES[weight]}.ttf`, import.meta.url));

/**
 * The TrueType files, for a renderer that loads fonts from files and has no others (resvg): the card's
 * font, then its fallback (from DejaVu Sans: Greek, Cyrillic, Hebrew, more Latin, symbols).
 */
export const FONT_FILES: readonly string[] = [
  fontFile('regular'),
  fontFile('bold'),
  fileURLToPath(new URL('./fonts/PresentlySansFallback-Regular.ttf', import.meta.url)),
  fileURLToPath(new URL('./fonts/PresentlySansFallback-Bold.ttf', import.meta.url)),
];

/** Advance widths of the font's characters, in thousandths of an em, by code point. */
export type Advances = ReadonlyMap<number, number>;

/** One weight's glyphs and advances by code point, read from its file: `cmap` (format 4), `hmtx`. */
function readMetrics(font: Buffer, file: string): { glyphs: Map<number, number>; advances: Advances } {
  const tables = new Map<string, number>();
  const count = font.readUInt16BE(4);
  for (let i = 0; i < count; i++) {
    const record = 12 + i * 16;
    tables.set(font.toString('latin1', record, record + 4), font.readUInt32BE(record + 8));
  }
  const table = (tag: string): number => {
    const offset = tables.get(tag);
    if (offset === undefined) throw new Error(`${file}: no ${tag} table`);
    return offset;
  };
  const unitsPerEm = font.readUInt16BE(table('head') + 18);
  const longMetrics = font.readUInt16BE(table('hhea') + 34);
  const hmtx = table('hmtx');
  const advanceOf = (glyph: number): number => font.readUInt16BE(hmtx + 4 * Math.min(glyph, longMetrics - 1));

  const cmap = table('cmap');
  let subtable = -1;
  for (let i = 0; i < font.readUInt16BE(cmap + 2); i++) {
    const record = cmap + 4 + i * 8;
    const offset = cmap + font.readUInt32BE(record + 4);
    // Unicode BMP: platform 3 encoding 1, or platform 0, in format 4.
    const platform = font.readUInt16BE(record);
    if (
      (platform === 0 || (platform === 3 && font.readUInt16BE(record + 2) === 1)) &&
      font.readUInt16BE(offset) === 4
    ) {
      subtable = offset;
      break;
    }
  }
  if (subtable < 0) throw new Error(`${file}: no Unicode cmap of format 4`);

  const advances = new Map<number, number>();
  const glyphs = new Map<number, number>();
  const segments = font.readUInt16BE(subtable + 6) / 2;
  const ends = subtable + 14;
  const starts = ends + 2 * segments + 2;
  const deltas = starts + 2 * segments;
  const rangeOffsets = deltas + 2 * segments;
  for (let s = 0; s < segments; s++) {
    const end = font.readUInt16BE(ends + 2 * s);
    const start = font.readUInt16BE(starts + 2 * s);
    const delta = font.readInt16BE(deltas + 2 * s);
    const rangeOffset = font.readUInt16BE(rangeOffsets + 2 * s);
    for (let code = start; code <= end && code !== 0xffff; code++) {
      let glyph: number;
      if (rangeOffset === 0) glyph = (code + delta) & 0xffff;
      else {
        const at = rangeOffsets + 2 * s + rangeOffset + 2 * (code - start);
        const raw = font.readUInt16BE(at);
        glyph = raw === 0 ? 0 : (raw + delta) & 0xffff;
      }
      if (glyph === 0) continue;
      glyphs.set(code, glyph);
      advances.set(code, Math.round((advanceOf(glyph) * 1000) / unitsPerEm));
    }
  }
  return { glyphs, advances };
}

const WEIGHTS = ['regular', 'bold'] as const;
const FONTS = Object.fromEntries(
  WEIGHTS.map((weight) => {
    const bytes = readFileSync(fontFile(weight));
    const { glyphs, advances } = readMetrics(bytes, fontFile(weight));
    return [weight, { bytes, advances, font: readFont(bytes, glyphs) }];
  }),
) as Record<Weight, { bytes: Buffer; advances: Advances; font: SubsettableFont }>;

export const ADVANCES: Readonly<Record<Weight, Advances>> = {
  regular: FONTS.regular.advances,
  bold: FONTS.bold.advances,
};

/** The font files' digest: a card's ETag includes it, so a new font is a new card. */
export const FONT_DIGEST = createHash('sha1')
  .update(FONTS.regular.bytes)
  .update(FONTS.bold.bytes)
  .digest('hex');

/** Font rules made, by the characters they cover: cards of one user differ in a clock digit or two. */
const MEMO_LIMIT = 1_024;
const memo = new Map<string, Buffer>();

const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
};

/**
 * The @font-face rules for a card whose markup after its stylesheet's font rules is `markup` (what
 * renderCardParts calls `after`): both weights, cut to the characters of the card's text. The text is
 * every text node after the stylesheet, entities read back.
 */
export function fontFaceFor(markup: string): Buffer {
  const codePoints = new Set<number>();
  const body = markup.slice(markup.indexOf('</style>') + '</style>'.length);
  for (const [, text = ''] of body.matchAll(/>([^<]+)</g)) {
    for (const char of text.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity] ?? entity)) {
      codePoints.add(char.codePointAt(0) ?? 0);
    }
  }
  const key = String.fromCodePoint(...[...codePoints].sort((a, b) => a - b));
  const known = memo.get(key);
  if (known) return known;
  const rules = Buffer.from(
    WEIGHTS.map(
      (weight) =>
        `@font-face{font-family:'${FONT_FAMILY}';font-weight:${CSS_WEIGHTS[weight]};font-style:normal;` +
        `src:url(data:font/woff;base64,${subsetWoff(FONTS[weight].font, codePoints).toString('base64')}) format('woff')}`,
    ).join(''),
  );
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(key, rules);
  return rules;
}
