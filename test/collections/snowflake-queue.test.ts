import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SnowflakeQueue } from '../../src/collections/snowflake-queue.js';

/** Ids of every shape a snowflake can take: short, leading zeros, 17–20 digits up to 2^64 - 1. */
const snowflake = fc.oneof(
  fc.stringMatching(/^[0-9]{1,20}$/).filter((id) => id.length < 20 || BigInt(id) < 2n ** 64n),
  fc.constantFrom('0', '00', '007', '0000000001', '18446744073709551615', '80351110224678912'),
);

function drain(queue: SnowflakeQueue): string[] {
  const ids: string[] = [];
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) ids.push(id);
  return ids;
}

describe('a queue of snowflakes', () => {
  it('hands out each id once, oldest first, as a Set would, for any sequence of adds and shifts', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.nat(), { nil: undefined }), { maxLength: 400, size: 'max' }),
        fc.array(snowflake, { minLength: 1, maxLength: 40, size: 'max' }),
        (steps, pool) => {
          // Drawn from a small pool: ids come back while queued, and after they were shifted out.
          const queue = new SnowflakeQueue();
          const model = new Set<string>();
          for (const step of steps) {
            if (step === undefined) {
              const oldest = model.values().next().value;
              if (oldest !== undefined) model.delete(oldest);
              expect(queue.shift()).toBe(oldest);
            } else {
              const id = pool[step % pool.length] as string;
              expect(queue.add(id)).toBe(!model.has(id));
              model.add(id);
            }
            expect(queue.size).toBe(model.size);
          }
          for (const id of pool) expect(queue.has(id)).toBe(model.has(id));
          expect(drain(queue)).toEqual([...model]);
          expect(queue.shift()).toBeUndefined();
        },
      ),
    );
  });

  it('reuses the slot of an id shifted out for the next one added, and hands out neither twice', () => {
    const queue = new SnowflakeQueue();
    for (const id of ['1', '2', '3']) queue.add(id);
    expect(queue.shift()).toBe('1');
    expect(queue.shift()).toBe('2');
    // These take the slots '1' and '2' had.
    queue.add('4');
    queue.add('5');
    expect(queue.has('1')).toBe(false);
    expect(queue.add('1')).toBe(true);
    expect(drain(queue)).toEqual(['3', '4', '5', '1']);
    expect(queue.size).toBe(0);
  });

  it('keeps its order as it grows past its first room, with the ring wrapped', () => {
    const queue = new SnowflakeQueue();
    const ids = Array.from({ length: 5_000 }, (_, n) => String(80351110224678912n + BigInt(n) * 4194304n));
    // Wrap the ring first: shifting some leaves its head inside when it grows.
    for (const id of ids.slice(0, 600)) queue.add(id);
    for (const id of ids.slice(0, 500)) expect(queue.shift()).toBe(id);
    for (const id of ids.slice(600)) queue.add(id);
    // Those shifted out are queued again, last; the rest are queued already.
    ids.forEach((id, n) => {
      expect(queue.add(id)).toBe(n < 500);
    });
    expect(queue.size).toBe(ids.length);
    expect(drain(queue)).toEqual([...ids.slice(500), ...ids.slice(0, 500)]);
    // Drained, it takes ids again from the start.
    queue.add(ids[0] as string);
    expect(drain(queue)).toEqual([ids[0]]);
  });

  it('gives back ids exactly as they came, leading zeros and 20 digits', () => {
    const queue = new SnowflakeQueue();
    const ids = [
      '0',
      '00',
      '007',
      '1',
      '0000000001',
      '1000000000',
      '10000000000000000',
      '18446744073709551615',
    ];
    for (const id of ids) expect(queue.add(id)).toBe(true);
    expect(drain(queue)).toEqual(ids);
  });

  it('takes nothing that is not 1–20 digits', () => {
    const queue = new SnowflakeQueue();
    for (const id of ['', 'abc', '12a', '1'.repeat(21), '-1']) expect(queue.add(id)).toBe(false);
    expect(queue.size).toBe(0);
  });

  it('empties on clear, and takes the same ids again after', () => {
    const queue = new SnowflakeQueue();
    const ids = Array.from({ length: 2_000 }, (_, n) => String(1_000_000_000_000_000n + BigInt(n)));
    for (const id of ids) queue.add(id);
    queue.shift();
    queue.clear();
    expect(queue.size).toBe(0);
    expect(queue.has(ids[1] as string)).toBe(false);
    expect(queue.shift()).toBeUndefined();
    for (const id of ids.slice(0, 3)) expect(queue.add(id)).toBe(true);
    expect(drain(queue)).toEqual(ids.slice(0, 3));
  });
});
