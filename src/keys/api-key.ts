import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Recognizable to secret scanners: `prs_` then 43 base64url characters (256 random bits). */
export const API_KEY_PREFIX = 'prs_';
export const API_KEY_RANDOM_BYTES = 32;
/** Finds keys inside any text, e.g. a message pasted in the wrong channel. */
export const API_KEY_IN_TEXT = /prs_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;
const API_KEY = /^prs_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(API_KEY_RANDOM_BYTES).toString('base64url');
}

export function isApiKeyShape(value: string): boolean {
  return API_KEY.test(value);
}

/** What the store keeps instead of the key. */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Constant-time comparison of two key hashes. */
export function sameKeyHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Every distinct key-shaped string in a text. */
export function apiKeysIn(text: string): string[] {
  return [...new Set(text.match(API_KEY_IN_TEXT) ?? [])];
}
