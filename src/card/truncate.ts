import { ADVANCES, type Advances } from './font.js';

/**
 * SVG text does not wrap or truncate, so text is cut before it passes the room it has. The card draws its
 * text in its own font (font.ts), whose advance widths are known; what the font lacks is drawn by one of
 * the viewer's, and its width is guessed, leaning wide: overestimating costs a character, underestimating
 * would overlap.
 */

/** Bold runs about this much wider than regular, for characters the font lacks. */
const BOLD_FACTOR = 1.08;
/** Latin letters with diacritics beyond the font, Greek, Cyrillic: about an average letter. */
const ALPHABETIC_WIDTH = 640;
/** CJK, kana, hangul, full-width forms: square glyphs. */
const WIDE_WIDTH = 1000;
/** Colour emoji are a little wider than an em in every emoji font. */
const EMOJI_WIDTH = 1200;
/** Anything else (Arabic, Hebrew, Indic, symbols): a generous average. */
const OTHER_WIDTH = 700;

const ELLIPSIS = '…';

const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;
const AS_EMOJI = /[\uFE0F\u20E3]/u;
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

/**
 * The font's advance for a grapheme it draws: one character it has, perhaps with combining marks (no room
 * of their own), and not a keycap or a character asked for as emoji (U+FE0F), which an emoji font draws.
 */
function fontAdvance(grapheme: string, advances: Advances): number | undefined {
  const known = advances.get(grapheme.codePointAt(0) ?? 0);
  if (known === undefined || grapheme.length === 1) return known;
  return !AS_EMOJI.test(grapheme) && INVISIBLE.test(grapheme.slice(1)) ? known : undefined;
}

/** Whether an emoji font draws the grapheme: a pictograph the card's font lacks (© it has), a flag, a keycap. */
export function isEmoji(grapheme: string): boolean {
  if (AS_EMOJI.test(grapheme)) return true;
  return EMOJI.test(grapheme) && fontAdvance(grapheme, ADVANCES.regular) === undefined;
}

/** One grapheme's width, in thousandths of an em: the font's advances, or a guess for what it lacks. */
function graphemeWidth(grapheme: string, bold: boolean): number {
  const known = fontAdvance(grapheme, ADVANCES[bold ? 'bold' : 'regular']);
  if (known !== undefined) return known;
  if (INVISIBLE.test(grapheme)) return 0;
  const guess = isEmoji(grapheme)
    ? EMOJI_WIDTH
    : WIDE.test(grapheme)
      ? WIDE_WIDTH
      : ALPHABETIC.test(grapheme)
        ? ALPHABETIC_WIDTH
        : OTHER_WIDTH;
  return bold ? guess * BOLD_FACTOR : guess;
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
    remember(widths, key, (unitsOf(graphemes(text), font.bold === true) / 1000) * font.size)
  );
}

function unitsOf(parts: readonly string[], bold: boolean): number {
  let units = 0;
  for (const part of parts) units += graphemeWidth(part, bold);
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
  const bold = font.bold === true;
  const scale = font.size / 1000;
  const parts = graphemes(text);
  if (unitsOf(parts, bold) * scale <= maxWidth) return text;

  const room = maxWidth / scale - graphemeWidth(ELLIPSIS, bold);
  let used = 0;
  let kept = 0;
  for (const part of parts) {
    const width = graphemeWidth(part, bold);
    if (used + width > room) break;
    used += width;
    kept++;
  }
  return `${parts.slice(0, kept).join('').trimEnd()}${ELLIPSIS}`;
}
