import { TokenBuckets } from './token-bucket.js';

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
export const MAX_OPENING_CLIENTS = 100_000;

/**
 * Each client's budget of event streams opened, first connections and reconnects alike: an opening costs a
 * replay or every presence afresh, which a client reconnecting in a tight loop must not get for free.
 * A client is forgotten once its budget is whole again.
 */
export class StreamOpenBudget {
  readonly burst: number;
  readonly perMinute: number;
  private readonly buckets: TokenBuckets;

  constructor(
    /** SOCKETS_PER_IP; 0: no budget. */
    slotsPerClient: number,
    maxClients = MAX_OPENING_CLIENTS,
  ) {
    this.burst = STREAM_OPENS_BURST_PER_SLOT * slotsPerClient;
    this.perMinute = STREAM_OPENS_PER_MINUTE_PER_SLOT * slotsPerClient;
    this.buckets = new TokenBuckets({ burst: this.burst, perMinute: this.perMinute }, maxClients);
  }

  /** Takes one opening of `client`'s: 0 when taken, else the whole seconds until one is there again. */
  take(client: string): number {
    return this.buckets.take(client) ? 0 : this.buckets.secondsUntilNext(client);
  }

  /** Forgets the clients whose budget is whole again. */
  sweep(): void {
    this.buckets.sweep();
  }

  /** Clients counted now. */
  get clients(): number {
    return this.buckets.clients;
  }
}
