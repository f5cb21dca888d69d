import type { UserId } from './types.js';

const SNOWFLAKE = /^[0-9]{1,20}$/;
/** Snowflakes are 64-bit: twenty digits can say more. */
const SNOWFLAKE_LIMIT = 2n ** 64n;

/**
 * The id, if it is a Discord user id; a TypeError naming it otherwise. The server refuses a bad id (closing
 * a socket, or answering 400); refusing it here says which one, before anything is sent.
 */
export function checkedUserId(id: unknown): UserId {
  if (typeof id !== 'string' || !SNOWFLAKE.test(id) || BigInt(id) >= SNOWFLAKE_LIMIT) {
    throw new TypeError(`${JSON.stringify(id)} is not a Discord user id`);
  }
  return id;
}
