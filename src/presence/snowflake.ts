/** 1–20 ASCII digits: the shape of a Discord id. */
export const SNOWFLAKE_PATTERN = '^[0-9]{1,20}$';

const SNOWFLAKE = new RegExp(SNOWFLAKE_PATTERN);
const SNOWFLAKE_LIMIT = 2n ** 64n;

/** A Discord id: 1–20 digits whose value fits in 64 bits. */
export function isSnowflake(value: string): boolean {
  // Below 20 digits every value fits (10^19 < 2^64): only 20 digits need the comparison.
  return SNOWFLAKE.test(value) && (value.length < 20 || BigInt(value) < SNOWFLAKE_LIMIT);
}
