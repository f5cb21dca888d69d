/** Reconnect delays when none are given: the first retry within a second, then doubling up to 30 s. */
export const DEFAULT_RECONNECT_DELAY = { minMs: 1_000, maxMs: 30_000 } as const;

/**
 * How long to wait before reconnect attempt `attempt` (0 first): doubling from `minMs`, capped at `maxMs`,
 * then jittered down by up to half, so clients dropped together (a restart) do not come back together.
 */
export function reconnectDelay(
  attempt: number,
  delay: { minMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(delay.maxMs, delay.minMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
