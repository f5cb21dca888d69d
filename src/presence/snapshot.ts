import type { Presence } from './model.js';

/** The REST envelope around a presence's JSON: `{"success":true,"data":…}`. */
const ENVELOPE_HEAD = '{"success":true,"data":';
const ENVELOPE_TAIL = '}';

/**
 * A presence serialized once, when it changed. REST answers with `body` as is and the socket builds its
 * frames around `json`, so no reader serializes a presence again.
 *
 * The text is held once, as the envelope's bytes, each in a buffer of its own exact size: a monitored
 * user costs their presence's bytes once, not a string, a buffer and a share of a pooled slab besides.
 * `json` is decoded from them when asked, which happens once per change (frames, the shared state),
 * not per read. The presence as an object is held only while its change is handed out (`release`):
 * after that, the few readers that want the object (a card, a stats read) parse it from the bytes.
 */
export class PresenceSnapshot {
  #presence: Presence | null;

  constructor(
    presence: Presence,
    /** The REST envelope `{"success":true,"data":…}` as bytes. */
    readonly body: Buffer,
    /** Grows by one with every change of this user's presence. */
    readonly version: number,
  ) {
    this.#presence = presence;
  }

  /** The presence object as JSON. */
  get json(): string {
    return this.body.toString('utf8', ENVELOPE_HEAD.length, this.body.length - ENVELOPE_TAIL.length);
  }

  /** The presence as an object; parsed from the bytes once the snapshot is released. */
  get presence(): Presence {
    return this.#presence ?? (JSON.parse(this.json) as Presence);
  }

  /** Lets the object go: from now on the bytes are all this snapshot holds. */
  release(): void {
    this.#presence = null;
  }
}

/** The envelope around `json`, as bytes in a buffer of their own (never a slice of Node's shared pool). */
export function envelopeOf(json: string): Buffer {
  const text = `${ENVELOPE_HEAD}${json}${ENVELOPE_TAIL}`;
  const body = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  body.write(text);
  return body;
}

export function snapshotOf(presence: Presence, json: string, version: number): PresenceSnapshot {
  return new PresenceSnapshot(presence, envelopeOf(json), version);
}
