import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDelta, applyDeltaToBytes, deltaOf } from '../../../src/presence/registry/kv-delta.js';

describe('a KV change as it travels', () => {
  it('sets win over deletes of the same key, and deletes of other keys are kept', () => {
    expect(deltaOf({ set: new Map([['a', '1']]), delete: ['a', 'b'] })).toEqual({
      set: [['a', '1']],
      delete: ['b'],
    });
  });

  it('applied to a KV JSON, gives the JSON a store would read: keys in code point order', () => {
    const held = JSON.stringify({ b: '2', z: '26' });
    expect(
      applyDelta(held, {
        set: [
          ['a', '1'],
          ['é', 'x'],
          ['🎧', 'y'],
        ],
        delete: ['z', 'missing'],
      }),
    ).toBe(JSON.stringify({ a: '1', b: '2', é: 'x', '🎧': 'y' }));
  });

  it('reads escaped JSON, keeps a key named __proto__ as data, and applies twice as once', () => {
    const escaped = '{"note":"h\\u00e9llo"}';
    const delta = { set: [['__proto__', 'data'] as [string, string]], delete: [] };
    const once = applyDelta(escaped, delta);
    expect(once).toBe('{"__proto__":"data","note":"héllo"}');
    expect(applyDelta(once, delta)).toBe(once);
    expect(({} as Record<string, unknown>).data).toBeUndefined();
  });
});

describe('a KV change applied to the bytes of a large KV', () => {
  const key = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9_]{1,12}$/),
    fc.constantFrom('0', '7', '10', '4294967294', '4294967295', '01', '__proto__', 'é', '🎧', '\ue000'),
  );
  const value = fc.string({ unit: 'grapheme', maxLength: 40 });
  const kv = fc.dictionary(key, value, { maxKeys: 20 });
  const delta = fc.record({
    set: fc.array(fc.tuple(key, value), { maxLength: 6 }),
    delete: fc.array(key, { maxLength: 6 }),
  });

  it('gives byte for byte what applying it to the JSON text gives, for any KV and change', () => {
    fc.assert(
      fc.property(kv, delta, (held, change) => {
        // As a store gives it: an object built in key order, then serialized.
        const json = JSON.stringify(Object.fromEntries(Object.entries(held)));
        const asText = applyDelta(json, change);
        expect(applyDeltaToBytes(Buffer.from(json), change).toString()).toBe(asText);
        expect(JSON.parse(asText)).toEqual(JSON.parse(applyDelta(asText, { set: [], delete: [] })));
      }),
      { numRuns: 500 },
    );
  });
});
