import { describe, expect, it } from 'vitest';
import { kvBytes, kvDigest, patchBodies, slotsAtCap, valueFor } from '../../bench/lib/kv-at-cap.js';
import { PATCH_BODY_LIMIT } from '../../src/http/routes/kv.js';
import { DEFAULT_KV_MAX_BYTES, KV_VALUE_MAX_CHARS, valueRejection } from '../../src/kv/rules.js';

const codePoints = (text: string) => [...text].length;

describe('a KV at the cap, for the hostile bench', () => {
  const slots = slotsAtCap(DEFAULT_KV_MAX_BYTES);
  const kv = Object.fromEntries(slots.map((slot) => [slot.key, valueFor(slot)]));

  it('is exactly KV_MAX_BYTES of keys and values, in values the service accepts', () => {
    expect(kvBytes(kv)).toBe(DEFAULT_KV_MAX_BYTES);
    for (const [key, value] of Object.entries(kv)) {
      expect(valueRejection(key, value)).toBeUndefined();
      expect(codePoints(value)).toBeLessThanOrEqual(KV_VALUE_MAX_CHARS);
    }
  });

  it('is mostly multi-byte characters, drawn anew for every value', () => {
    const ascii = [...Object.values(kv).join('')].filter((char) => Buffer.byteLength(char) === 1).length;
    expect(ascii).toBeLessThan(4);
    const again = valueFor(slots[0] as (typeof slots)[number]);
    expect(Buffer.byteLength(again)).toBe(Buffer.byteLength(kv.k0 as string));
    expect(again).not.toBe(kv.k0);
  });

  it('fills other caps to the byte too', () => {
    for (const cap of [1024, 4096, 200_001, 5 * 1024 * 1024]) {
      const values = Object.fromEntries(slotsAtCap(cap).map((slot) => [slot.key, valueFor(slot)]));
      expect(kvBytes(values)).toBe(cap);
    }
  });

  it('goes in PATCH bodies within the body limit, every key once', () => {
    const bodies = patchBodies(Object.entries(kv), PATCH_BODY_LIMIT);
    for (const body of bodies) expect(Buffer.byteLength(body)).toBeLessThanOrEqual(PATCH_BODY_LIMIT);
    expect(Object.assign({}, ...bodies.map((body) => JSON.parse(body)))).toEqual(kv);
    expect(() => patchBodies([['big', 'x'.repeat(PATCH_BODY_LIMIT)]], PATCH_BODY_LIMIT)).toThrow(/big/);
  });

  it('has one fingerprint whatever the order of its keys, and another for any other value', () => {
    const reversed = Object.fromEntries(Object.entries(kv).reverse());
    expect(kvDigest(reversed)).toBe(kvDigest(kv));
    expect(kvDigest({ ...kv, k0: valueFor(slots[0] as (typeof slots)[number]) })).not.toBe(kvDigest(kv));
  });
});
