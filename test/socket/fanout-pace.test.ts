import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PresenceSnapshot } from '../../src/presence/registry/snapshot.js';
import { FanOutPacer, PACED_FROM_BYTES } from '../../src/socket/fanout-pace.js';

/** A snapshot as the pacer sees it: only its length matters, the label tells which one went out. */
const snapshot = (bytes: number, label: string) => ({ body: label.padEnd(bytes, '.') }) as PresenceSnapshot;
const RATE = 256 * 1024;
const MIB = 1024 * 1024;

describe('FanOutPacer', () => {
  let sent: string[];
  let now: Map<string, PresenceSnapshot>;
  let pacer: FanOutPacer;

  const change = (userId: string, s: PresenceSnapshot) => {
    now.set(userId, s);
    pacer.changed(userId, s);
  };

  beforeEach(() => {
    vi.useFakeTimers();
    sent = [];
    now = new Map();
    pacer = new FanOutPacer(
      (userId, s) => sent.push(`${userId}:${(s.body as string).replace(/\.+$/, '')}`),
      (userId) => now.get(userId),
      RATE,
    );
  });
  afterEach(() => {
    pacer.close();
    vi.useRealTimers();
  });

  it('sends every change of a small presence at once, holding nothing', () => {
    for (let i = 0; i < 5; i++) change('a', snapshot(PACED_FROM_BYTES, `v${i}`));
    expect(sent).toEqual(['a:v0', 'a:v1', 'a:v2', 'a:v3', 'a:v4']);
    expect(pacer.held).toBe(0);
  });

  it("holds a large presence's next changes for its size at the rate, then sends the newest once", () => {
    change('a', snapshot(MIB, 'v1'));
    expect(sent).toEqual(['a:v1']);
    change('a', snapshot(MIB, 'v2'));
    change('a', snapshot(MIB, 'v3'));
    change('b', snapshot(100, 'small'));
    expect(sent).toEqual(['a:v1', 'b:small']);

    vi.advanceTimersByTime((MIB / RATE) * 1000 - 1);
    expect(sent).toEqual(['a:v1', 'b:small']);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['a:v1', 'b:small', 'a:v3']);

    // v3 is large too: a pause of its own follows it.
    change('a', snapshot(MIB / 2, 'v4'));
    expect(sent).toHaveLength(3);
    vi.advanceTimersByTime((MIB / RATE) * 1000);
    expect(sent.at(-1)).toBe('a:v4');
    // v4's pause is half as long; with nothing changed in it, nothing more is sent and nothing is held.
    vi.advanceTimersByTime((MIB / 2 / RATE) * 1000);
    expect(sent).toHaveLength(4);
    expect(pacer.held).toBe(0);
    change('a', snapshot(100, 'v5'));
    expect(sent.at(-1)).toBe('a:v5');
  });

  it('a presence that shrank meanwhile still waits for the pause of the large one before it', () => {
    change('a', snapshot(MIB, 'big'));
    change('a', snapshot(100, 'small'));
    expect(sent).toEqual(['a:big']);
    vi.advanceTimersByTime((MIB / RATE) * 1000);
    expect(sent).toEqual(['a:big', 'a:small']);
    expect(pacer.held).toBe(0);
  });

  it('sends nothing held for a user no longer monitored', () => {
    change('a', snapshot(MIB, 'v1'));
    change('a', snapshot(MIB, 'v2'));
    pacer.forget('a');
    change('b', snapshot(MIB, 'w1'));
    change('b', snapshot(MIB, 'w2'));
    now.delete('b');
    vi.advanceTimersByTime(10 * 1000);
    expect(sent).toEqual(['a:v1', 'b:w1']);
    expect(pacer.held).toBe(0);
  });

  it('holds nothing at a rate of 0', () => {
    pacer = new FanOutPacer(
      (userId, s) => sent.push(`${userId}:${s.body.length}`),
      () => undefined,
      0,
    );
    pacer.changed('a', snapshot(MIB, 'v1'));
    pacer.changed('a', snapshot(MIB, 'v2'));
    expect(sent).toEqual([`a:${MIB}`, `a:${MIB}`]);
    expect(pacer.held).toBe(0);
  });
});
