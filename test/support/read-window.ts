import { vi } from 'vitest';
import { RATE_LIMIT_WINDOW_MS } from '../../src/limits/request-budgets.js';

/**
 * Read budgets are counted per minute of the clock (limits/read-budget.ts): a test that counts reads moves
 * the clock (`Date` alone, running on from there) to the start of the next minute, so its reads all fall in
 * one window however long they take, with nothing waited for. The clock only ever moves forward, so budgets
 * already counted stay in windows that are over.
 */
export async function inOneReadWindow(): Promise<void> {
  const now = Date.now();
  vi.useFakeTimers({
    toFake: ['Date'],
    shouldAdvanceTime: true,
    now: now - (now % RATE_LIMIT_WINDOW_MS) + RATE_LIMIT_WINDOW_MS,
  });
}
