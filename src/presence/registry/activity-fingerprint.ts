import type { GatewayActivity } from 'discord-api-types/v10';

/**
 * A number made from the fields of a list of activities that a guild copy must match exactly (count,
 * type, name, details, state: see guild-copy.ts). Equal lists always have equal fingerprints, so an update
 * whose fingerprint differs from the current presence's is a change, found without reading the current
 * activities back. Equal fingerprints say nothing: those updates are compared in full.
 */
export function activityFingerprint(activities: readonly GatewayActivity[]): number {
  let fingerprint = activities.length;
  for (const activity of activities) {
    fingerprint = mix(fingerprint, valueFingerprint(activity.type));
    fingerprint = mix(fingerprint, valueFingerprint(activity.name));
    fingerprint = mix(fingerprint, valueFingerprint(activity.details));
    fingerprint = mix(fingerprint, valueFingerprint(activity.state));
  }
  return fingerprint;
}

/** A few characters and the length stand for a string: a new track or status text moves one of them. */
function valueFingerprint(value: unknown): number {
  if (typeof value === 'string') {
    const { length } = value;
    if (length === 0) return 1;
    const ends = mix(value.charCodeAt(0), value.charCodeAt(length - 1));
    return mix(mix(length, ends), value.charCodeAt(length >> 1));
  }
  if (typeof value === 'number') return mix(2, value | 0);
  return value === undefined ? 3 : 4;
}

function mix(fingerprint: number, value: number): number {
  return Math.imul(fingerprint ^ value, 0x9e3779b1) ^ (fingerprint >>> 15);
}
