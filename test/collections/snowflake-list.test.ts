import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SnowflakeList } from '../../src/collections/snowflake-list.js';

const snowflake = fc.oneof(
  fc.stringMatching(/^[0-9]{1,20}$/).filter((id) => id.length < 20 || BigInt(id) < 2n ** 64n),
  fc.constantFrom('0', '00', '007', '0000000001', '18446744073709551615', '80351110224678912'),
);

describe('a list of snowflakes', () => {
  it('gives back what was pushed, in order and exactly, and keeps what retain keeps', () => {
    fc.assert(
      fc.property(fc.array(snowflake, { maxLength: 300, size: 'max' }), fc.nat(), (ids, seed) => {
        const list = new SnowflakeList();
        for (const id of ids) expect(list.push(id)).toBe(true);
        expect(list.length).toBe(ids.length);
        expect([...list]).toEqual(ids);
        const keep = (id: string) => (id.length + seed) % 3 !== 0;
        list.retain(keep);
        expect([...list]).toEqual(ids.filter(keep));
        list.push('42');
        expect(list.at(list.length - 1)).toBe('42');
      }),
    );
  });

  it('grows past thousands of ids and gives back its room when retain leaves few', () => {
    const list = new SnowflakeList();
    const ids = Array.from({ length: 5_000 }, (_, n) => String(80351110224678912n + BigInt(n) * 4194304n));
    for (const id of ids) list.push(id);
    expect([...list]).toEqual(ids);
    const few = (id: string) => id.endsWith('2') && id < (ids[40] as string);
    list.retain(few);
    expect([...list]).toEqual(ids.filter(few));
    for (const id of ids.slice(0, 100)) list.push(id);
    expect(list.at(list.length - 100)).toBe(ids[0]);
    list.retain(() => false);
    expect(list.length).toBe(0);
    expect([...list]).toEqual([]);
  });

  it('lists nothing that is not 1–20 digits', () => {
    const list = new SnowflakeList();
    for (const id of ['', 'abc', '12a', '1'.repeat(21), ' 1']) expect(list.push(id)).toBe(false);
    expect(list.length).toBe(0);
    expect(list.at(0)).toBeUndefined();
  });
});
