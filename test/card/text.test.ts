import { describe, expect, it } from 'vitest';
import { cleanText, escapeXml, isolate, userText } from '../../src/card/escape.js';
import { graphemes, textWidth, truncate } from '../../src/card/truncate.js';

describe('escape', () => {
  it('escapes the five XML specials', () => {
    expect(escapeXml(`<a href="x">Tom & Jerry's</a>`)).toBe(
      '&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;',
    );
  });

  it('escapes an existing entity again, so it shows as typed', () => {
    expect(escapeXml('&amp; &#60;')).toBe('&amp;amp; &amp;#60;');
  });

  it('cleans what XML forbids, bidi controls and line breaks, keeping the rest', () => {
    expect(cleanText('\u0000a\u0001b\u000Bc\u001Fd\u007Fe\u0085f\uFFFEg\uFFFFh')).toBe('abcdefgh');
    expect(cleanText('x\uD800y\uDC00z')).toBe('xyz');
    expect(cleanText('\u202Eevil\u202C \u2067iso\u2069')).toBe('evil iso');
    expect(cleanText('  two\nlines\r\n\tand tabs  ')).toBe('two lines and tabs');
    expect(cleanText('👩‍👩‍👧‍👦 שלום e\u0301 \u200F')).toBe('👩‍👩‍👧‍👦 שלום e\u0301 \u200F');
  });

  it('isolates user text and escapes it', () => {
    expect(isolate('abc')).toBe('\u2068abc\u2069');
    expect(userText('<b>')).toBe('\u2068&lt;b&gt;\u2069');
  });

  it("puts emoji runs, and only them, in the emoji font's tspan: the text's own font draws the rest", () => {
    expect(userText('shipping 🚀🔥 & co')).toBe(
      '\u2068shipping <tspan class="emoji">🚀🔥</tspan> &amp; co\u2069',
    );
    expect(userText('1️⃣ then 1, © and ©️')).toBe(
      '\u2068<tspan class="emoji">1️⃣</tspan> then 1, © and <tspan class="emoji">©️</tspan>\u2069',
    );
    expect(userText('Zoë 🇫🇷')).toBe('\u2068Zoë <tspan class="emoji">🇫🇷</tspan>\u2069');
  });
});

describe('truncate', () => {
  it('splits into graphemes: emoji sequences, flags, keycaps and combining marks stay whole', () => {
    expect(graphemes('a👩‍👩‍👧‍👦🇫🇷1️⃣e\u0301')).toEqual(['a', '👩‍👩‍👧‍👦', '🇫🇷', '1️⃣', 'e\u0301']);
  });

  it('estimates widths from the font size and weight', () => {
    expect(textWidth('iiii', { size: 10 })).toBeLessThan(textWidth('WWWW', { size: 10 }));
    expect(textWidth('abc', { size: 20 })).toBeCloseTo(textWidth('abc', { size: 10 }) * 2);
    expect(textWidth('abc', { size: 10, bold: true })).toBeGreaterThan(textWidth('abc', { size: 10 }));
    expect(textWidth('漢字', { size: 10 })).toBe(20);
    expect(textWidth('e\u0301', { size: 10 })).toBeCloseTo(textWidth('e', { size: 10 }));
    // The card's font has Arial's metrics: "Midnight City" in 16 px bold is 101.3 px wide.
    expect(textWidth('Midnight City', { size: 16, bold: true })).toBeCloseTo(101.3, 0);
    expect(textWidth('1️⃣', { size: 10 })).toBeGreaterThan(textWidth('1', { size: 10 }) * 2);
    expect(textWidth('🎧', { size: 10 })).toBeGreaterThan(10);
  });

  it('leaves text that fits alone', () => {
    expect(truncate('Nova', 100, { size: 14 })).toBe('Nova');
    expect(truncate('', 0, { size: 14 })).toBe('');
  });

  it('cuts text that does not fit and ends it with an ellipsis, within the width', () => {
    const long = 'The quick brown fox jumps over the lazy dog again and again';
    const cut = truncate(long, 150, { size: 14 });
    expect(cut.endsWith('…')).toBe(true);
    expect(long.startsWith(cut.slice(0, -1))).toBe(true);
    expect(textWidth(cut, { size: 14 })).toBeLessThanOrEqual(150);
    expect(textWidth(`${long.slice(0, cut.length)}…`, { size: 14 })).toBeGreaterThan(150 - 14);
  });

  it('never splits a grapheme and drops the space before the ellipsis', () => {
    const family = '👩‍👩‍👧‍👦';
    const cut = truncate(`${family.repeat(10)}`, 60, { size: 14 });
    expect(graphemes(cut.slice(0, -1)).every((g) => g === family)).toBe(true);
    expect(truncate('word word word word word', 60, { size: 14 })).not.toMatch(/ …$/);
  });

  it('cuts right-to-left text at its logical end (the isolate then draws the ellipsis on its left)', () => {
    const cut = truncate('مرحبا بالعالم هذا نص طويل جدا باللغة العربية', 100, { size: 14 });
    expect(cut.startsWith('مرحبا')).toBe(true);
    expect(cut.endsWith('…')).toBe(true);
  });

  it('gives an ellipsis alone when nothing fits', () => {
    expect(truncate('abcdef', 5, { size: 14 })).toBe('…');
  });
});
