import { describe, expect, it } from 'vitest';
import { SOCKET_COMMAND_BURST } from '../../src/limits/socket-budgets.js';
import { TokenBucket } from '../../src/limits/token-bucket.js';

/** A clock the test moves by hand. */
function clock(start = 1_700_000_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** How many commands the budget lets through right now, taking them. */
function drain(budget: TokenBucket): number {
  let taken = 0;
  while (budget.take()) {
    taken++;
    if (taken > 10_000) throw new Error('the budget never ran out');
  }
  return taken;
}

describe('TokenBucket', () => {
  it('lets a burst through at once, then refuses', () => {
    const time = clock();
    const budget = new TokenBucket(60, SOCKET_COMMAND_BURST, time.now);
    expect(drain(budget)).toBe(SOCKET_COMMAND_BURST);
    expect(budget.take()).toBe(false);
  });

  it('refills at the per-minute pace: 60 a minute is one a second', () => {
    const time = clock();
    const budget = new TokenBucket(60, SOCKET_COMMAND_BURST, time.now);
    drain(budget);
    time.advance(999);
    expect(budget.take()).toBe(false);
    time.advance(1);
    expect(budget.take()).toBe(true);
    expect(budget.take()).toBe(false);
    time.advance(5_000);
    expect(drain(budget)).toBe(5);
  });

  it('small refills add up exactly: ten tenths of a second make a command, refused tries in between', () => {
    const time = clock();
    const budget = new TokenBucket(60, SOCKET_COMMAND_BURST, time.now);
    drain(budget);
    for (let i = 0; i < 9; i++) {
      time.advance(100);
      expect(budget.take()).toBe(false);
    }
    time.advance(100);
    expect(budget.take()).toBe(true);
  });

  it('a wall clock set back takes nothing away', () => {
    const time = clock();
    const budget = new TokenBucket(60, SOCKET_COMMAND_BURST, time.now);
    drain(budget);
    time.advance(-3_600_000);
    expect(budget.take()).toBe(false);
    time.advance(1_000);
    expect(budget.take()).toBe(true);
  });

  it('never holds more than the burst, however long the socket was quiet', () => {
    const time = clock();
    const budget = new TokenBucket(60, SOCKET_COMMAND_BURST, time.now);
    time.advance(60 * 60_000);
    expect(drain(budget)).toBe(SOCKET_COMMAND_BURST);
  });

  it('other paces and bursts: 6 a minute after a burst of 2', () => {
    const time = clock();
    const budget = new TokenBucket(6, 2, time.now);
    expect(drain(budget)).toBe(2);
    time.advance(9_999);
    expect(budget.take()).toBe(false);
    time.advance(1);
    expect(budget.take()).toBe(true);
  });

  it('0 per minute: no limit at all', () => {
    const time = clock();
    const budget = new TokenBucket(0, SOCKET_COMMAND_BURST, time.now);
    for (let i = 0; i < 1_000; i++) expect(budget.take()).toBe(true);
  });
});
