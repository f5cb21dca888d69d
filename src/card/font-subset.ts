import { deflateSync } from 'node:zlib';

/**
 * A TrueType font cut to the characters one card draws, as WOFF: every glyph keeps its id, and the glyphs
 * no character of the card needs lose their outlines (an empty entry in `loca`), so every other table
 * stays as it is and stays valid. A card's text needs a few dozen of the font's few hundred glyphs.
 * https://learn.microsoft.com/typography/opentype/spec/glyf, https://www.w3.org/TR/WOFF/
 */

export interface SubsettableFont {
  /** The font's tables by tag, as in the file. */
  tables: ReadonlyMap<string, Buffer>;
  /** Glyph ids by code point, from `cmap`. */
  glyphs: ReadonlyMap<number, number>;
  /** `loca` in its short form (offsets / 2) or its long one. */
  shortLoca: boolean;
  numGlyphs: number;
}

// glyf composite flags.
const ARG_1_AND_2_ARE_WORDS = 0x0001;
const WE_HAVE_A_SCALE = 0x0008;
const MORE_COMPONENTS = 0x0020;
const WE_HAVE_AN_X_AND_Y_SCALE = 0x0040;
const WE_HAVE_A_TWO_BY_TWO = 0x0080;

/** The font's tables, read from a TrueType file, for `subsetWoff`. */
export function readFont(file: Buffer, glyphs: ReadonlyMap<number, number>): SubsettableFont {
  const tables = new Map<string, Buffer>();
  const count = file.readUInt16BE(4);
  for (let i = 0; i < count; i++) {
    const record = 12 + i * 16;
    const offset = file.readUInt32BE(record + 8);
    tables.set(
      file.toString('latin1', record, record + 4),
      file.subarray(offset, offset + file.readUInt32BE(record + 12)),
    );
  }
  const table = (tag: string): Buffer => {
    const found = tables.get(tag);
    if (!found) throw new Error(`no ${tag} table`);
    return found;
  };
  if (!tables.has('glyf') || !tables.has('loca')) throw new Error('not a TrueType-outline font');
  return {
    tables,
    glyphs,
    shortLoca: table('head').readInt16BE(50) === 0,
    numGlyphs: table('maxp').readUInt16BE(4),
  };
}

/** The font as WOFF with outlines for `codePoints` (and what their glyphs are built of) only. */
export function subsetWoff(font: SubsettableFont, codePoints: Iterable<number>): Buffer {
  const loca = font.tables.get('loca') as Buffer;
  const glyf = font.tables.get('glyf') as Buffer;
  const offsetOf = (glyph: number): number =>
    font.shortLoca ? loca.readUInt16BE(glyph * 2) * 2 : loca.readUInt32BE(glyph * 4);
  const outline = (glyph: number): Buffer => glyf.subarray(offsetOf(glyph), offsetOf(glyph + 1));

  // .notdef, the glyphs of the characters, and the components of composite glyphs (é is e and ´).
  const kept = new Set<number>([0]);
  for (const codePoint of codePoints) {
    const glyph = font.glyphs.get(codePoint);
    if (glyph !== undefined) kept.add(glyph);
  }
  for (const glyph of kept) {
    const data = outline(glyph);
    if (data.length < 10 || data.readInt16BE(0) >= 0) continue;
    for (let at = 10; at + 4 <= data.length; ) {
      const flags = data.readUInt16BE(at);
      const component = data.readUInt16BE(at + 2);
      if (component < font.numGlyphs) kept.add(component);
      at += 4 + (flags & ARG_1_AND_2_ARE_WORDS ? 4 : 2);
      at +=
        flags & WE_HAVE_A_SCALE
          ? 2
          : flags & WE_HAVE_AN_X_AND_Y_SCALE
            ? 4
            : flags & WE_HAVE_A_TWO_BY_TWO
              ? 8
              : 0;
      if (!(flags & MORE_COMPONENTS)) break;
    }
  }

  // glyf with the kept outlines, each padded to an even length (short loca counts in halves); loca in the
  // font's own form.
  const outlines: Buffer[] = [];
  const newLoca = Buffer.alloc((font.numGlyphs + 1) * (font.shortLoca ? 2 : 4));
  let offset = 0;
  for (let glyph = 0; glyph <= font.numGlyphs; glyph++) {
    if (font.shortLoca) newLoca.writeUInt16BE(offset / 2, glyph * 2);
    else newLoca.writeUInt32BE(offset, glyph * 4);
    if (glyph === font.numGlyphs || !kept.has(glyph)) continue;
    const data = outline(glyph);
    outlines.push(data);
    offset += data.length;
    if (data.length % 2 === 1) {
      outlines.push(Buffer.alloc(1));
      offset += 1;
    }
  }
  const tables = new Map(font.tables);
  tables.set('glyf', Buffer.concat(outlines));
  tables.set('loca', newLoca);
  return woff(tables);
}

/** WOFF 1.0: the sfnt's tables, each deflated where that makes it smaller, 4-byte aligned. */
function woff(tables: ReadonlyMap<string, Buffer>): Buffer {
  const tags = [...tables.keys()].sort();
  const header = 44;
  const directory = 20 * tags.length;
  const entries: { tag: string; data: Buffer; original: Buffer }[] = tags.map((tag) => {
    const original = tables.get(tag) as Buffer;
    const deflated = deflateSync(original);
    return { tag, original, data: deflated.length < original.length ? deflated : original };
  });
  const padded = (length: number) => (length + 3) & ~3;
  let offset = header + directory;
  const dir = Buffer.alloc(directory);
  entries.forEach(({ tag, data, original }, i) => {
    const at = i * 20;
    dir.write(tag, at, 4, 'latin1');
    dir.writeUInt32BE(offset, at + 4);
    dir.writeUInt32BE(data.length, at + 8);
    dir.writeUInt32BE(original.length, at + 12);
    dir.writeUInt32BE(checksum(original), at + 16);
    offset += padded(data.length);
  });
  const sfntSize =
    12 + 16 * tags.length + entries.reduce((sum, { original }) => sum + padded(original.length), 0);
  const head = Buffer.alloc(header);
  head.write('wOFF', 0, 4, 'latin1');
  head.writeUInt32BE(0x00010000, 4);
  head.writeUInt32BE(offset, 8);
  head.writeUInt16BE(tags.length, 12);
  head.writeUInt32BE(sfntSize, 16);
  head.writeUInt16BE(1, 20);
  return Buffer.concat([
    head,
    dir,
    ...entries.map(({ data }) => Buffer.concat([data, Buffer.alloc(padded(data.length) - data.length)])),
  ]);
}

/** The sfnt table checksum: the sum of its big-endian 32-bit words, zero-padded. */
function checksum(table: Buffer): number {
  let sum = 0;
  for (let at = 0; at < table.length; at += 4) {
    const word =
      ((table[at] ?? 0) << 24) |
      ((table[at + 1] ?? 0) << 16) |
      ((table[at + 2] ?? 0) << 8) |
      (table[at + 3] ?? 0);
    sum = (sum + (word >>> 0)) >>> 0;
  }
  return sum;
}
