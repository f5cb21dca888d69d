/** First unit of a surrogate pair, and the units above the surrogates. */
const SURROGATES = 0xd800;
const ABOVE_SURROGATES = 0xe000;

/**
 * The order of a user's KV keys everywhere: code point order, which is UTF-8's byte order and so SQLite's.
 * JavaScript's `<` compares UTF-16 units, which puts a character beyond U+FFFF (a surrogate pair) before
 * U+E000–U+FFFF; moving the surrogates above those units gives code point order.
 */
export function byCodePoint(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= ABOVE_SURROGATES) return unit - (ABOVE_SURROGATES - SURROGATES);
  if (unit >= SURROGATES) return unit + (0x10000 - ABOVE_SURROGATES);
  return unit;
}
