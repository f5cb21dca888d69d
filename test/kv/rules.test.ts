import { describe, expect, it } from 'vitest';
import {
  changeRejection,
  DEFAULT_KV_MAX_BYTES,
  isKvKey,
  KV_KEY_MAX_LENGTH,
  KV_MAX_KEYS,
  KV_VALUE_MAX_CHARS,
  keyCountRejection,
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
    // A bad value ahead of a bad key: the key is still what is reported.
    expect(
      changeRejection({
        set: new Map<string, unknown>([
          ['first', 5],
          ['bad key', 'v'],
        ]),
        delete: [],
      })?.code,
    ).toBe('invalid_kv_key');
    expect(changeRejection({ set: new Map([['first', 5]]), delete: ['no-dash'] })?.code).toBe(
      'invalid_kv_key',
    );
  });

  it('refuses a change setting more keys than a user may keep before looking at any of them', () => {
    const many = new Map<string, unknown>(Array.from({ length: KV_MAX_KEYS }, (_, i) => [`k${i}`, 'v']));
    expect(changeRejection({ set: many, delete: [] })).toBeUndefined();
    many.set('bad key', 5);
    expect(changeRejection({ set: many, delete: [] })).toEqual({
      code: 'kv_limit_exceeded',
      message: 'this write sets 513 keys; the limit is 512',
    });
    expect(keyCountRejection(80_000)?.message).toBe('this write sets 80,000 keys; the limit is 512');
  });

  it('explains the limits with the numbers', () => {
    const limits = { maxKeys: KV_MAX_KEYS, maxBytes: DEFAULT_KV_MAX_BYTES };
    expect(limitRejection({ refused: 'keys', wouldHave: 513 }, limits)).toEqual({
      code: 'kv_limit_exceeded',
      message: 'this write would leave 513 keys; the limit is 512',
    });
    expect(limitRejection({ refused: 'bytes', wouldHave: 1_200_345 }, limits)).toEqual({
      code: 'kv_limit_exceeded',
      message: 'this write would leave 1,200,345 bytes of KV; the limit is 1,048,576 (KV_MAX_BYTES)',
    });
  });
});
