/** setTimeout's longest delay, 2^31 − 1: Node fires a longer one at once. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/**
 * `ms` as a delay setTimeout keeps: a wait past the longest ends at the longest, and the caller looks again
 * then. A longer one would fire at once, and a caller that waits again on what is left would spin.
 */
export const timerDelay = (ms: number): number => Math.min(Math.max(ms, 0), MAX_TIMER_DELAY_MS);
