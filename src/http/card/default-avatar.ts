import { cdnBase } from '../../presence/values.js';

/** Discord has six default avatars (embed/avatars/0–5.png). */
export const DEFAULT_AVATAR_COUNT = 6n;
/** Users still on a legacy discriminator get one of the first five, by discriminator. */
const LEGACY_DEFAULT_AVATAR_COUNT = 5;

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

export function defaultAvatarUrl(cdnUrl: string, userId: string, discriminator?: string | null): string {
  return `${cdnBase(cdnUrl)}/embed/avatars/${defaultAvatarIndex(userId, discriminator)}.png`;
}

/**
 * The colours of Discord's six default avatars, by index: what the card draws itself when even the default
 * avatar cannot be fetched.
 */
export const DEFAULT_AVATAR_COLOURS = [
  '#5865f2',
  '#757e8a',
  '#3ba55c',
  '#faa61a',
  '#ed4245',
  '#eb459f',
] as const;
