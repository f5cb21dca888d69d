import type { ChainableCommander, Redis } from 'ioredis';

/** A key's count in its window, the charge just made included, and the milliseconds until it ends. */
export interface WindowCount {
  readonly count: number;
  readonly msLeft: number;
}

/**
 * What a counter that cannot be reached (Redis away) answers: nothing counted, no window. The request is let
 * through: a limit protects the service, it must not take it down.
 */
export const UNCOUNTED: WindowCount = Object.freeze({ count: 0, msLeft: 0 });

/**
 * Counts per key, each in a window of its own that starts with the key's first charge and ends `windowMs`
 * later, when the next charge starts a new one from nothing.
 */
export interface WindowCounter {
  charge(key: string, amount?: number): Promise<WindowCount>;
}

/**
 * Keys one process counts at most: past it the key charged least recently is forgotten (its next charge
 * starts a new window), so a flood of clients cannot grow the process without bound.
 */
export const MAX_COUNTED_KEYS = 5_000;

/** A window counter in this process's memory. */
export class MemoryWindowCounter implements WindowCounter {
  /** Each key's window: its count and when it started, in the order the keys were last charged. */
  private readonly windows = new Map<string, { count: number; startedAt: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxKeys = MAX_COUNTED_KEYS,
  ) {}

  async charge(key: string, amount = 1): Promise<WindowCount> {
    const now = Date.now();
    let window = this.windows.get(key);
    if (window === undefined) {
      window = { count: 0, startedAt: now };
      // The key most recently charged goes last: the first is the one to forget.
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value as string);
    } else {
      this.windows.delete(key);
      if (window.startedAt + this.windowMs <= now) window = { count: 0, startedAt: now };
    }
    window.count += amount;
    this.windows.set(key, window);
    return { count: window.count, msLeft: window.startedAt + this.windowMs - now };
  }
}

/**
 * KEYS: a key's count. ARGV: what to add, how long a new count is kept (ms). The new count, and the
 * milliseconds it is kept for from now. A count found without an expiry (one written by hand, say) is
 * given one, so no client is refused for ever.
 */
const CHARGE = `
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if count == tonumber(ARGV[1]) or left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {count, tonumber(ARGV[2])}
end
return {count, left}
`;

interface ChargeScript {
  windowCounterCharge(key: string, amount: number, windowMs: number): Promise<[number, number]>;
}

/**
 * A window counter in Redis, shared by every node that uses the same keys: each charge is one atomic
 * script (the count, and its expiry when it is new). Counts are `${prefix}${key}`, kept `windowMs` from
 * the first charge; a command that fails answers UNCOUNTED.
 */
export class RedisWindowCounter implements WindowCounter {
  private readonly redis: Redis & ChargeScript;

  constructor(
    /** A connection that fails at once while Redis is away (ClusterLink.limiter). */
    redis: Redis,
    private readonly prefix: string,
    private readonly windowMs: number,
  ) {
    if (!('windowCounterCharge' in redis)) {
      redis.defineCommand('windowCounterCharge', { numberOfKeys: 1, lua: CHARGE });
    }
    this.redis = redis as Redis & ChargeScript;
  }

  async charge(key: string, amount = 1): Promise<WindowCount> {
    try {
      const [count, msLeft] = await this.redis.windowCounterCharge(this.prefix + key, amount, this.windowMs);
      return { count, msLeft };
    } catch {
      return UNCOUNTED;
    }
  }

  /** Charges each of `charges` in one round trip; UNCOUNTED for each Redis did not count. */
  async chargeAll(charges: readonly (readonly [key: string, amount: number])[]): Promise<WindowCount[]> {
    const pipeline = this.redis.pipeline() as ChainableCommander & {
      windowCounterCharge(key: string, amount: number, windowMs: number): ChainableCommander;
    };
    for (const [key, amount] of charges) {
      pipeline.windowCounterCharge(this.prefix + key, amount, this.windowMs);
    }
    let results: [error: Error | null, result: unknown][] | null = null;
    try {
      results = await pipeline.exec();
    } catch {
      // Redis away: nothing counted.
    }
    return charges.map((_, i) => {
      const [error, result] = results?.[i] ?? [null, null];
      if (error !== null || !Array.isArray(result)) return UNCOUNTED;
      return { count: result[0] as number, msLeft: result[1] as number };
    });
  }
}
