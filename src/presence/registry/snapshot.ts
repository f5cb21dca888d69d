import { bodyDigest } from '../../collections/body-digest.js';
import type { DiscordStatus, Freshness, Presence, PresenceSummary } from '../model.js';

/** The REST envelope around a presence's JSON: `{"success":true,"data":…}`. */
const ENVELOPE_HEAD = '{"success":true,"data":';
const ENVELOPE_TAIL = '}';
/** Where the user's JSON begins in an envelope: `discord_user` is a presence's first field. */
const USER_HEAD = `${ENVELOPE_HEAD}{"discord_user":`;
/** `kv` is a presence's last field: its JSON is the body's end but for these. */
const KV_KEY = ',"kv":';
const BODY_TAIL = `}${ENVELOPE_TAIL}`;
const BODY_TAIL_BYTES = Buffer.from(BODY_TAIL);

/**
 * A body at least this long is kept as UTF-8 bytes rather than as an ASCII string: every reader then gets
 * the same bytes (a REST answer, a socket frame) with no copy of its own, and a KV past this size is kept
 * as the bytes it is, not six times over as `\uXXXX` escapes.
 */
export const LARGE_BODY_BYTES = 32 * 1024;

/**
 * A presence serialized once, when it changed. REST answers with `body` as is, the socket builds its
 * frames around the JSON inside it, so no reader serializes a presence again.
 *
 * Most bodies are a string of ASCII only: characters beyond ASCII are written as JSON's `\uXXXX`
 * escapes, which every JSON parser reads back as the same text. V8 keeps such a string at one byte per
 * character behind a 16-byte header; a buffer of UTF-8 bytes would cost about 350 bytes of objects and
 * allocator bookkeeping around them, and a string with one emoji in it two bytes per character — a third
 * of a typical presence again, for every monitored user. Being ASCII, its length is its length in bytes.
 * A body of LARGE_BODY_BYTES or more is a Buffer of UTF-8 instead (see there).
 *
 * `kv` is the last field, and `kvAt` says where its JSON starts: it is taken back out as it is when the
 * rest of the presence changes, and readers of the other fields parse them without it. The presence as an
 * object is kept only while its change is handed out (`release`).
 */
export class PresenceSnapshot {
  #summary: PresenceSummary | null;
  #digest: Buffer | null;

  constructor(
    summary: PresenceSummary | null,
    /** The REST envelope `{"success":true,"data":…}`: ASCII text, or UTF-8 bytes when large. */
    readonly body: string | Buffer,
    /** Grows by one with every change of this user's presence. */
    readonly version: number,
    readonly status: DiscordStatus,
    /** Where the KV's JSON starts in `body`, in bytes. */
    readonly kvAt: number,
    /** The body's digest when known already. */
    digest: Buffer | null = null,
  ) {
    this.#summary = summary;
    this.#digest = digest;
  }

  /** The body's digest (`bodyDigest`), made once: the same bytes have the same digest wherever they are kept. */
  digest(): Buffer {
    this.#digest ??= bodyDigest(this.body);
    return this.#digest;
  }

  /** The body's digest, made by whoever stored the same bytes: not made again when asked. */
  knowDigest(digest: Buffer): void {
    this.#digest ??= digest;
  }

  /** The presence object as JSON text. A copy for large bodies: hot paths take `jsonData()`. */
  get json(): string {
    return typeof this.body === 'string'
      ? this.body.slice(ENVELOPE_HEAD.length, this.body.length - ENVELOPE_TAIL.length)
      : this.body.toString('utf8', ENVELOPE_HEAD.length, this.body.length - ENVELOPE_TAIL.length);
  }

  /** The presence's JSON as kept: ASCII text, or a view of the large body's bytes (no copy). */
  jsonData(): string | Buffer {
    return typeof this.body === 'string'
      ? this.json
      : this.body.subarray(ENVELOPE_HEAD.length, this.body.length - ENVELOPE_TAIL.length);
  }

