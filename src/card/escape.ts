import { graphemes, isEmoji } from './truncate.js';

/**
 * Text that reaches the card comes from users (names, statuses, activity text written by any app). It goes
 * into XML, so it is cleaned of what XML cannot hold and escaped; nothing a user writes can become markup.
 */

/**
 * What XML 1.0 cannot carry at all, even escaped: C0 controls other than tab, LF and CR, lone surrogates,
 * U+FFFE and U+FFFF. C1 controls are legal but render as boxes; they go too.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uFFFE\uFFFF]|\p{Cs}/gu;

/**
 * Explicit bidi embeddings, overrides and isolates. A name with an unbalanced RLO would reverse the text
 * after it; every piece of user text gets its own isolate instead (see `isolate`).
 */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/** Line breaks and tabs: a card line is one line. */
const WHITESPACE_RUN = /[\t\n\r\u2028\u2029]+/g;

/** User text made fit for one line of the card: no characters XML forbids, no bidi controls, one line. */
export function cleanText(text: string): string {
  return text.replace(NOT_XML, '').replace(BIDI_CONTROLS, '').replace(WHITESPACE_RUN, ' ').trim();
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes for text content and attribute values alike. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char] ?? char);
}

/** U+2068 FIRST STRONG ISOLATE … U+2069 POP DIRECTIONAL ISOLATE. */
const FSI = '\u2068';
const PDI = '\u2069';

/**
 * Wraps text in a first-strong isolate: Hebrew or Arabic text reads right to left (its ellipsis on its
 * left), and it cannot reorder the card's own text around it.
 */
export function isolate(text: string): string {
  return `${FSI}${text}${PDI}`;
}

/**
 * Isolated and escaped, its emoji in `<tspan class="emoji">`: how every piece of user text enters the
 * SVG. The text's font stack names no emoji font (one would draw spaces and digits too); runs of emoji
 * get the emoji stack where they occur.
 */
export function userText(text: string): string {
  if (!MAYBE_EMOJI.test(text)) return escapeXml(isolate(text));
  const known = marked.get(text);
  if (known !== undefined) return known;
  if (marked.size >= MEMO_LIMIT) marked.clear();
  const made = markEmoji(text);
  marked.set(text, made);
  return made;
}

/**
 * Text with emoji, marked up: a card shows the same few names and statuses on every request for it, and
 * segmenting them costs more than the rest of their markup. Bounded by forgetting all at once.
 */
const MEMO_LIMIT = 4_096;
const marked = new Map<string, string>();

function markEmoji(text: string): string {
  let out = '';
  let run = '';
  for (const grapheme of graphemes(text)) {
    if (isEmoji(grapheme)) {
      run += grapheme;
      continue;
    }
    if (run !== '') out += `<tspan class="emoji">${escapeXml(run)}</tspan>`;
    run = '';
    out += escapeXml(grapheme);
  }
  if (run !== '') out += `<tspan class="emoji">${escapeXml(run)}</tspan>`;
  return `${FSI}${out}${PDI}`;
}

/** Text with none of these has no emoji, and is not segmented. */
const MAYBE_EMOJI = /[^ -~]/;
