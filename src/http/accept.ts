/**
 * Content negotiation: `GET /` answers a person with a page and a program with JSON; a card answers an
 * image unless the client asks for JSON above it.
 *
 * Hand-written because the one negotiator Fastify's packages bring compares whole values (it is made for
 * encodings): it knows neither `text/*` nor which range is the more specific, and both decide here.
 */

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/** RFC 9110's weight: 0 to 1, at most three decimals. */
const QUALITY = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/** The ranges of an Accept header; a range that cannot be read is left out, as if it were not sent. */
function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [range = '', ...parameters] = part.split(';');
    const [type, subtype, extra] = range.trim().toLowerCase().split('/');
    if (!type || !subtype || extra !== undefined) continue;
    let q = 1;
    let readable = true;
    for (const parameter of parameters) {
      const [name = '', value = ''] = parameter.split('=');
      if (name.trim().toLowerCase() !== 'q') continue;
      readable = QUALITY.test(value.trim());
      q = Number(value.trim());
    }
    if (readable) ranges.push({ type, subtype, q });
  }
  return ranges;
}

/** How specific a range is for `type/subtype`: 2 exact, 1 `type/*`, 0 `*\/*`, -1 not a match. */
function specificity(range: MediaRange, type: string, subtype: string): number {
  if (range.type === type && range.subtype === subtype) return 2;
  if (range.type === type && range.subtype === '*') return 1;
  if (range.type === '*' && range.subtype === '*') return 0;
  return -1;
}

/** The weight the client gives `type/subtype`: that of the most specific range that matches it, else 0. */
function qualityOf(ranges: readonly MediaRange[], type: string, subtype: string): number {
  let best = -1;
  let q = 0;
  for (const range of ranges) {
    const level = specificity(range, type, subtype);
    if (level > best || (level === best && range.q > q)) {
      best = level;
      q = range.q;
    }
  }
  return best < 0 ? 0 : q;
}

/**
 * Whether the client would rather have HTML than JSON. Only a strict preference counts: no header, `*\/*`
 * (curl, most HTTP libraries) and a tie all mean JSON, so Lanyard clients keep getting what they expect;
 * browsers name `text/html` and give the rest `*\/*;q=0.8`.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const ranges = parseAccept(accept);
  return qualityOf(ranges, 'text', 'html') > qualityOf(ranges, 'application', 'json');
}

/**
 * Whether the client would rather have JSON than an image of `type` (`image/svg+xml`, `image/png`): a
 * card's errors come as JSON only then. Browsers loading an <img> name image types and give the rest
 * `*\/*;q=0.8`; curl's `*\/*` is a tie, and gets the image.
 */
export function prefersJsonTo(accept: string | undefined, type: string): boolean {
  if (accept === undefined) return false;
  const [major = '', minor = ''] = type.split('/');
  const ranges = parseAccept(accept);
  return qualityOf(ranges, 'application', 'json') > qualityOf(ranges, major, minor);
}
