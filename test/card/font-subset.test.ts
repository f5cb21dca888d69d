import { readFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FONT_FILES, fontFaceFor } from '../../src/card/font.js';

/**
 * The card's font cut to a card's characters: the WOFF is read back here, table by table, and its glyphs
 * checked against what the text needs. (That browsers take it is shown by the three-renderer test, where
 * Chromium without any Arial-like font lays the text out by this font's widths.)
 */

interface Woff {
  tables: Map<string, Buffer>;
  checksums: Map<string, number>;
}

function readWoff(woff: Buffer): Woff {
  expect(woff.toString('latin1', 0, 4)).toBe('wOFF');
  expect(woff.readUInt32BE(8)).toBe(woff.length);
  const tables = new Map<string, Buffer>();
  const checksums = new Map<string, number>();
  for (let i = 0; i < woff.readUInt16BE(12); i++) {
    const at = 44 + i * 20;
    const tag = woff.toString('latin1', at, at + 4);
    const offset = woff.readUInt32BE(at + 4);
    const compressed = woff.readUInt32BE(at + 8);
    const original = woff.readUInt32BE(at + 12);
    expect(offset % 4, tag).toBe(0);
    const data = woff.subarray(offset, offset + compressed);
    tables.set(tag, compressed < original ? inflateSync(data) : data);
    expect(tables.get(tag)?.length, tag).toBe(original);
    checksums.set(tag, woff.readUInt32BE(at + 16));
  }
  return { tables, checksums };
}

/** The font rules' two WOFFs, regular then bold. */
function woffsOf(rules: Buffer): Buffer[] {
  return [...rules.toString().matchAll(/data:font\/woff;base64,([A-Za-z0-9+/=]+)/g)].map(([, data]) =>
    Buffer.from(data ?? '', 'base64'),
  );
}

/** Glyph ids by character, and each glyph's outline length, of a TrueType font's tables. */
function glyphsOf(tables: Map<string, Buffer>, chars: string): Map<string, number> {
  const cmap = tables.get('cmap') as Buffer;
  const head = tables.get('head') as Buffer;
  const loca = tables.get('loca') as Buffer;
  const short = head.readInt16BE(50) === 0;
  const at = (glyph: number) => (short ? loca.readUInt16BE(glyph * 2) * 2 : loca.readUInt32BE(glyph * 4));
  // The format 4 subtable, found as font.ts finds it.
  let subtable = -1;
  for (let i = 0; i < cmap.readUInt16BE(2); i++) {
    const offset = cmap.readUInt32BE(4 + i * 8 + 4);
    if (cmap.readUInt16BE(offset) === 4) subtable = offset;
  }
  const segments = cmap.readUInt16BE(subtable + 6) / 2;
  const glyphOf = (code: number): number => {
    for (let s = 0; s < segments; s++) {
      const end = cmap.readUInt16BE(subtable + 14 + 2 * s);
      const start = cmap.readUInt16BE(subtable + 16 + 2 * segments + 2 * s);
      if (code < start || code > end) continue;
      const delta = cmap.readInt16BE(subtable + 16 + 4 * segments + 2 * s);
      const rangeAt = subtable + 16 + 6 * segments + 2 * s;
      const range = cmap.readUInt16BE(rangeAt);
      if (range === 0) return (code + delta) & 0xffff;
      const raw = cmap.readUInt16BE(rangeAt + range + 2 * (code - start));
      return raw === 0 ? 0 : (raw + delta) & 0xffff;
    }
    return 0;
  };
  return new Map(
    [...chars].map((char) => {
      const glyph = glyphOf(char.codePointAt(0) ?? 0);
      return [char, at(glyph + 1) - at(glyph)];
    }),
  );
}

describe('the card font, cut to a card', () => {
  const markup = '<style>x</style><text>Zoë &amp; 1:05</text>';

  it('keeps the outlines of the characters the text has, and of what they are built of, and no others', () => {
    const [regular, bold] = woffsOf(fontFaceFor(markup)).map(readWoff);
    for (const woff of [regular, bold]) {
      const outlines = glyphsOf((woff as Woff).tables, 'Zoë&1:05e¨QWxyz7é');
      for (const char of 'Zoë&1:05') expect(outlines.get(char), char).toBeGreaterThan(0);
      // ë is drawn from e and ¨, which the text does not have: they are kept for it.
      for (const char of 'e¨') expect(outlines.get(char), char).toBeGreaterThan(0);
      for (const char of 'QWxyz7é') expect(outlines.get(char), char).toBe(0);
    }
  });

  it('leaves every other table as the font has it, with its checksum', () => {
    const original = readFileSync(FONT_FILES[0] as string);
    const tables = new Map<string, Buffer>();
    for (let i = 0; i < original.readUInt16BE(4); i++) {
      const record = 12 + i * 16;
      const offset = original.readUInt32BE(record + 8);
      tables.set(
        original.toString('latin1', record, record + 4),
        original.subarray(offset, offset + original.readUInt32BE(record + 12)),
      );
    }
    const [regular] = woffsOf(fontFaceFor(markup)).map(readWoff);
    expect([...(regular as Woff).tables.keys()].sort()).toEqual([...tables.keys()].sort());
    for (const [tag, data] of tables) {
      if (tag === 'glyf' || tag === 'loca') continue;
      expect((regular as Woff).tables.get(tag)?.equals(data), tag).toBe(true);
    }
    expect((regular as Woff).tables.get('glyf')?.length).toBeLessThan(
      (tables.get('glyf') as Buffer).length / 4,
    );
  });

  it('is the same rules for the same characters, and reads entities back to their characters', () => {
    expect(fontFaceFor('<style></style><text>a&lt;b</text>')).toBe(
      fontFaceFor('<style></style><text>b<tspan>a</tspan>&lt;</text>'),
    );
    const [regular] = woffsOf(fontFaceFor('<style></style><text>&lt;</text>')).map(readWoff);
    expect(glyphsOf((regular as Woff).tables, '<&').get('<')).toBeGreaterThan(0);
    expect(glyphsOf((regular as Woff).tables, '<&').get('&')).toBe(0);
  });
});
