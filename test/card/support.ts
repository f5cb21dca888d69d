import type { GatewayActivity } from 'discord-api-types/v10';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { expect } from 'vitest';
import type { DiscordStatus, DiscordUser, Freshness, Presence } from '../../src/presence/model.js';
import { buildPresence } from '../../src/presence/normalize/presence.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';

export const CDN = 'https://cdn.discordapp.com';
export const USER_ID = '94490510688792576';
/** When the presences made here were observed, unless told. */
export const OBSERVED_AT = 1_763_800_000_000;

/** A presence made by the real normalizer from what the gateway would send. */
export function presenceOf(
  input: {
    user?: Partial<DiscordUser>;
    status?: DiscordStatus;
    activities?: GatewayActivity[];
    freshness?: Freshness;
  } = {},
): Presence {
  return buildPresence(
    {
      user: {
        id: USER_ID,
        username: 'nova',
        global_name: 'Nova',
        avatar: null,
        discriminator: '0',
        ...input.user,
      },
      raw: {
        status: input.status ?? 'online',
        activities: input.activities ?? [],
        client_status: { desktop: input.status ?? 'online' },
      },
      profile: null,
      freshness: input.freshness ?? { observed_at: OBSERVED_AT, stale: false },
      kv: {},
    },
    { cdnUrl: CDN, youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER },
  );
}

/** One node of fast-xml-parser's ordered output: `{tag: children, ':@': attributes}` or `{'#text': …}`. */
type XmlNode = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  preserveOrder: true,
  trimValues: false,
  htmlEntities: true,
  parseTagValue: false,
  parseAttributeValue: false,
});

export interface ParsedElement {
  tag: string;
  attributes: Record<string, string>;
  /** The element's text, its descendants' included. */
  text: string;
  children: ParsedElement[];
}

function toElement(node: XmlNode): ParsedElement | null {
  const tag = Object.keys(node).find((key) => key !== ':@' && key !== '#text');
  if (tag === undefined) return null;
  const children: ParsedElement[] = [];
  let text = '';
  for (const child of (node[tag] as XmlNode[]) ?? []) {
    if ('#text' in child) {
      text += String(child['#text']);
      continue;
    }
    const element = toElement(child);
    if (element) {
      children.push(element);
      text += element.text;
    }
  }
  return { tag, attributes: (node[':@'] as Record<string, string>) ?? {}, text, children };
}

export function* walk(element: ParsedElement): Generator<ParsedElement> {
  yield element;
  for (const child of element.children) yield* walk(child);
}

/** XML 1.0's Char production, complemented: what must never appear in the document. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point of the check
const NOT_XML_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|\p{Cs}/u;
/** The five predefined entities and character references; anything else is undefined in SVG. */
const ENTITY = /&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);)/i;

/**
 * Parses a card and checks what every card must be: well-formed XML with one <svg> root, no character
 * XML forbids, no undefined entity, and no reference to anything outside itself (every href a data: URI,
 * every url() a local #id, no external stylesheet).
 */
export function parseCard(svg: string): ParsedElement {
  const valid = XMLValidator.validate(svg);
  expect(valid, JSON.stringify(valid)).toBe(true);
  expect(svg).not.toMatch(NOT_XML_CHAR);
  expect(svg).not.toMatch(ENTITY);
  const nodes = parser.parse(svg) as XmlNode[];
  const roots = nodes.map(toElement).filter((element) => element !== null);
  expect(roots).toHaveLength(1);
  const root = roots[0] as ParsedElement;
  expect(root.tag).toBe('svg');
  expect(root.attributes.xmlns).toBe('http://www.w3.org/2000/svg');

  for (const element of walk(root)) {
    expect(element.tag).not.toMatch(/^(script|foreignObject|a|iframe|use)$/i);
    for (const [name, value] of Object.entries(element.attributes)) {
      expect(name).not.toMatch(/^on/i);
      if (/(^|:)href$|^src$/i.test(name)) expect(value).toMatch(/^data:image\/(png|jpeg|gif|webp);base64,/);
      if (value.includes('url(')) expect(value).toMatch(/^url\(#[a-z0-9-]+\)$/);
      if (name !== 'xmlns') expect(value).not.toMatch(/https?:|javascript:/i);
    }
    if (element.tag === 'style') {
      // Nothing fetched: the one url() is the card's own font, inline.
      expect(element.text).not.toMatch(/@import/i);
      for (const [url] of element.text.matchAll(/url\([^)]*\)/gi)) {
        expect(url).toMatch(/^url\(data:font\/woff;base64,[A-Za-z0-9+/]+={0,2}\)$/);
      }
    }
  }
  return root;
}

/** The elements with `class` among their classes. */
export function byClass(root: ParsedElement, className: string): ParsedElement[] {
  return [...walk(root)].filter((element) => (element.attributes.class ?? '').split(' ').includes(className));
}

/** Text as the user reads it: without the bidi isolates the card wraps user text in. */
export function visible(text: string): string {
  return text.replace(/[\u2068\u2069]/g, '');
}

/** mulberry32: a small seeded generator, so a failing fuzz case can be replayed. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Pieces that have broken SVG renderers and XML writers: markup, entities, controls, bidi, emoji, scripts. */
const PIECES = [
  '<',
  '>',
  '&',
  '"',
  "'",
  '&amp;',
  '&#60;',
  '&lt;script&gt;',
  ']]>',
  '<![CDATA[x]]>',
  '<!--',
  '-->',
  '</text>',
  '<svg onload="alert(1)">',
  '<script>alert(1)</script>',
  '<image href="https://evil.example/x.png"/>',
  'javascript:alert(1)',
  'url(https://evil.example)',
  '\u0000',
  '\u0008',
  '\u001f',
  '\u007f',
  '\u0085',
  '\uFFFE',
  '\uFFFF',
  '\uD800',
  '\uDFFF',
  '\u202E',
  '\u2066',
  '\u2069',
  '\u200F',
  '\n',
  '\r\n',
  '\t',
  ' ',
  'שלום',
  'مرحبا بالعالم',
  '漢字かな',
  '한국어',
  'é',
  'e\u0301',
  'Z̷̢͔̈́a̵̧͉̿l̸̰̈g̶̱̓o̵̝͐',
  '👩‍👩‍👧‍👦',
  '🇫🇷',
  '👍🏽',
  '1️⃣',
  '🎧',
  'W',
  'i',
  'Long name ',
  'x'.repeat(40),
];

export function fuzzText(next: () => number, maxPieces = 12): string {
  const count = Math.floor(next() * maxPieces) + 1;
  let text = '';
  for (let i = 0; i < count; i++) text += PIECES[Math.floor(next() * PIECES.length)] ?? '';
  return text;
}
