import { CommandBudget } from '../socket/command-budget.js';

/**
 * Streams a client may open in a row, per stream it may hold (SOCKETS_PER_IP): enough for all of them to
 * open, then all reconnect at once (a proxy in front restarting, say).
 */
export const STREAM_OPENS_BURST_PER_SLOT = 2;
/** Streams a client may open a minute once its burst is spent, per stream it may hold. */
export const STREAM_OPENS_PER_MINUTE_PER_SLOT = 1;
/**
 * Clients counted at once at most: one more is let through uncounted rather than letting a flood of
 * addresses grow the process without bound (the cap of streams per client still holds it).
 */
export const MAX_RECONNECTING_CLIENTS = 100_000;

/**
 * Each client's budget of event streams opened, first connections and reconnects alike: an opening costs a
 * replay or every presence afresh, which a client reconnecting in a tight loop must not get for free.
 * A client is forgotten once its budget is whole again.
 */
export class ReconnectBudget {
  readonly burst: number;
  readonly perMinute: number;
  private readonly budgets = new Map<string, CommandBudget>();

  constructor(
    /** SOCKETS_PER_IP; 0: no budget. */
    slotsPerClient: number,
    private readonly maxClients = MAX_RECONNECTING_CLIENTS,
  ) {
    this.burst = STREAM_OPENS_BURST_PER_SLOT * slotsPerClient;
    this.perMinute = STREAM_OPENS_PER_MINUTE_PER_SLOT * slotsPerClient;
  }

  /** Takes one opening of `client`'s: 0 when taken, else the whole seconds until one is there again. */
  take(client: string): number {
    if (this.perMinute === 0) return 0;
    let budget = this.budgets.get(client);
    if (!budget) {
      if (this.budgets.size >= this.maxClients) return 0;
      budget = new CommandBudget(this.perMinute, this.burst);
      this.budgets.set(client, budget);
    }
    if (budget.take()) return 0;
    // An opening is there again once no more than burst - 1 are spent.
    const minutes = (budget.spent() - (this.burst - 1)) / this.perMinute;
    return Math.max(1, Math.ceil(minutes * 60));
  }

  /** Forgets the clients whose budget is whole again. */
  sweep(): void {
    for (const [client, budget] of this.budgets) if (budget.spent() === 0) this.budgets.delete(client);
  }

  /** Clients counted now. */
  get clients(): number {
    return this.budgets.size;
  }
}
