import type { Presence } from './model.js';

/**
 * A presence serialized once, when it changed. REST answers with `body` as is and the socket builds its
 * frames around `json`, so no reader serializes a presence again.
 */
export interface PresenceSnapshot {
  readonly presence: Presence;
  /** The presence object as JSON. */
  readonly json: string;
  /** The REST envelope `{"success":true,"data":…}` as bytes. */
  readonly body: Buffer;
  /** Grows by one with every change of this user's presence. */
  readonly version: number;
}

export function snapshotOf(presence: Presence, json: string, version: number): PresenceSnapshot {
  return { presence, json, body: Buffer.from(`{"success":true,"data":${json}}`), version };
}
