import type { Kv } from '../presence/model.js';

/** A key name: 1–255 of `[A-Za-z0-9_]`. */
export const KV_KEY_PATTERN = '^[A-Za-z0-9_]{1,255}$';
export const KV_KEY_MAX_LENGTH = 255;
/** A value's length in characters (code points, so an emoji counts once). */
export const KV_VALUE_MAX_CHARS = 30_000;
/** Keys one user may keep. */
export const KV_MAX_KEYS = 512;

const KEY = new RegExp(KV_KEY_PATTERN);

/** Why a write was refused, in the API's error codes. */
export type KvRejection =
  | { code: 'invalid_kv_key'; message: string }
  | { code: 'invalid_kv_value'; message: string }
  | { code: 'kv_limit_exceeded'; message: string };

/** One write: keys to set and keys to delete, applied together or not at all. */
export interface KvChange {
  set: ReadonlyMap<string, string>;
  delete: readonly string[];
}

export function isKvKey(key: string): boolean {
  return KEY.test(key);
}

export function keyRejection(key: string): KvRejection | undefined {
  if (isKvKey(key)) return undefined;
  const shown = JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);
  return {
    code: 'invalid_kv_key',
    message: `key ${shown} is invalid: use 1 to ${KV_KEY_MAX_LENGTH} letters, digits or underscores`,
  };
}

export function valueRejection(key: string, value: unknown): KvRejection | undefined {
  if (typeof value !== 'string') {
    return { code: 'invalid_kv_value', message: `the value of ${JSON.stringify(key)} must be a string` };
  }
  if (!value.isWellFormed()) {
    return { code: 'invalid_kv_value', message: `the value of ${JSON.stringify(key)} is not valid Unicode` };
  }
  // UTF-16 length bounds the code point count from above, so only long strings need counting.
  if (value.length > KV_VALUE_MAX_CHARS && codePoints(value) > KV_VALUE_MAX_CHARS) {
    return {
      code: 'invalid_kv_value',
      message: `the value of ${JSON.stringify(key)} is longer than ${KV_VALUE_MAX_CHARS} characters`,
    };
  }
  return undefined;
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

/**
 * Checks a whole change before anything is written: the first problem found, or undefined. The key
 * limit is checked by the store against the stored keys, atomically with the write.
 */
export function changeRejection(change: KvChange): KvRejection | undefined {
  for (const [key, value] of change.set) {
    const rejection = keyRejection(key) ?? valueRejection(key, value);
    if (rejection) return rejection;
  }
  for (const key of change.delete) {
    const rejection = keyRejection(key);
    if (rejection) return rejection;
  }
  return undefined;
}

export function limitRejection(wouldHave: number): KvRejection {
  return {
    code: 'kv_limit_exceeded',
    message: `this write would leave ${wouldHave} keys; the limit is ${KV_MAX_KEYS}`,
  };
}

/** The stored KV and its revision, which grows with every accepted write. */
export interface KvState {
  kv: Kv;
  revision: number;
}
