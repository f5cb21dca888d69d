import type { PrivacyPatch } from '../presence/privacy.js';

/**
 * The settings a patch names, with their values. A field present as `undefined` is not named: JSON, in
 * which every adapter keeps the values, would leave it out, so it must neither replace nor remove one.
 */
export function namedSettings(patch: PrivacyPatch): [string, unknown][] {
  return Object.entries(patch).filter(([, value]) => value !== undefined);
}
