/**
 * How long a client already refused for abuse (its keyless writes, or its sockets, past their budget)
 * waits for each further refusal. Answered at once, a flood is refused as fast as it can reconnect, and
 * every refusal costs a connection's setup and teardown (and the kernel's copy of the body it pushes);
 * made to wait, it gets one answer per connection it may hold (CONNECTIONS_PER_IP) every few seconds.
 */
export const ABUSE_REFUSAL_DELAY_MS = 4_000;

/**
 * Runs `refuse` after `delayMs` and up to as long again: a flood's refusals, asked for all at once, are
 * answered spread over that time rather than all in one turn of the event loop.
 */
export function refuseLater(delayMs: number, refuse: () => void): void {
  if (delayMs === 0) refuse();
  else setTimeout(refuse, delayMs * (1 + Math.random())).unref();
}
