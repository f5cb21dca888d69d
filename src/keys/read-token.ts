import { randomBytes } from 'node:crypto';
import { hashApiKey, sameKeyHash } from './api-key.js';

/**
 * A read token: what its owner hands to a page, a README card or a friend so that it reads them while they
 * are private. It reads, and nothing else: `prt_`, not an API key's `prs_`, so neither is taken for the
 * other, and secret scanners tell them apart. 256 random bits, kept only as their SHA-256.
 */
export const READ_TOKEN_PREFIX = 'prt_';
const READ_TOKEN_RANDOM_BYTES = 32;
const READ_TOKEN = /^prt_[A-Za-z0-9_-]{43}$/;
/** Finds read tokens inside any text (tests read logs with it). */
export const READ_TOKEN_IN_TEXT = /prt_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;

/** Read tokens one user may hold at once. */
export const READ_TOKENS_PER_USER = 10;
/** A token's label: text of at most this many characters (code points). */
export const READ_TOKEN_LABEL_MAX_CHARS = 64;

const READ_TOKEN_ID = /^rt_[A-Za-z0-9_-]{16}$/;

export function generateReadToken(): string {
  return READ_TOKEN_PREFIX + randomBytes(READ_TOKEN_RANDOM_BYTES).toString('base64url');
}

/** A token's id, which names it in lists and removals: it tells nothing of the token. */
export function generateReadTokenId(): string {
  return `rt_${randomBytes(12).toString('base64url')}`;
}

export function isReadTokenShape(value: string): boolean {
  return READ_TOKEN.test(value);
}

export function isReadTokenId(value: string): boolean {
  return READ_TOKEN_ID.test(value);
}

/** What the store keeps instead of the token: SHA-256, as for API keys. */
export function hashReadToken(token: string): Buffer {
  return hashApiKey(token);
}

/** Constant-time comparison of two token hashes. */
export const sameReadTokenHash = sameKeyHash;

/**
 * A label as given, or why it is refused: text of 1–64 characters with no control or format characters (a
 * line break, a bidirectional override), so that a list shows it as it reads. Surrounding spaces go.
 */
export function checkedLabel(value: unknown): { label: string | null } | { refused: string } {
  if (value === undefined || value === null) return { label: null };
  if (typeof value !== 'string') return { refused: '`label` must be a string' };
  const label = value.trim();
  if (label === '') return { label: null };
  if ([...label].length > READ_TOKEN_LABEL_MAX_CHARS) {
    return { refused: `\`label\` is longer than ${READ_TOKEN_LABEL_MAX_CHARS} characters` };
  }
  if (/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]/u.test(label)) {
    return { refused: '`label` must be plain text: no control, format or unassigned characters' };
  }
  return { label };
}
