import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { apiKeysIn, generateApiKey, hashApiKey, isApiKeyShape, sameKeyHash } from '../../src/keys/api-key.js';
import { ApiKeyService } from '../../src/keys/service.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';

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

  it('the service hands a key over: live once sent, replacing the previous one in the same write', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    const service = new ApiKeyService(store.apiKeys);
    const handOver = async () => {
      let key = '';
      const handover = await service.handOver('42', async (sent) => {
        key = sent;
        // Not live while it is being sent.
        expect(await service.ownerOf(sent)).toBeUndefined();
        return { accepted: true };
      });
      expect(handover.outcome).toBe('active');
      return key;
    };
    const first = await handOver();
    expect(await service.ownerOf(first)).toBe('42');
    const second = await handOver();
    expect(await service.ownerOf(first)).toBeUndefined();
    expect(await service.ownerOf(second)).toBe('42');
    expect(await service.ownerOf('garbage')).toBeUndefined();
    expect(await service.ownerOf(generateApiKey())).toBeUndefined();
    const rows = store.db.prepare('SELECT * FROM api_keys').all() as Record<string, unknown>[];
    expect(JSON.stringify(rows)).not.toContain(second.slice(4));
    await store.close();
  });

  it('a key that was not sent, or could not be stored, leaves the previous key working', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    const service = new ApiKeyService(store.apiKeys);
    let current = '';
    await service.handOver('42', async (key) => {
      current = key;
      return { accepted: true };
    });

    let unsent = '';
    const refused = await service.handOver('42', async (key) => {
      unsent = key;
      return { accepted: false, reason: 'no' };
    });
    expect(refused).toEqual({ outcome: 'not-sent', sent: { accepted: false, reason: 'no' } });
    expect(await service.ownerOf(unsent)).toBeUndefined();
    expect(await service.ownerOf(current)).toBe('42');

    const failure = new Error('SQLITE_FULL: database or disk is full');
    const replaceKey = vi.spyOn(store.apiKeys, 'replaceKey').mockRejectedValueOnce(failure);
    let unsaved = '';
    const lost = await service.handOver('42', async (key) => {
      unsaved = key;
      return { accepted: true };
    });
    replaceKey.mockRestore();
    expect(lost).toEqual({ outcome: 'not-stored', sent: { accepted: true }, error: failure });
    expect(await service.ownerOf(unsaved)).toBeUndefined();
    expect(await service.ownerOf(current)).toBe('42');

    expect(await service.revoke(current)).toBe(true);
    expect(await service.ownerOf(current)).toBeUndefined();
    await store.close();
  });
});
