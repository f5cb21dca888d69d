import type { Profile } from '../model.js';
import { isSnowflake } from '../snowflake.js';
import { cdnBase, textOrNull, urlComponent } from './values.js';

/** 2015-01-01T00:00:00Z, the epoch of Discord's snowflakes. */
export const DISCORD_EPOCH_MS = 1_420_070_400_000n;
/** Snowflake bits below the timestamp (worker, process, increment). */
export const SNOWFLAKE_TIMESTAMP_SHIFT = 22n;
export const BANNER_SIZE = 1024;
/** A hash with this prefix is an animated image (GIF). */
export const ANIMATED_HASH_PREFIX = 'a_';
/** accent_color is a 24-bit RGB integer. */
export const MAX_ACCENT_COLOR = 0xffffff;

export interface ProfileFields {
  banner: string | null;
  banner_url: string | null;
  accent_color: number | null;
  member_since: number;
}

/**
 * `banner`, `banner_url`, `accent_color`, `member_since`:
 *
 * | field          | from                                                                         |
 * |----------------|------------------------------------------------------------------------------|
 * | `banner`       | `GET /users/:id` `banner` (hash), null until fetched or when unset           |
 * | `banner_url`   | `{cdn}/banners/{id}/{hash}.{gif if hash starts with a_, else png}?size=1024` |
 * | `accent_color` | `GET /users/:id` `accent_color` (RGB integer), null until fetched or unset   |
 * | `member_since` | the user id's creation time, epoch ms                                        |
 */
export function profileFields(userId: string, profile: Profile | null, cdnUrl: string): ProfileFields {
  const banner = textOrNull(profile?.banner);
  return {
    banner,
    banner_url: banner === null ? null : bannerUrl(userId, banner, cdnUrl),
    accent_color: accentColor(profile?.accent_color),
    member_since: memberSince(userId),
  };
}

export function bannerUrl(userId: string, hash: string, cdnUrl: string): string {
  const extension = hash.startsWith(ANIMATED_HASH_PREFIX) ? 'gif' : 'png';
  const id = urlComponent(String(userId));
  return `${cdnBase(cdnUrl)}/banners/${id}/${urlComponent(hash)}.${extension}?size=${BANNER_SIZE}`;
}

function accentColor(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_ACCENT_COLOR
    ? value
    : null;
}

/**
 * When the account was created, epoch ms: `(id >> 22) + 1420070400000`, in BigInt (ids exceed 2^53).
 * An id that is not a snowflake counts as 0, giving Discord's epoch, so the field stays a number.
 */
export function memberSince(id: unknown): number {
  const snowflake = typeof id === 'string' && isSnowflake(id) ? BigInt(id) : 0n;
  return Number((snowflake >> SNOWFLAKE_TIMESTAMP_SHIFT) + DISCORD_EPOCH_MS);
}
