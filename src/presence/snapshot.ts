import type { Presence } from './model.js';

/** The REST envelope around a presence's JSON: `{"success":true,"data":…}`. */
const ENVELOPE_HEAD = '{"success":true,"data":';
const ENVELOPE_TAIL = '}';

/**
 * A presence serialized once, when it changed. REST answers with `body` as is and the socket builds its
 * frames around `json`, so no reader serializes a presence again.
 *
 * The text is held once, as the envelope, in a string of ASCII only: characters beyond ASCII are written
 * as JSON's `\uXXXX` escapes, which every JSON parser reads back as the same text. V8 keeps such a string
 * at one byte per character behind a 16-byte header; a buffer of UTF-8 bytes would cost about 350 bytes of
 * objects and allocator bookkeeping around them, and a string with one emoji in it two bytes per
 * character — a third of a typical presence again, for every monitored user. Being ASCII, `body.length`
 * is also its length in bytes. `json` is a slice of it. The presence as an object is held only while its
 * change is handed out (`release`): after that, the few readers that want the object (a card, a stats
 * read) parse it from the text.
 */
export class PresenceSnapshot {
  #presence: Presence | null;

  constructor(
    presence: Presence,
    /** The REST envelope `{"success":true,"data":…}`, ASCII only. */
    readonly body: string,
    /** Grows by one with every change of this user's presence. */
    readonly version: number,
  ) {
    this.#presence = presence;
  }

  /** The presence object as JSON (ASCII only, like the envelope). */
  get json(): string {
    return this.body.slice(ENVELOPE_HEAD.length, this.body.length - ENVELOPE_TAIL.length);
  }

  /** The presence as an object; parsed from the text once the snapshot is released. */
  get presence(): Presence {
    return this.#presence ?? (JSON.parse(this.json) as Presence);
  }

  /** Lets the object go: from now on the text is all this snapshot holds. */
  release(): void {
    this.#presence = null;
  }
}

/** Any UTF-16 code unit beyond ASCII: in JSON text, these occur only inside strings. */
const BEYOND_ASCII = /[\u0080-\uffff]/g;
const HAS_BEYOND_ASCII = /[\u0080-\uffff]/;
/** `\uXXXX` adds this many characters to the one it stands for. */
const ESCAPE_GROWTH = 5;
const BACKSLASH = 0x5c;
const LETTER_U = 0x75;
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/** Where escaped text is put together: grown for a longer text, and kept for the next. */
let scratch = Buffer.allocUnsafeSlow(16 * 1024);

/**
 * `parts` joined, as JSON text in ASCII (every character beyond it as its `\uXXXX` escape, the same JSON
 * value), in one flat string of one byte per character.
 *
 * Text with a character beyond Latin-1 is a two-byte string, and so is whatever a replacement over it
 * makes, though every character is ASCII afterwards. So the escaped text is written as bytes and read
 * back once as Latin-1, which V8 keeps at one byte per character: half the size, and one copy instead of
 * a replacement and a narrowing copy after it.
 */
function asciiJoin(parts: readonly string[]): string {
  if (!parts.some((part) => HAS_BEYOND_ASCII.test(part))) {
    const text = parts.join('');
    // Measuring flattens it, should the engine have kept pieces: what is held is then one string.
    Buffer.byteLength(text);
    return text;
  }
  let capacity = 0;
  for (const part of parts) capacity += part.length * (ESCAPE_GROWTH + 1);
  if (scratch.length < capacity) scratch = Buffer.allocUnsafeSlow(capacity);
  const out = scratch;
  let at = 0;
  for (const part of parts) {
    let from = 0;
    BEYOND_ASCII.lastIndex = 0;
    for (let match = BEYOND_ASCII.exec(part); match !== null; match = BEYOND_ASCII.exec(part)) {
      const { index } = match;
      if (index > from) at += out.write(part.slice(from, index), at, 'latin1');
      const unit = part.charCodeAt(index);
      out[at++] = BACKSLASH;
      out[at++] = LETTER_U;
      out[at++] = HEX_DIGITS[unit >> 12] as number;
      out[at++] = HEX_DIGITS[(unit >> 8) & 15] as number;
      out[at++] = HEX_DIGITS[(unit >> 4) & 15] as number;
      out[at++] = HEX_DIGITS[unit & 15] as number;
      from = index + 1;
    }
    if (from < part.length) at += out.write(from === 0 ? part : part.slice(from), at, 'latin1');
  }
  return out.toString('latin1', 0, at);
}

/** The length of `text` once `asciiJoin` has escaped it. */
function asciiLength(text: string): number {
  let length = text.length;
  if (!HAS_BEYOND_ASCII.test(text)) return length;
  BEYOND_ASCII.lastIndex = 0;
  while (BEYOND_ASCII.exec(text) !== null) length += ESCAPE_GROWTH;
  return length;
}

/** JSON text with every character beyond ASCII escaped: the same JSON value, in ASCII. */
export function asciiJson(json: string): string {
  return asciiJoin([json]);
}

/** The envelope around `json`, as ASCII, held at one byte per character. */
export function envelopeOf(json: string): string {
  return asciiJoin([ENVELOPE_HEAD, json, ENVELOPE_TAIL]);
}

/** Where the user's JSON begins in an envelope: `discord_user` is a presence's first field. */
const USER_HEAD = `${ENVELOPE_HEAD}{"discord_user":`;

/**
 * The envelope of a presence serialized in two parts: its user's JSON, and the JSON of the other fields
 * (`{"discord_status":…}`). `userLength` is the length of the user's JSON inside `body`, which `userJsonIn`
 * takes back out: held that way, a user costs no objects of its own beside the text.
 */
export function envelopeOfParts(userJson: string, fieldsJson: string): { body: string; userLength: number } {
  return {
    body: asciiJoin([USER_HEAD, userJson, ',', fieldsJson.slice(1), ENVELOPE_TAIL]),
    userLength: asciiLength(userJson),
  };
}

/** The user's JSON in a body made by `envelopeOfParts`: already ASCII, so it goes back in as it is. */
export function userJsonIn(body: string, userLength: number): string {
  return body.slice(USER_HEAD.length, USER_HEAD.length + userLength);
}

export function snapshotOf(presence: Presence, json: string, version: number): PresenceSnapshot {
  return new PresenceSnapshot(presence, envelopeOf(json), version);
}
