/** Op 2 and op 4 frames a socket may send in a row before the per-minute pace applies. */
export const SOCKET_COMMAND_BURST = 10;
/** What one command costs: each millisecond refills `perMinute` units, so a minute refills `perMinute` commands. */
const COMMAND_COST = 60_000;

/**
 * A socket's budget of subscribe and unsubscribe commands: `burst` at once, refilled at `perMinute`
 * (0: no limit). Each command costs a look-up per id and an INIT_STATE, which a flood must not get for free.
 * Counted in whole units, so a client keeping exactly to the pace is never short by a rounding error.
 */
export class CommandBudget {
  private credit: number;
  private at: number;

  constructor(
    private readonly perMinute: number,
    private readonly burst: number = SOCKET_COMMAND_BURST,
    private readonly now: () => number = Date.now,
    /** Commands spent already (what the same client's sockets spent before this one). */
    spent = 0,
  ) {
    this.credit = Math.max(0, burst - spent) * COMMAND_COST;
    this.at = now();
  }

  /** Commands spent and not refilled yet, as of now (fractions of one included). */
  spent(): number {
    if (this.perMinute === 0) return 0;
    const elapsed = Math.max(0, this.now() - this.at);
    return Math.max(0, this.burst - (this.credit + elapsed * this.perMinute) / COMMAND_COST);
  }

  /** Takes one command's worth; false when the budget is spent. */
  take(): boolean {
    if (this.perMinute === 0) return true;
    const now = this.now();
    // A wall clock set back refills nothing, and takes nothing away either.
    const elapsed = Math.max(0, now - this.at);
    this.credit = Math.min(this.burst * COMMAND_COST, this.credit + elapsed * this.perMinute);
    this.at = now;
    if (this.credit < COMMAND_COST) return false;
    this.credit -= COMMAND_COST;
    return true;
  }
}

/** How long a spent budget takes to fill up again. */
export function refillMs(perMinute: number, burst: number = SOCKET_COMMAND_BURST): number {
  return (burst * 60_000) / perMinute;
}
