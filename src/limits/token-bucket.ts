/** What one token costs: each millisecond refills `perMinute` units, so a minute `perMinute` tokens. */
const TOKEN_COST = 60_000;

/** A budget's size and the pace it is refilled at. */
export interface Pace {
  burst: number;
  /** 0: no budget. */
  perMinute: number;
}

/**
 * A budget refilled as time passes: `burst` at once, then `perMinute` (0: no limit), each token back as soon
 * as its share of the minute has passed, rather than all of them when a window ends. Counted in whole units,
 * so a client keeping exactly to the pace is never short by a rounding error.
 */
export class TokenBucket {
  private credit: number;
  private at: number;

  constructor(
    private readonly perMinute: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.credit = burst * TOKEN_COST;
    this.at = now();
  }

  /** Tokens spent and not refilled yet, as of now (fractions of one included). */
  spent(): number {
    if (this.perMinute === 0) return 0;
    const elapsed = Math.max(0, this.now() - this.at);
    return Math.max(0, this.burst - (this.credit + elapsed * this.perMinute) / TOKEN_COST);
  }

  /** Takes one token; false when the bucket is empty. */
  take(): boolean {
    if (this.perMinute === 0) return true;
    const now = this.now();
    // A wall clock set back refills nothing, and takes nothing away either.
    const elapsed = Math.max(0, now - this.at);
    this.credit = Math.min(this.burst * TOKEN_COST, this.credit + elapsed * this.perMinute);
    this.at = now;
    if (this.credit < TOKEN_COST) return false;
    this.credit -= TOKEN_COST;
    return true;
  }

  /** Whole seconds until a token is there again (at least 1): what a refused client is told to wait. */
  secondsUntilNext(): number {
    // A token is there again once no more than burst - 1 are spent.
    const minutes = (this.spent() - (this.burst - 1)) / this.perMinute;
    return Math.max(1, Math.ceil(minutes * 60));
  }
}

/**
 * A bucket per client (a clientKey), made full on its first take and forgotten once full again (`sweep`).
 * A client first seen while `maxClients` are counted is let through uncounted rather than letting a flood
 * of addresses grow the process without bound.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly pace: Pace,
    private readonly maxClients = Number.POSITIVE_INFINITY,
  ) {}

  /** Takes one of `client`'s tokens; false when its bucket is empty. */
  take(client: string): boolean {
    if (this.pace.perMinute === 0) return true;
    const bucket = this.bucketOf(client);
    return bucket === undefined || bucket.take();
  }

  /** Whole seconds until `client` has a token again (at least 1), once `take` refused it one. */
  secondsUntilNext(client: string): number {
    return this.buckets.get(client)?.secondsUntilNext() ?? 1;
  }

  /** Forgets the clients whose bucket is full again. */
  sweep(): void {
    for (const [client, bucket] of this.buckets) if (bucket.spent() === 0) this.buckets.delete(client);
  }

  /** Clients counted now. */
  get clients(): number {
    return this.buckets.size;
  }

  private bucketOf(client: string): TokenBucket | undefined {
    let bucket = this.buckets.get(client);
    if (bucket === undefined && this.buckets.size < this.maxClients) {
      bucket = new TokenBucket(this.pace.perMinute, this.pace.burst);
      this.buckets.set(client, bucket);
    }
    return bucket;
  }
}

/** How long an empty bucket of `pace` takes to fill up again. */
export function refillMs(pace: Pace): number {
  return (pace.burst * 60_000) / pace.perMinute;
}
