import { cdnBase } from './values.js';

/** An avatar hash as Discord makes them (`a_` first when animated): safe to put in a CDN path as it is. */
export const AVATAR_HASH = /^(a_)?[A-Za-z0-9_]{1,64}$/;
/** Discord has six default avatars (embed/avatars/0–5.png). */
const DEFAULT_AVATAR_COUNT = 6n;
/** Users still on a legacy discriminator get one of the first five, by discriminator. */
const LEGACY_DEFAULT_AVATAR_COUNT = 5;

/** The user's own avatar hash, or null without one (or with a value no CDN path could carry). */
export function avatarHash(user: { avatar?: unknown }): string | null {
  return typeof user.avatar === 'string' && AVATAR_HASH.test(user.avatar) ? user.avatar : null;
}

/** The user's own avatar on Discord's CDN, as `extension` at `size` px. */
export function avatarUrl(
  cdnUrl: string,
  userId: string,
  hash: string,
  extension: string,
  size: number,
): string {
  return `${cdnBase(cdnUrl)}/avatars/${userId}/${hash}.${extension}?size=${size}`;
}

/**
 * Which default avatar Discord shows for a user without one: `(id >> 22) % 6` for users on the new
 * username system, `discriminator % 5` for those who still have a legacy discriminator.
 */
export function defaultAvatarIndex(userId: string, discriminator?: string | null): number {
  if (discriminator && /^\d{1,4}$/.test(discriminator) && Number(discriminator) !== 0) {
    return Number(discriminator) % LEGACY_DEFAULT_AVATAR_COUNT;
  }
  try {
    return Number((BigInt(userId) >> 22n) % DEFAULT_AVATAR_COUNT);
  } catch {
    return 0;
  }
}

/** Discord's default avatar for the user: a PNG, in one size only. */
export function defaultAvatarUrl(cdnUrl: string, userId: string, discriminator?: string | null): string {
  return `${cdnBase(cdnUrl)}/embed/avatars/${defaultAvatarIndex(userId, discriminator)}.png`;
}
