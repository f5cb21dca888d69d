import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bodyDigest } from '../../src/collections/body-digest.js';
import { arenaOf } from './arena-slots.js';

/** Bytes 0x07, 0x0a, … as the reference test program made them: byte i is (i * 131 + 7) & 0x7f. */
const pattern = (length: number) => Buffer.from(Array.from({ length }, (_, i) => (i * 131 + 7) & 0x7f));

describe('bodyDigest', () => {
  // From MurmurHash3_x86_128 (seed 0) of smhasher's MurmurHash3.cpp, its four words printed in order.
  it.each([
    [0, '00000000000000000000000000000000'],
    [1, 'ae4ba915684028006840280068402800'],
    [3, '72078ce4a886c4f0a886c4f0a886c4f0'],
    [4, 'a30405f693b8ae1b93b8ae1b93b8ae1b'],
    [5, 'a4748e0576c1f06dc63e051ec63e051e'],
    [8, 'f20f6e25a15e93379b9664749b966474'],
    [9, '2d0a2a8f6cf8d74c01c1ec60b50fa6e0'],
    [12, 'd09859b83923ede7c67ff0a93cbce840'],
    [13, 'c97eec8655e3ed429488a199111e744d'],
    [15, '211f4ca065b3fc968851569b7862a8c8'],
    [16, 'a3308752f8ba401cfab9c5c730054d95'],
    [17, '9a79df543e4e8e5fdc42e454edbf25cb'],
    [31, '4b5b7e6bfac53de2a64f5e66df170a1e'],
    [32, 'e536efa739e9cb873b95fed7394651fb'],
    [33, 'aa3e2634ab243a6cfe52e9a48bd846ec'],
    [974, '58afeadf1a3619cce768dc99fa31c7fb'],
    [2048, '4bc91dad25957c7fed6ad361f87586f8'],
  ])('is MurmurHash3 x86_128 of %i bytes', (length, hex) => {
    expect(bodyDigest(pattern(length)).toString('hex')).toBe(hex);
  });

  it('is the published value of a sentence from murmurHash3.js', () => {
    // https://github.com/karanlyons/murmurHash3.js (README, x86.hash128)
    const sentence = "I will not buy this tobacconist's, it is scratched.";
    expect(bodyDigest(sentence).toString('hex')).toBe('9b5b7ba2ef3f7866889adeaf00f3f98e');
  });

  it('gives a text the digest of the UTF-8 bytes it is sent as, beyond ASCII too', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 2000 }), (text) => {
        expect(bodyDigest(text)).toEqual(bodyDigest(Buffer.from(text)));
      }),
    );
    expect(bodyDigest('é')).not.toEqual(bodyDigest(Buffer.from('é', 'latin1')));
  });

  it('changes with any one byte of the body', () => {
    const body = pattern(974);
    const digest = bodyDigest(body);
    for (let i = 0; i < body.length; i++) {
      const changed = Buffer.from(body);
      changed[i] = (changed[i] as number) ^ 1;
      expect(bodyDigest(changed).equals(digest)).toBe(false);
    }
  });

  it('is what the arena keeps beside each text it holds, however the texts move', () => {
    const slots = 3000;
    const arena = arenaOf(slots);
    const text = (slot: number, round: number) => `${pattern(slot % 200).toString('latin1')}${slot}:${round}`;
    // Rewriting every text empties old chunks out: their texts, and digests, are copied on.
    for (let round = 0; round < 3; round++) {
      for (let slot = 0; slot < slots; slot++) arena.write(slot, text(slot, round).padEnd(600, ' '));
    }
    for (let slot = 0; slot < slots; slot++) {
      const held = text(slot, 2).padEnd(600, ' ');
      expect(arena.text(slot)).toBe(held);
      expect(arena.digest(slot)).toEqual(bodyDigest(held));
      expect(arena.digestText(slot)).toBe(bodyDigest(held).toString('base64url'));
    }
  });
});
