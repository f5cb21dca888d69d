import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SubscriptionCap } from '../../src/limits/subscription-cap.js';
import { IdSubscribers, SUBSCRIPTION_BYTES } from '../../src/socket/id-subscribers.js';
import { Subscriptions, TIDY_SLICE_PAIRS } from '../../src/socket/subscriptions.js';

/** Ids of every shape a snowflake can take: short, leading zeros, 20 digits up to 2^64 - 1. */
const snowflake = fc.oneof(
  fc.stringMatching(/^[0-9]{1,20}$/).filter((id) => id.length < 20 || BigInt(id) < 2n ** 64n),
  fc.constantFrom('0', '00', '1', '1000000000', '0000000001', '18446744073709551615', '80351110224678912'),
);

type Step =
  | { kind: 'add' | 'remove'; holder: number; id: number }
  | { kind: 'removeHolder'; holder: number }
  | { kind: 'removeSome'; holder: number; most: number }
  | { kind: 'moveSome'; most: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('add' as const), holder: fc.nat(12), id: fc.nat() }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('remove' as const), holder: fc.nat(12), id: fc.nat() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeHolder' as const), holder: fc.nat(12) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('removeSome' as const), holder: fc.nat(12), most: fc.nat(4) }),
  },
  // A few pairs copied at a time: adds and removes come between the slices of a move.
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('moveSome' as const), most: fc.integer({ min: 1, max: 8 }) }),
  },
);

/** A work queue whose items the test runs, one at a time. */
class HandQueue {
  private readonly items: Array<() => void> = [];

  push(work: () => void): void {
    this.items.push(work);
  }

  /** Runs the oldest item; false when there was none. */
  runOne(): boolean {
    const work = this.items.shift();
    work?.();
    return work !== undefined;
  }
}

/** Unique unmonitored ids, as a flood names them. */
const ids = (from: number, count: number) =>
  Array.from({ length: count }, (_, n) => String(400000000000000000n + BigInt(from + n)));

