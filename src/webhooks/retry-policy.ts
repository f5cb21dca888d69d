/** An event is retried for this long after its first attempt; then it is given up and the webhook disabled. */
export const RETRY_WINDOW_MS = 60 * 60 * 1000;
/** The first retry waits about this long; each one after waits twice as long, up to the most below. */
export const FIRST_RETRY_MS = 5_000;
export const MAX_RETRY_DELAY_MS = 10 * 60 * 1000;
/** Events refused outright (a 4xx, a redirect, a refused target) in a row that disable a webhook. */
export const MAX_FAILED_EVENTS = 5;

/** How long to wait after the `attempt`th failed attempt (1 after the first). */
export type Backoff = (attempt: number) => number;

/**
 * Exponential backoff with jitter: the nth wait is between half and all of FIRST_RETRY_MS × 2^(n−1),
 * capped, so receivers that failed together are not retried in step.
 */
export function exponentialBackoff(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_MS * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
