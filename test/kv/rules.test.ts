import { describe, expect, it } from 'vitest';
import {
  changeRejection,
  isKvKey,
  KV_KEY_MAX_LENGTH,
  KV_VALUE_MAX_CHARS,
  keyRejection,
  limitRejection,
  valueRejection,
} from '../../src/kv/rules.js';

describe('KV rules', () => {
  it.each(['a', 'A_1', 'x'.repeat(KV_KEY_MAX_LENGTH), '__proto__', '0'])('accepts the key %j', (key) => {
    expect(isKvKey(key)).toBe(true);
    expect(keyRejection(key)).toBeUndefined();
  });

  it.each(['', 'x'.repeat(KV_KEY_MAX_LENGTH + 1), 'bad-key', 'sp ace', 'é', 'a.b', 'emoji😀'])(
    'rejects the key %j',
    (key) => {
      expect(keyRejection(key)?.code).toBe('invalid_kv_key');
    },
  );

  it('counts value length in code points, so an emoji counts once', () => {
    expect(valueRejection('k', '😀'.repeat(KV_VALUE_MAX_CHARS))).toBeUndefined();
    expect(valueRejection('k', '😀'.repeat(KV_VALUE_MAX_CHARS + 1))?.code).toBe('invalid_kv_value');
    expect(valueRejection('k', 'a'.repeat(KV_VALUE_MAX_CHARS))).toBeUndefined();
    expect(valueRejection('k', 'a'.repeat(KV_VALUE_MAX_CHARS + 1))?.code).toBe('invalid_kv_value');
    expect(valueRejection('k', '')).toBeUndefined();
  });

  it('rejects values that are not strings or not valid Unicode', () => {
    for (const value of [1, null, true, {}, [], undefined]) {
      expect(valueRejection('k', value)?.code).toBe('invalid_kv_value');
    }
    expect(valueRejection('k', 'lone \ud800 surrogate')?.code).toBe('invalid_kv_value');
  });

  it('reports the first problem of a change, keys before values', () => {
    expect(changeRejection({ set: new Map([['ok', 'v']]), delete: ['fine'] })).toBeUndefined();
    expect(changeRejection({ set: new Map([['bad key', 'x'.repeat(40_000)]]), delete: [] })?.code).toBe(
      'invalid_kv_key',
    );
    expect(changeRejection({ set: new Map(), delete: ['no-dash'] })?.code).toBe('invalid_kv_key');
  });

  it('explains the limit with the numbers', () => {
    expect(limitRejection(513)).toEqual({
      code: 'kv_limit_exceeded',
      message: 'this write would leave 513 keys; the limit is 512',
    });
  });
});
