import { describe, expect, it } from 'vitest';
import { NO_SLOT } from '../../../src/collections/snowflake-slots.js';
import { StaleBacklog } from '../../../src/presence/registry/stale-backlog.js';

describe('StaleBacklog', () => {
  it('gives the waiting slots in slot order, a slot added below the last one given included', () => {
    const backlog = new StaleBacklog();
    backlog.add(5, 10);
    backlog.add(8, 10);
    expect(backlog.next()).toBe(5);
    backlog.add(1, 10);
    expect(backlog.remove(5)).toBe(true);
    expect([backlog.next(), backlog.next()]).toEqual([1, 8]);
    expect(backlog.size).toBe(2);
  });

  it('holds a slot until it is removed, once', () => {
    const backlog = new StaleBacklog();
    expect(backlog.has(3)).toBe(false);
    backlog.add(3, 4);
    expect(backlog.has(3)).toBe(true);
    expect(backlog.remove(3)).toBe(true);
    expect(backlog.remove(3)).toBe(false);
    expect(backlog.has(3)).toBe(false);
    expect(backlog.next()).toBe(NO_SLOT);
  });
});
