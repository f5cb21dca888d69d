import type { Snowflake } from '../../presence/model.js';

/** A user may send `burst` commands in a row, then `perMinute` a minute; 0 a minute: no cooldown. */
export interface CooldownSettings {
  burst: number;
  perMinute: number;
}

/**
 * What to do with a command: run it; refuse it with one "slow down" (the first refused since the user
 * was last allowed one); or refuse it silently, so a spammer cannot make the bot spam Discord in turn.
 */
export type Verdict = { kind: 'run' } | { kind: 'warn'; retryAfterMs: number } | { kind: 'ignore' };

interface Bucket {
  tokens: number;
  at: number;
  warned: boolean;
}

/** Buckets that have filled up again are forgotten this often, so the map holds only recent users. */
const SWEEP_EVERY_MS = 60_000;

/** Per-user token buckets: `burst` commands, refilled at `perMinute`. Pure but for the injected clock. */
export class CommandCooldown {
  private readonly buckets = new Map<Snowflake, Bucket>();
  private readonly perMs: number;
  private lastSweep: number;

  constructor(
    private readonly settings: CooldownSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = settings.perMinute / 60_000;
    this.lastSweep = now();
  }

  take(userId: Snowflake): Verdict {
    if (this.settings.perMinute === 0) return { kind: 'run' };
    const now = this.now();
    this.sweep(now);
    const bucket = this.buckets.get(userId) ?? { tokens: this.settings.burst, at: now, warned: false };
    bucket.tokens = Math.min(this.settings.burst, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    this.buckets.set(userId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      bucket.warned = false;
      return { kind: 'run' };
    }
    if (bucket.warned) return { kind: 'ignore' };
    bucket.warned = true;
    return { kind: 'warn', retryAfterMs: Math.ceil((1 - bucket.tokens) / this.perMs) };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [userId, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.perMs >= this.settings.burst) this.buckets.delete(userId);
    }
  }
}