  /** Where the KV's JSON starts in `jsonData()`. */
  get jsonKvAt(): number {
    return this.kvAt - ENVELOPE_HEAD.length;
  }

  /** The KV's JSON as kept (a view of the body's bytes when large), to go into the next body unchanged. */
  kvJson(): string | Buffer {
    const end = this.body.length - BODY_TAIL.length;
    return typeof this.body === 'string'
      ? this.body.slice(this.kvAt, end)
      : this.body.subarray(this.kvAt, end);
  }

  /** The whole presence, parsed from the text, KV included: readers of other fields take `summary()`. */
  get presence(): Presence {
    return JSON.parse(this.json) as Presence;
  }

  /** Every field but `kv`: kept while the change is handed out, then parsed without the KV. */
  summary(): PresenceSummary {
    if (this.#summary) return this.#summary;
    const end = this.kvAt - KV_KEY.length;
    const head =
      typeof this.body === 'string'
        ? this.body.slice(ENVELOPE_HEAD.length, end)
        : this.body.toString('utf8', ENVELOPE_HEAD.length, end);
    return JSON.parse(`${head}}`) as PresenceSummary;
  }

  /** Whether the two hold the same bytes. */
  sameBody(other: PresenceSnapshot): boolean {
    return sameBody(this.body, other.body);
  }

  /** Lets the object go: from now on the text is all this snapshot holds. */
  release(): void {
    this.#summary = null;
  }
}

export function sameBody(a: string | Buffer, b: string | Buffer): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.equals(b);
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
    // Measuring flattens it, should the engine have kept pieces: what is kept is then one string.
    Buffer.byteLength(text);
    return text;
  }
  return escaped(parts);
}

