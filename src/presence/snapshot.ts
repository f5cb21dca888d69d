import type { Presence } from './model.js';

/** The REST envelope around a presence's JSON: `{"success":true,"data":…}`. */
const ENVELOPE_HEAD = '{"success":true,"data":';
const ENVELOPE_TAIL = '}';

/**
 * A presence serialized once, when it changed. REST answers with `body` as is and the socket builds its
 * frames around `json`, so no reader serializes a presence again.
 *
 * The text is held once, as the envelope. Most envelopes are ASCII, and those are held as a string: V8
 * keeps it as one byte per character with a 16-byte header, where a buffer costs its bytes plus about
 * 350 bytes of objects and allocator bookkeeping around them — a third of a typical presence, for every
 * monitored user. An envelope with other characters would take two bytes per character as a string, so
 * it is held as UTF-8 bytes in a buffer of its own exact size. Either way `body.length` is its length in
 * bytes. `json` is decoded from it when asked, which happens once per change (frames, the shared state),
 * not per read. The presence as an object is held only while its change is handed out (`release`): after
 * that, the few readers that want the object (a card, a stats read) parse it from the text.
 */
export class PresenceSnapshot {
  #presence: Presence | null;

  constructor(
    presence: Presence,
    /** The REST envelope `{"success":true,"data":…}`: an ASCII string, or UTF-8 bytes. */
    readonly body: Body,
    /** Grows by one with every change of this user's presence. */
    readonly version: number,
  ) {
    this.#presence = presence;
  }

  /** The presence object as JSON. */
  get json(): string {
    const end = this.body.length - ENVELOPE_TAIL.length;
    return typeof this.body === 'string'
      ? this.body.slice(ENVELOPE_HEAD.length, end)
      : this.body.toString('utf8', ENVELOPE_HEAD.length, end);
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

/** An envelope as a snapshot holds it: a string only when it is ASCII, so its length is its byte length. */
export type Body = string | Buffer;

/** The envelope around `json`: the string itself when ASCII, else its bytes in a buffer of their own. */
export function envelopeOf(json: string): Body {
  const text = `${ENVELOPE_HEAD}${json}${ENVELOPE_TAIL}`;
  // Measuring also flattens the concatenation, so what is held is one string, not three pieces.
  const bytes = Buffer.byteLength(text);
  if (bytes === text.length) return text;
  // Never a slice of Node's shared pool, which a long-lived slice would keep whole.
  const body = Buffer.allocUnsafeSlow(bytes);
  body.write(text);
  return body;
}

/** Whether two envelopes hold the same text. */
export function sameBody(a: Body, b: Body): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.equals(b);
}

export function snapshotOf(presence: Presence, json: string, version: number): PresenceSnapshot {
  return new PresenceSnapshot(presence, envelopeOf(json), version);
}
