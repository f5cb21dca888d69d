import { describe, expect, it } from 'vitest';
import { DEFAULT_RECONNECT_DELAY, reconnectDelay } from '../../src/client/backoff.js';

describe('reconnectDelay', () => {
  it('doubles from the minimum up to the cap', () => {
    const top = () => 1;
    expect(
      [0, 1, 2, 3, 4, 5, 6].map((attempt) => reconnectDelay(attempt, DEFAULT_RECONNECT_DELAY, top)),
    ).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(reconnectDelay(10_000, DEFAULT_RECONNECT_DELAY, top)).toBe(30_000);
  });

  it('jitters each delay down by up to half, never above the cap', () => {
    expect(reconnectDelay(3, DEFAULT_RECONNECT_DELAY, () => 0)).toBe(4_000);
    const delays = Array.from({ length: 200 }, () => reconnectDelay(8, DEFAULT_RECONNECT_DELAY));
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(15_000);
      expect(delay).toBeLessThanOrEqual(30_000);
    }
    expect(new Set(delays).size).toBeGreaterThan(1);
  });
});
