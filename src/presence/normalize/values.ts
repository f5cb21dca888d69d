/**
 * Guards for values read off the gateway. Its payloads are JSON we did not write, so every builder reads
 * them through these: a value of the wrong type is absent (null), never an exception.
 */

export type JsonRecord = Record<string, unknown>;

/** A plain object (not null, not an array). */
export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The string itself, or null for anything else. Strings are kept as Discord sent them. */
export function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** A string with at least one non-blank character, or null. */
export function textOrNull(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value : null;
}

/** The property of a record, or undefined when `value` is not a record. */
export function field(value: unknown, key: string): unknown {
  return isRecord(value) ? value[key] : undefined;
}

/** The elements of an array, or none when `value` is not an array. */
export function arrayOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * A snowflake as a string: strings as they are, integers converted. A number reaching us was parsed from
 * JSON as a double, so an id above 2^53 has already lost its low digits; `String()` is the best we can do
 * with it, and it keeps the field a string for clients that compare ids as strings. Anything else is null.
 */
export function snowflakeString(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return value >= 0n ? value.toString() : null;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return String(value);
  return null;
}

const DECIMAL_TIMESTAMP = /^[0-9]{1,16}$/;

/**
 * The largest timestamp given out: above 2^53 − 1 a number is no longer exact, and JSON.stringify writes
 * 1e21 and up as `1e+21`, which no client reads as an integer.
 */
export const MAX_TIMESTAMP_MS = Number.MAX_SAFE_INTEGER;

/**
 * From here on a timestamp is taken for microseconds: as milliseconds it would be after the year 5000,
 * and some rich-presence libraries send microseconds.
 */
export const MICROSECONDS_FROM = 1e14;

/**
 * An epoch-ms timestamp: a non-negative number (truncated to an integer), or a string of decimal digits
 * (some rich-presence clients send them so, and not every path through Discord converts), at most
 * MAX_TIMESTAMP_MS; microseconds (MICROSECONDS_FROM and up) become milliseconds; else null.
 */
export function timestampOrNull(value: unknown): number | null {
  const number = typeof value === 'string' && DECIMAL_TIMESTAMP.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !(number >= 0 && number <= MAX_TIMESTAMP_MS)) return null;
  const ms = number >= MICROSECONDS_FROM ? number / 1000 : number;
  return Math.trunc(ms) + 0; // + 0 turns -0 into 0, as JSON would
}

/**
 * `value` as one URL component. A lone surrogate (JSON can carry one as `\ud800`) becomes U+FFFD first:
 * encodeURIComponent throws on it, and a URL built from what a user wrote must never throw.
 */
export function urlComponent(value: string): string {
  return encodeURIComponent(value.toWellFormed());
}

/** The CDN base without trailing slashes, so `${base}/path` never doubles them. */
export function cdnBase(cdnUrl: string): string {
  return typeof cdnUrl === 'string' ? cdnUrl.replace(/\/+$/, '') : '';
}

/**
 * An http(s) URL as a URL parser writes it (so quotes, spaces and control characters come out escaped),
 * or null for anything else, and for a URL with credentials in it (`https://music.apple.com@evil.example`).
 */
export function webUrl(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const url = URL.parse(value);
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) return null;
  return url.username === '' && url.password === '' ? url.href : null;
}
