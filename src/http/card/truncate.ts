/**
 * SVG text does not wrap or truncate, and the server cannot measure it: the viewer's browser picks the font.
 * So widths are estimated from Arial/Helvetica's advance widths (the stack's widest common members; Segoe
 * UI and San Francisco run a little narrower), per grapheme, and text is cut before the estimate passes
 * the room it has. Overestimating costs a character; underestimating would overlap, so the guesses for
 * scripts we cannot list lean wide.
 */

/** Arial's advance widths for U+0020–U+007E, in thousandths of an em. */
const ASCII_WIDTHS = [
  278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556,
  556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278,
  500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469,
  556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500,
  278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
] as const;

/** Bold Arial runs about this much wider than regular. */
const BOLD_FACTOR = 1.08;
/** Latin letters with diacritics, Greek, Cyrillic: about an average lowercase-and-capital letter. */
const ALPHABETIC_WIDTH = 640;
/** CJK, kana, hangul, full-width forms: square glyphs. */
const WIDE_WIDTH = 1000;
/** Colour emoji are a little wider than an em in every emoji font. */
const EMOJI_WIDTH = 1200;
/** Anything else (Arabic, Hebrew, Indic, symbols): a generous average. */
const OTHER_WIDTH = 700;

const ELLIPSIS = '…';
const ELLIPSIS_WIDTH = 1000;

const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;
const WIDE =
  /[\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]|[\u{20000}-\u{3FFFD}]/u;
const ALPHABETIC = /[\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF\u1E00-\u1EFF]/u;
const INVISIBLE = /^[\p{Mn}\p{Me}\p{Cf}]+$/u;

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Printable ASCII only: every character is a grapheme of its own, with a width from the table. */
const PLAIN = /^[\x20-\x7e]*$/;

/** The user-perceived characters of `text`: an emoji with skin tone or a flag is one. */
export function graphemes(text: string): string[] {
  // Most names and titles are plain ASCII, and segmenting costs far more than the rest of a card.
  if (PLAIN.test(text)) return text.split('');
  return Array.from(segmenter.segment(text), (segment) => segment.segment);
}

/** One grapheme's estimated width, in thousandths of an em (regular weight). */
function graphemeWidth(grapheme: string): number {
  const first = grapheme.codePointAt(0) ?? 0;
  if (grapheme.length === 1 && first >= 0x20 && first <= 0x7e) return ASCII_WIDTHS[first - 0x20] as number;
  if (INVISIBLE.test(grapheme)) return 0;
  if (first >= 0x20 && first <= 0x7e && !grapheme.includes('\u20E3')) {
    return ASCII_WIDTHS[first - 0x20] ?? OTHER_WIDTH;
  }
  // Keycaps (1️⃣) start with an ASCII digit but draw as emoji.
  if (EMOJI.test(grapheme) || grapheme.includes('\u20E3')) return EMOJI_WIDTH;
  if (WIDE.test(grapheme)) return WIDE_WIDTH;
  if (first === 0x2026) return ELLIPSIS_WIDTH;
  if (ALPHABETIC.test(grapheme)) return ALPHABETIC_WIDTH;
  return OTHER_WIDTH;
}

export interface FontSpec {
  /** px */
  size: number;
  bold?: boolean;
}

/**
 * A card shows the same few names and titles on every request for it, and measuring them is most of the
 * work of a render: widths and cuts are remembered. The memo is bounded by forgetting all at once, which
 * costs one re-measure per string and needs no bookkeeping per hit.
 */
const MEMO_LIMIT = 8_192;
const widths = new Map<string, number>();
const cuts = new Map<string, string>();

function remember<T>(memo: Map<string, T>, key: string, value: T): T {
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(key, value);
  return value;
}

const fontKey = (font: FontSpec) => `${font.size}${font.bold ? 'b' : ''}`;

/** Estimated rendered width of `text` in px. */
export function textWidth(text: string, font: FontSpec): number {
  const key = `${fontKey(font)}\u0000${text}`;
  return (
    widths.get(key) ??
    remember(widths, key, (unitsOf(graphemes(text)) / 1000) * font.size * (font.bold ? BOLD_FACTOR : 1))
  );
}

function unitsOf(parts: readonly string[]): number {
  let units = 0;
  for (const part of parts) units += graphemeWidth(part);
  return units;
}

/**
 * `text` if it fits in `maxWidth` px, else as many whole graphemes as fit followed by an ellipsis. Trailing
 * spaces before the ellipsis go; an emoji is never split from its modifiers.
 */
export function truncate(text: string, maxWidth: number, font: FontSpec): string {
  const key = `${fontKey(font)}\u0000${maxWidth}\u0000${text}`;
  return cuts.get(key) ?? remember(cuts, key, cut(text, maxWidth, font));
}

function cut(text: string, maxWidth: number, font: FontSpec): string {
  const scale = (font.size * (font.bold ? BOLD_FACTOR : 1)) / 1000;
  const parts = graphemes(text);
  if (unitsOf(parts) * scale <= maxWidth) return text;

  const room = maxWidth / scale - ELLIPSIS_WIDTH;
  let used = 0;
  let kept = 0;
  for (const part of parts) {
    const width = graphemeWidth(part);
    if (used + width > room) break;
    used += width;
    kept++;
  }
  return `${parts.slice(0, kept).join('').trimEnd()}${ELLIPSIS}`;
}
