import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiKeysIn, generateApiKey, hashApiKey, isApiKeyShape, sameKeyHash } from '../../src/keys/api-key.js';

describe('API keys', () => {
  it('are prs_ and 43 base64url characters of fresh randomness', () => {
    const keys = new Set(Array.from({ length: 1000 }, generateApiKey));
    expect(keys.size).toBe(1000);
    for (const key of keys) expect(key).toMatch(/^prs_[A-Za-z0-9_-]{43}$/);
    expect(isApiKeyShape('prs_short')).toBe(false);
  });

  it('are stored as their SHA-256', () => {
    const key = generateApiKey();
    expect(hashApiKey(key).equals(createHash('sha256').update(key).digest())).toBe(true);
    expect(sameKeyHash(hashApiKey(key), hashApiKey(key))).toBe(true);
    expect(sameKeyHash(hashApiKey(key), hashApiKey(generateApiKey()))).toBe(false);
    expect(sameKeyHash(hashApiKey(key), Buffer.alloc(3))).toBe(false);
  });

  it('are found inside text, each once, and not inside longer tokens', () => {
    const key = generateApiKey();
    expect(apiKeysIn(`here: ${key}, again ${key}.`)).toEqual([key]);
    expect(apiKeysIn(`${key}X`)).toEqual([]);
    expect(apiKeysIn('nothing here prs_')).toEqual([]);
  });
});
