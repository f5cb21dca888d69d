import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NO_SLOT, SnowflakeSlots } from '../../src/collections/snowflake-slots.js';

/** Ids of every shape a snowflake can take: short, leading zeros, 20 digits up to 2^64 - 1. */
const snowflake = fc.oneof(
  fc.stringMatching(/^[0-9]{1,20}$/).filter((id) => id.length < 20 || BigInt(id) < 2n ** 64n),
  fc.constantFrom('0', '00', '1', '1000000000', '0000000001', '18446744073709551615', '80351110224678912'),
);

describe('snowflakes numbered by slots', () => {
  it('finds each id held, gives back its id, and reuses a slot let go, for any sequence of adds and removes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), snowflake), { maxLength: 400, size: 'max' }),
        fc.array(snowflake, { minLength: 1, maxLength: 60, size: 'max' }),
        (operations, pool) => {
          const slots = new SnowflakeSlots();
          const model = new Map<string, number>();
          for (const [adding, drawn] of operations) {
            const id = adding ? drawn : (pool[drawn.length % pool.length] as string);
            if (adding) {
              const slot = slots.add(id);
              if (model.has(id)) expect(slot).toBe(model.get(id));
              else expect([...model.values()]).not.toContain(slot);
              model.set(id, slot);
            } else {
              expect(slots.remove(id)).toBe(model.get(id) ?? NO_SLOT);
              model.delete(id);
            }
          }
          expect(slots.size).toBe(model.size);
          for (const [id, slot] of model) {
            expect(slots.slotOf(id)).toBe(slot);
            expect(slots.idOf(slot)).toBe(id);
          }
          for (const id of pool) if (!model.has(id)) expect(slots.slotOf(id)).toBe(NO_SLOT);
          // A slot let go is the next one handed out: slots stay as few as the ids held at most.
          expect(slots.end).toBeLessThanOrEqual(operations.length);
        },
      ),
    );
  });

  it('holds a hundred thousand ids, drops every other, and finds each of the rest', () => {
    const slots = new SnowflakeSlots();
    const ids = Array.from({ length: 100_000 }, (_, n) => String(80351110224678912n + BigInt(n) * 4194304n));
    for (const id of ids) slots.add(id);
    ids.forEach((id, n) => {
      if (n % 2 === 0) slots.remove(id);
    });
    ids.forEach((id, n) => {
      expect(slots.slotOf(id) === NO_SLOT).toBe(n % 2 === 0);
    });
    const end = slots.end;
    ids.forEach((id, n) => {
      if (n % 2 === 0) slots.add(id);
    });
    expect(slots.end).toBe(end);
    expect(slots.size).toBe(ids.length);
  });

  it('numbers nothing that is not 1–20 digits', () => {
    const slots = new SnowflakeSlots();
    for (const id of ['', 'abc', '12a', '1'.repeat(21), '-1', ' 1']) {
      expect(slots.add(id)).toBe(NO_SLOT);
      expect(slots.slotOf(id)).toBe(NO_SLOT);
    }
    expect(slots.size).toBe(0);
  });

  it('keeps each slot’s room beside its key, as written, while the slots grow', () => {
    const slots = new SnowflakeSlots(4);
    const ids = Array.from({ length: 5_000 }, (_, n) => String(80351110224678912n + BigInt(n) * 4194304n));
    for (const id of ids) {
      const slot = slots.add(id);
      const at = slots.roomAt(slot);
      slots.room.set([slot, -1 - slot, 7, slot * 3], at);
    }
    ids.forEach((id, n) => {
      const slot = slots.slotOf(id);
      expect(slot).toBe(n);
      expect(slots.idOf(slot)).toBe(id);
      const at = slots.roomAt(slot);
      expect([...slots.room.subarray(at, at + 4)]).toEqual([n, -1 - n, 7, n * 3]);
    });
  });

  it('hands a slot let go out again with its room cleared', () => {
    const slots = new SnowflakeSlots(4);
    const first = slots.add('80351110224678912');
    slots.room.set([1, 2, 3, 4], slots.roomAt(first));
    slots.add('80351110224678913');
    expect(slots.remove('80351110224678912')).toBe(first);
    const again = slots.add('175928847299117063');
    expect(again).toBe(first);
    expect([...slots.room.subarray(slots.roomAt(again), slots.roomAt(again) + 4)]).toEqual([0, 0, 0, 0]);
    expect(slots.idOf(slots.slotOf('80351110224678913'))).toBe('80351110224678913');
  });

  it('takes room only in whole doubles', () => {
    for (const roomInts of [-2, -1, 1, 3, 0.5])
      expect(() => new SnowflakeSlots(roomInts)).toThrow(RangeError);
    expect(() => new SnowflakeSlots(6)).not.toThrow();
  });
});
