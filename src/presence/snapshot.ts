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

function unicodeEscape(unit: string): string {
  return `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** JSON text with every character beyond ASCII escaped: the same JSON value, in ASCII. */
export function asciiJson(json: string): string {
  return json.replace(BEYOND_ASCII, unicodeEscape);
}

/** The envelope around `json`, as ASCII, held at one byte per character. */
export function envelopeOf(json: string): string {
  const escaped = asciiJson(json);
  return oneByte(`${ENVELOPE_HEAD}${escaped}${ENVELOPE_TAIL}`, escaped !== json);
}

/** Where the user's JSON begins in an envelope: `discord_user` is a presence's first field. */
const USER_HEAD = `${ENVELOPE_HEAD}{"discord_user":`;

/**
 * The envelope of a presence serialized in two parts: its user's JSON, and the JSON of the other fields
 * (`{"discord_status":…}`). `userLength` is the length of the user's JSON inside `body`, which `userJsonIn`
 * takes back out: held that way, a user costs no objects of its own beside the text.
 */
export function envelopeOfParts(userJson: string, fieldsJson: string): { body: string; userLength: number } {
  const user = asciiJson(userJson);
  const fields = asciiJson(fieldsJson);
  const text = `${USER_HEAD}${user},${fields.slice(1)}${ENVELOPE_TAIL}`;
  return { body: oneByte(text, user !== userJson || fields !== fieldsJson), userLength: user.length };
}

/** The user's JSON in a body made by `envelopeOfParts`: already ASCII, so it goes back in as it is. */
export function userJsonIn(body: string, userLength: number): string {
  return body.slice(USER_HEAD.length, USER_HEAD.length + userLength);
}

/** `text` as one flat string of one byte per character; `escaped`: made by replacing characters. */
function oneByte(text: string, escaped: boolean): string {
  // JSON with a character beyond Latin-1 is a two-byte string, and so is what a replacement over it
  // makes, though every character is ASCII now: copied once into a one-byte string, it is half the size.
  if (escaped) return Buffer.from(text, 'latin1').toString('latin1');
  // Measuring flattens the concatenation, so what is held is one string, not three pieces.
  Buffer.byteLength(text);
  return text;
}

export function snapshotOf(presence: Presence, json: string, version: number): PresenceSnapshot {
  return new PresenceSnapshot(presence, envelopeOf(json), version);
}
