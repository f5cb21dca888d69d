import { afterEach, describe, expect, it, vi } from 'vitest';
import { StreamOpenBudget } from '../../src/limits/stream-open-budget.js';

/** The budget of streams each client opens, on a clock the test moves. */

afterEach(() => {
  vi.useRealTimers();
});

describe('a budget of stream openings', () => {
  it('takes two per stream a client may hold in a row, then says when the next is back', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const budget = new StreamOpenBudget(3);
    for (let i = 0; i < 6; i++) expect(budget.take('192.0.2.1')).toBe(0);
    expect(budget.take('192.0.2.1')).toBe(20);
    vi.setSystemTime(Date.now() + 5_000);
    expect(budget.take('192.0.2.1')).toBe(15);
    // Another client has a budget of its own.
    expect(budget.take('192.0.2.2')).toBe(0);
    vi.setSystemTime(Date.now() + 15_000);
    expect(budget.take('192.0.2.1')).toBe(0);
    expect(budget.take('192.0.2.1')).toBe(20);
  });

  it('counts nobody with SOCKETS_PER_IP off', () => {
    const budget = new StreamOpenBudget(0);
    for (let i = 0; i < 100; i++) expect(budget.take('192.0.2.1')).toBe(0);
    expect(budget.clients).toBe(0);
  });

  it('forgets a client once its budget is whole again', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const budget = new StreamOpenBudget(3);
    budget.take('192.0.2.1');
    budget.take('192.0.2.2');
    vi.setSystemTime(Date.now() + 10_000);
    budget.take('192.0.2.2');
    // An opening is back every 20 s: the first is whole again at 20 s, the second (one and a half spent
    // at 10 s) at 40 s.
    vi.setSystemTime(Date.now() + 10_000);
    budget.sweep();
    expect(budget.clients).toBe(1);
    vi.setSystemTime(Date.now() + 19_000);
    budget.sweep();
    expect(budget.clients).toBe(1);
    vi.setSystemTime(Date.now() + 1_000);
    budget.sweep();
    expect(budget.clients).toBe(0);
  });

  it('past the clients it may count, lets a new one through uncounted rather than grow', () => {
    const budget = new StreamOpenBudget(1, 2);
    expect(budget.take('192.0.2.1')).toBe(0);
    expect(budget.take('192.0.2.2')).toBe(0);
    for (let i = 0; i < 10; i++) expect(budget.take('192.0.2.3')).toBe(0);
    expect(budget.clients).toBe(2);
    budget.take('192.0.2.1');
    expect(budget.take('192.0.2.1')).toBeGreaterThan(0);
  });
});