/** `parts` joined, every character beyond ASCII as its `\uXXXX` escape, in a one-byte string. */
function escaped(parts: readonly string[]): string {
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

/**
 * `text` escaped as `asciiJoin` does, or itself when it is ASCII already: then, and only then, its UTF-8
 * is as long as it is (a character beyond ASCII takes two bytes or more).
 */
function asciiPart(text: string): string {
  return Buffer.byteLength(text) === text.length ? text : escaped([text]);
}

/** JSON text with every character beyond ASCII escaped: the same JSON value, in ASCII. */
export function asciiJson(json: string): string {
  return asciiJoin([json]);
}

/** The envelope around `json`, as ASCII, kept at one byte per character. */
export function envelopeOf(json: string): string {
  return asciiJoin([ENVELOPE_HEAD, json, ENVELOPE_TAIL]);
}

/** A presence's JSON in the parts the registry keeps apart. */
export interface PresenceParts {
  /** The user's JSON. */
  userJson: string;
  /** The fields normalizing makes, as an object's JSON: `{"discord_status":…,"member_since":…}`. */
  fieldsJson: string;
  /** Written after the fields, before the KV. */
  freshness: Freshness;
  /** The KV's JSON: fresh text, or taken out of the previous body as it was kept. */
  kvJson: string | Buffer;
}

/** The freshness as the JSON of two fields, with the comma before them: always ASCII. */
function freshnessJson({ observed_at, stale }: Freshness): string {
  return `,"observed_at":${observed_at},"stale":${stale}`;
}

/** A body put together from its parts, with where the user's and the KV's JSON are in it. */
export interface PresenceBody {
  body: string | Buffer;
  /** The length of the user's JSON in `body`, in bytes (`userJsonIn`). */
  userLength: number;
  /** Where the KV's JSON starts in `body`, in bytes. */
  kvAt: number;
}

/**
 * The envelope of a presence serialized in parts: ASCII text in one flat string while it is smaller
 * than LARGE_BODY_BYTES, UTF-8 bytes past that. A KV kept as bytes goes into the new body as it is.
 */
export function assembleBody({ userJson, fieldsJson, freshness, kvJson }: PresenceParts): PresenceBody {
  const fields = fieldsJson.slice(1, -1);
  const fresh = freshnessJson(freshness);
  // Escaping only ever lengthens text: what is long before it is large, and need not be measured.
  const unescaped = USER_HEAD.length + userJson.length + fields.length + fresh.length + kvJson.length;
  if (typeof kvJson === 'string' && unescaped < LARGE_BODY_BYTES) {
    // Each part is looked at once, and only one beyond ASCII is escaped (usually the fields: a user and a
    // KV out of a kept body are ASCII already). The text need not be flattened here: comparing it with
    // the body kept, or writing it into the arena, does that.
    const user = asciiPart(userJson);
    const kv = asciiPart(kvJson);
    const body = `${USER_HEAD}${user},${asciiPart(fields)}${fresh}${KV_KEY}${kv}${BODY_TAIL}`;
    if (body.length < LARGE_BODY_BYTES) {
      return { body, userLength: user.length, kvAt: body.length - BODY_TAIL.length - kv.length };
    }
  }
  const head = Buffer.from(`${USER_HEAD}${userJson},${fields}${fresh}${KV_KEY}`);
  // Text out of an ASCII body holds `\uXXXX` escapes: as bytes, the KV is the JSON a store's read gives.
  const text =
    typeof kvJson === 'string' && kvJson.includes('\\u') ? JSON.stringify(JSON.parse(kvJson)) : kvJson;
  const kv = typeof text === 'string' ? Buffer.from(text) : text;
  return {
    body: Buffer.concat([head, kv, BODY_TAIL_BYTES]),
    userLength: Buffer.byteLength(userJson),
    kvAt: head.length,
  };
}

/** The user's JSON in a body made by `assembleBody`, to go back in as it is. */
export function userJsonIn(body: string | Buffer, userLength: number): string {
  return typeof body === 'string'
    ? body.slice(USER_HEAD.length, USER_HEAD.length + userLength)
    : body.toString('utf8', USER_HEAD.length, USER_HEAD.length + userLength);
}

/**
 * Every field of the presence in `body` between the user and the KV (the freshness included), as an
 * object's JSON: what change detection reads back without parsing the user or the KV.
 */
export function fieldsJsonIn(body: string | Buffer, userLength: number, kvAt: number): string {
  const start = USER_HEAD.length + userLength + 1;
  const end = kvAt - KV_KEY.length;
  const fields = typeof body === 'string' ? body.slice(start, end) : body.toString('utf8', start, end);
  return `{${fields}}`;
}

/**
 * A snapshot of a presence's JSON as another node serialized it. `kvAt` is where the KV's JSON starts in
 * `json`, in UTF-8 bytes. Small ASCII JSON is kept as text, anything else as bytes.
 */
export function snapshotOfJson(
  json: string,
  version: number,
  status: DiscordStatus,
  kvAt: number,
): PresenceSnapshot {
  const at = kvAt + ENVELOPE_HEAD.length;
  if (json.length < LARGE_BODY_BYTES && !HAS_BEYOND_ASCII.test(json)) {
    return new PresenceSnapshot(null, envelopeOf(json), version, status, at);
  }
  return new PresenceSnapshot(
    null,
    Buffer.from(`${ENVELOPE_HEAD}${json}${ENVELOPE_TAIL}`),
    version,
    status,
    at,
  );
}

/**
 * Where the KV's JSON starts in `json`, the JSON of `presence` with its `kv` last (as every presence here
 * is written): for JSON from an older node that did not say.
 */
export function kvAtOf(json: string, presence: Presence): number {
  const kv = JSON.stringify(presence.kv);
  // Escaped JSON has its KV escaped too; the presence's closing brace follows the KV.
  const kvBytes = HAS_BEYOND_ASCII.test(json) ? Buffer.byteLength(kv) : asciiLength(kv);
  return Buffer.byteLength(json) - 1 - kvBytes;
}