describe('holders of snowflakes in typed arrays', () => {
  it('answers as a Map of Sets would, for any sequence of adds, removes, holders let go and slices of moves', () => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 600, size: 'max' }),
        fc.array(snowflake, { minLength: 1, maxLength: 40, size: 'max' }),
        (steps, pool) => {
          let index = new IdSubscribers();
          const model = new Map<number, Set<string>>();
          const held = (holder: number) => model.get(holder) ?? new Set<string>();
          for (const next of steps) {
            if (next.kind === 'moveSome') index = index.moveSome(next.most) ?? index;
            else if (next.kind === 'removeSome') {
              const had = held(next.holder);
              expect(index.removeSome(next.holder, next.most)).toBe(Math.min(next.most, had.size));
              const kept = [...had].filter((id) => index.has(next.holder, id));
              expect(kept.length).toBe(had.size - Math.min(next.most, had.size));
              model.set(next.holder, new Set(kept));
            } else if (next.kind === 'removeHolder') {
              expect(index.removeHolder(next.holder)).toBe(held(next.holder).size);
              model.delete(next.holder);
            } else {
              const id = pool[next.id % pool.length] as string;
              const had = held(next.holder).has(id);
              if (next.kind === 'add') {
                expect(index.add(next.holder, id)).toBe(!had);
                model.set(next.holder, held(next.holder).add(id));
              } else {
                expect(index.remove(next.holder, id)).toBe(had);
                held(next.holder).delete(id);
              }
            }
          }
          let pairs = 0;
          for (let holder = 0; holder <= 12; holder++) {
            expect(index.held(holder)).toBe(held(holder).size);
            pairs += held(holder).size;
          }
          expect(index.size).toBe(pairs);
          for (const id of pool) {
            const holders = [...model].filter(([, set]) => set.has(id)).map(([holder]) => holder);
            expect([...index.holdersOf(id)].sort((a, b) => a - b)).toEqual(holders.sort((a, b) => a - b));
            expect(index.isHeld(id)).toBe(holders.length > 0);
            for (let holder = 0; holder <= 12; holder++)
              expect(index.has(holder, id)).toBe(held(holder).has(id));
          }
        },
      ),
    );
  });

  it('a subscription to an id nobody else holds costs at most SUBSCRIPTION_BYTES, in arrays off the JS heap', () => {
    const work = new HandQueue();
    const budget = new SubscriptionCap(200_000);
    const subs = new Subscriptions<object>(budget, work);
    const empty = subs.bytes;
    const staying = {};
    subs.subscribe(staying, ids(0, 10), false);
    const sockets = Array.from({ length: 100 }, () => ({}));
    for (const [n, socket] of sockets.entries()) subs.subscribe(socket, ids(n * 1_000, 1_000), false);
    expect(subs.count).toBe(100_010);
    expect(subs.bytes / subs.count).toBeLessThanOrEqual(SUBSCRIPTION_BYTES);

    // Gone, the flood hears nothing more at once, but its ids are let go a slice per item of work.
    for (const socket of sockets) subs.release(socket);
    expect(subs.count).toBe(10);
    expect([...subs.subscribersOf(ids(0, 1)[0] as string)]).toEqual([staying]);
    expect(subs.isSubscribed(sockets[0] as object, ids(0, 1)[0] as string)).toBe(false);
    let items = 0;
    for (let before = budget.count; work.runOne(); before = budget.count) {
      items++;
      expect(before - budget.count).toBeLessThanOrEqual(TIDY_SLICE_PAIRS);
      expect([...subs.subscribersOf(ids(9, 1)[0] as string)]).toEqual([staying]);
    }
    expect(items).toBeGreaterThanOrEqual(100_000 / TIDY_SLICE_PAIRS);
    expect(budget.count).toBe(10);
    // Its arrays go too, compacted over items of their own.
    expect(subs.bytes).toBeLessThanOrEqual(empty * 2);
    for (const id of ids(0, 10)) expect(subs.isSubscribed(staying, id)).toBe(true);
    expect(subs.holds(staying)).toBe(10);
  });

  it('a flood of new ids after many holders of a few costs no more than SUBSCRIPTION_BYTES each as the arrays grow', () => {
    const work = new HandQueue();
    const subs = new Subscriptions<object>(new SubscriptionCap(1_000_000), work);
    // Sockets that follow the same few users: many pairs, few ids.
    for (let n = 0; n < 100; n++) subs.subscribe({}, ids((n * 7) % 50, 10), false);
    while (work.runOne());
    for (let n = 0; n < 300; n++) {
      subs.subscribe({}, ids(1_000 + n * 1_000, 1_000), false);
      work.runOne();
    }
    expect(subs.count).toBe(301_000);
    expect(subs.bytes / subs.count).toBeLessThanOrEqual(SUBSCRIPTION_BYTES);
  });

  it('takes each id subscribed from the budget, gives it back when let go, and says when more would not fit', () => {
    const budget = new SubscriptionCap(5);
    const work = new HandQueue();
    const subs = new Subscriptions<string>(budget, work);
    expect(subs.subscribe('x', ids(0, 3), true)).toBe(3);
    expect(budget.count).toBe(3);
    // Ids held already, and repeats, need no room.
    expect(subs.fits('x', [...ids(0, 3), ...ids(3, 2), ...ids(3, 2)])).toBe(true);
    expect(subs.fits('x', ids(0, 6))).toBe(false);
    expect(subs.fits('y', ids(0, 3))).toBe(false);
    expect(subs.subscribe('y', ids(0, 2), false)).toBe(2);
    expect(budget.count).toBe(5);
    expect(subs.fits('y', ids(0, 2))).toBe(true);
    expect(subs.fits('y', ids(9, 1))).toBe(false);
    subs.unsubscribe('x', ids(0, 1), false);
    expect(budget.count).toBe(4);
    expect(subs.fits('y', ids(9, 1))).toBe(true);
    subs.release('x');
    subs.unsubscribe('y', [], true);
    expect(budget.count).toBe(2);
    while (work.runOne());
    expect(budget.count).toBe(0);
    expect(new SubscriptionCap(0).fits(Number.MAX_SAFE_INTEGER)).toBe(true);
  });
});
