/** A snowflake as Discord sends it: a decimal string (presence/model.ts names it for the rest of the service). */
export type Snowflake = string;

/** A snowflake splits into its low nine digits and the rest: at most eleven, exact in a double. */
const LOW_DIGITS = 9;
const ZERO = 48;

/**
 * A snowflake as numbers: two doubles and how many digits it has, which keeps leading zeros. Held in typed
 * arrays, ids are no objects on the JS heap.
 */
export interface SnowflakeDigits {
  high: number;
  low: number;
  length: number;
}

/**
 * Reads the digits of `id` into `into`; false for anything but 1–20 digits. The caller keeps `into` and
 * reuses it, so splitting allocates nothing.
 */
export function splitSnowflake(id: string, into: SnowflakeDigits): boolean {
  const length = id.length;
  if (length === 0 || length > 20) return false;
  const lowFrom = Math.max(length - LOW_DIGITS, 0);
  let high = 0;
  let low = 0;
  for (let i = 0; i < length; i++) {
    const digit = id.charCodeAt(i) - ZERO;
    if (digit < 0 || digit > 9) return false;
    if (i < lowFrom) high = high * 10 + digit;
    else low = low * 10 + digit;
  }
  into.high = high;
  into.low = low;
  into.length = length;
  return true;
}

/** The snowflake that `splitSnowflake` read into these. */
export function joinSnowflake(high: number, low: number, length: number): Snowflake {
  const digits = high === 0 ? String(low) : `${high}${String(low).padStart(LOW_DIGITS, '0')}`;
  return digits.padStart(length, '0');
}
