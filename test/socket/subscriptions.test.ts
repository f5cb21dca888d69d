import { describe, expect, it } from 'vitest';
import { Subscriptions } from '../../src/socket/subscriptions.js';

const A = '100000000000000001';
const B = '100000000000000002';
const C = '100000000000000003';

type Sub = { name: string };
const sub = (name: string): Sub => ({ name });
/** The user's subscribers' names; `hasSubscribers` must say there are some exactly when there are. */
const of = (subs: Subscriptions<Sub>, id: string): string[] => {
  const names = [...subs.subscribersOf(id)].map((s) => s.name).sort();
  expect(subs.hasSubscribers(id)).toBe(names.length > 0);
  return names;
};

describe('Subscriptions', () => {
  it('starts empty', () => {
    const subs = new Subscriptions<Sub>();
    expect(subs.count).toBe(0);
    expect(subs.subscriberCount).toBe(0);
    expect(of(subs, A)).toEqual([]);
  });

  it('add: each id once, returning how many the subscriber holds', () => {
    const subs = new Subscriptions<Sub>();
    const x = sub('x');
    expect(subs.subscribe(x, [A], false)).toBe(1);
    expect(subs.subscribe(x, [A, B], false)).toBe(2);
    expect(subs.subscribe(x, [B, B, A], false)).toBe(2);
    expect(subs.subscribe(x, [], false)).toBe(2);
    expect(subs.holds(x)).toBe(2);
    expect(subs.count).toBe(2);
    expect(subs.subscriberCount).toBe(1);
    expect(of(subs, A)).toEqual(['x']);
    expect(of(subs, B)).toEqual(['x']);
    expect(of(subs, C)).toEqual([]);
  });

  it('subscribe to all: every user, each subscriber yielded once even when also subscribed by id', () => {
    const subs = new Subscriptions<Sub>();
    const x = sub('x');
    const y = sub('y');
    const z = sub('z');
    subs.subscribe(x, [], true);
    subs.subscribe(y, [A], true);
    subs.subscribe(y, [], true); // repeat
    subs.subscribe(z, [A], false);
    expect(subs.holds(x)).toBe(0); // all counts no ids
    expect(subs.count).toBe(2 + 2); // two "all" flags, two id subscriptions
    const forA = [...subs.subscribersOf(A)];
    expect(forA).toHaveLength(3);
    expect(new Set(forA).size).toBe(3);
    expect(of(subs, A)).toEqual(['x', 'y', 'z']);
    expect(of(subs, C)).toEqual(['x', 'y']);
  });

  it('unsubscribe ids: only those, unknown ids ignored', () => {
    const subs = new Subscriptions<Sub>();
    const x = sub('x');
    const y = sub('y');
    subs.subscribe(x, [A, B, C], false);
    subs.subscribe(y, [A], false);
    subs.unsubscribe(x, [A, '999'], false);
    expect(of(subs, A)).toEqual(['y']);
    expect(of(subs, B)).toEqual(['x']);
    expect(subs.holds(x)).toBe(2);
    subs.unsubscribe(x, [A], false); // again: nothing
    expect(subs.count).toBe(3);
    subs.unsubscribe(sub('stranger'), [A], true); // never subscribed
    expect(subs.count).toBe(3);
  });

  it('unsubscribe all: the "all" flag and every id the subscriber held', () => {
    const subs = new Subscriptions<Sub>();
    const x = sub('x');
    const y = sub('y');
    subs.subscribe(x, [A, B], true);
    subs.subscribe(y, [B], false);
    subs.unsubscribe(x, [], true);
    expect(subs.holds(x)).toBe(0);
    expect(of(subs, A)).toEqual([]);
    expect(of(subs, B)).toEqual(['y']);
    expect(of(subs, C)).toEqual([]);
    expect(subs.count).toBe(1);
    // it can subscribe again afterwards
    expect(subs.subscribe(x, [C], false)).toBe(1);
    expect(of(subs, C)).toEqual(['x']);
  });

  it('release removes exactly what the subscriber added', () => {
    const subs = new Subscriptions<Sub>();
    const x = sub('x');
    const y = sub('y');
    subs.subscribe(x, [A, B], true);
    subs.subscribe(y, [B, C], false);
    subs.release(x);
    expect(subs.subscriberCount).toBe(1);
    expect(subs.holds(x)).toBe(0);
    expect(of(subs, A)).toEqual([]);
    expect(of(subs, B)).toEqual(['y']);
    expect(of(subs, C)).toEqual(['y']);
    subs.release(x); // twice: harmless
    subs.release(y);
    expect(subs.count).toBe(0);
    expect(subs.subscriberCount).toBe(0);
  });

  it('back to zero after many subscribers come and go, however they left', () => {
    const subs = new Subscriptions<Sub>();
    const ids = Array.from({ length: 50 }, (_, i) => `${200_000_000_000_000_000n + BigInt(i)}`);
    const all = Array.from({ length: 200 }, (_, i) => sub(`s${i}`));
    all.forEach((s, i) => {
      subs.subscribe(s, ids.slice(i % 50, (i % 50) + 10), i % 3 === 0);
      subs.subscribe(s, ids.slice(0, 5), false);
    });
    expect(subs.subscriberCount).toBe(200);
    expect(subs.count).toBeGreaterThan(0);
    all.forEach((s, i) => {
      if (i % 4 === 0) subs.unsubscribe(s, [], true);
      if (i % 5 === 0) subs.unsubscribe(s, ids, false);
      subs.release(s);
    });
    expect(subs.count).toBe(0);
    expect(subs.subscriberCount).toBe(0);
    for (const id of ids) expect(of(subs, id)).toEqual([]);
  });

  it('a subscriber that unsubscribed everything still counts as a subscriber until released', () => {
    const subs = new Subscriptions<Sub>();
    const x = sub('x');
    subs.subscribe(x, [A], true);
    subs.unsubscribe(x, [], true);
    expect(subs.count).toBe(0);
    expect(subs.subscriberCount).toBe(1);
    subs.release(x);
    expect(subs.subscriberCount).toBe(0);
  });
});
