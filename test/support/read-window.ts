import { RATE_LIMIT_WINDOW_MS } from '../../src/http/rate-limits.js';

/**
 * Read budgets are counted per minute of the clock (read-budget.ts): a test that counts reads first waits
 * out a minute ending within `ms`, so its reads all fall in one window.
 */
export async function inOneReadWindow(ms = 5_000): Promise<void> {
  const left = RATE_LIMIT_WINDOW_MS - (Date.now() % RATE_LIMIT_WINDOW_MS);
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 10));
}
