/** Op 2 and op 4 frames a socket may send in a row before the per-minute pace applies. */
export const SOCKET_COMMAND_BURST = 10;

/**
 * A socket's budget of subscribe and unsubscribe commands: `burst` at once, refilled at `perMinute`
 * (0: no limit). Each command costs a look-up per id and an INIT_STATE, which a flood must not get for free.
 */
export class CommandBudget {
  private tokens: number;
  private at: number;

  constructor(
    private readonly perMinute: number,
    private readonly burst: number = SOCKET_COMMAND_BURST,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.at = now();
  }

  /** Takes one command's worth; false when the budget is spent. */
  take(): boolean {
    if (this.perMinute === 0) return true;
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) * this.perMinute) / 60_000);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
