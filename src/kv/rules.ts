import type { KvChange, KvLimits } from '../presence/model.js';

/** A key name: 1–255 of `[A-Za-z0-9_]`. */
export const KV_KEY_PATTERN = '^[A-Za-z0-9_]{1,255}$';
export const KV_KEY_MAX_LENGTH = 255;
/** A value's length in characters (code points, so an emoji counts once). */
export const KV_VALUE_MAX_CHARS = 30_000;
/** Keys one user may keep. */
export const KV_MAX_KEYS = 512;
/** UTF-8 bytes of all of one user's keys and values together, unless KV_MAX_BYTES says otherwise. */
export const DEFAULT_KV_MAX_BYTES = 1024 * 1024;
/** What KV_MAX_BYTES may be set to: from room for a few short values to a KV every reader would feel. */
export const KV_MAX_BYTES_MIN = 1024;
export const KV_MAX_BYTES_MAX = 64 * 1024 * 1024;

const KEY = new RegExp(KV_KEY_PATTERN);

/** Why a write was refused, in the API's error codes. */
export type KvRejection =
  | { code: 'invalid_kv_key'; message: string }
  | { code: 'invalid_kv_value'; message: string }
  | { code: 'kv_limit_exceeded'; message: string };

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

/** Code points of a well-formed string: its UTF-16 units less one for each surrogate pair. */
function codePoints(value: string): number {
  let count = value.length;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) count--;
  }
  return count;
}

/**
 * Checks a whole change before anything is written: the first problem found, or undefined. Cheapest
 * first: the number of keys (a change setting more than a user may keep can never fit), then every key
 * name, then the values. The limits that depend on what is stored are checked by the store, atomically
 * with the write.
 */
export function changeRejection(change: KvChange<unknown>): KvRejection | undefined {
  const tooMany = keyCountRejection(change.set.size);
  if (tooMany) return tooMany;
  for (const key of change.set.keys()) {
    const rejection = keyRejection(key);
    if (rejection) return rejection;
  }
  for (const key of change.delete) {
    const rejection = keyRejection(key);
    if (rejection) return rejection;
  }
  for (const [key, value] of change.set) {
    const rejection = valueRejection(key, value);
    if (rejection) return rejection;
  }
  return undefined;
}

/** A change that sets more keys than a user may keep, whatever is stored. */
export function keyCountRejection(keys: number): KvRejection | undefined {
  if (keys <= KV_MAX_KEYS) return undefined;
  return {
    code: 'kv_limit_exceeded',
    message: `this write sets ${figure(keys)} keys; the limit is ${figure(KV_MAX_KEYS)}`,
  };
}

/** The store refused a write: it would have left `wouldHave` keys, or bytes, past `limits`. */
export function limitRejection(
  refusal: { refused: 'keys' | 'bytes'; wouldHave: number },
  limits: KvLimits,
): KvRejection {
  const left = figure(refusal.wouldHave);
  const message =
    refusal.refused === 'keys'
      ? `this write would leave ${left} keys; the limit is ${figure(limits.maxKeys)}`
      : `this write would leave ${left} bytes of KV; the limit is ${figure(limits.maxBytes)} (KV_MAX_BYTES)`;
  return { code: 'kv_limit_exceeded', message };
}

function figure(value: number): string {
  return value.toLocaleString('en');
}
