import type { IIdentifyThrottler } from '@discordjs/ws';
import type { APIGatewayBotInfo } from 'discord-api-types/v10';
import type { Logger } from 'pino';

/**
 * Below this share of the day's IDENTIFYs left (`session_start_limit.remaining` as a share of `total`), the
 * gateway waits for the budget to reset rather than identify: past the last one Discord ends every session
 * of the bot and resets its token, and only a person can put the new one in.
 */
export const IDENTIFY_RESERVE = 0.1;
/** Discord takes `max_concurrency` IDENTIFYs per 5 s, one per bucket (shard id % max_concurrency). */
export const IDENTIFY_INTERVAL_MS = 5_000;
/** A random extra wait before a paced IDENTIFY, up to this, as @discordjs/ws's default throttler adds. */
const IDENTIFY_JITTER_MS = 1_500;
/**
 * The limit is read again from Discord before an IDENTIFY when the last reading is older than this: other
 * processes of the bot (other ingest nodes, a restarted one) spend the same budget.
 */
export const LIMIT_STALE_MS = 60_000;
/** Waited beyond the reset Discord announced, so that the budget has reset when it is read again. */
export const RESET_MARGIN_MS = 1_000;

/** The budget as this process knows it. */
export interface IdentifyBudgetReading {
  /** IDENTIFYs a window allows (1,000 a day for most bots). */
  total: number;
  /** Left in the window: as last read from Discord, less the IDENTIFYs let through since. */
  remaining: number;
  /** Until the window resets, as last read; 0 once past. */
  resetInMs: number;
  /** IDENTIFYs Discord takes per 5 s. */
  maxConcurrency: number;
}

export interface IdentifyBudgetOptions {
  /** `GET /gateway/bot`, never from a cache: the gateway's REST client. */
  fetchGatewayBot(): Promise<APIGatewayBotInfo>;
  logger: Logger;
  /** Tests pace IDENTIFYs at 0, as discord.js's own tests do; default IDENTIFY_INTERVAL_MS. */
  intervalMs?: number;
}

interface Known {
  total: number;
  remaining: number;
  resetAt: number;
  maxConcurrency: number;
  readAt: number;
}

/**
 * The IDENTIFY throttler of the gateway (@discordjs/ws's `buildIdentifyThrottler`), minding Discord's daily
 * session start limit as well as its pace. Before each IDENTIFY it knows `session_start_limit` (read from
 * `GET /gateway/bot`, again when the reading is a minute old, past its reset, or when the IDENTIFYs counted
 * since bring it under the reserve), and under the reserve it waits for the reset, saying so once per wait,
 * instead of identifying. Otherwise it paces exactly as the library's default (SimpleIdentifyThrottler):
 * per bucket, an IDENTIFY within 5 s of the last waits out the rest of the 5 s plus up to 1.5 s. RESUMEs do
 * not come here, and spend nothing.
 */
export class IdentifyBudget implements IIdentifyThrottler {
  private known: Known | null = null;
  /** IDENTIFYs let through since the last reading. */
  private spent = 0;
  private reading: Promise<Known> | null = null;
  /** The end of the wait for a reset under way: later waiters join it without saying it again. */
  private waitingUntil = 0;
  private readonly buckets = new Map<number, { turns: Turns; resetsAt: number }>();

  constructor(private readonly options: IdentifyBudgetOptions) {}

  /** The budget as known: null before it was first read. */
  current(): IdentifyBudgetReading | null {
    const known = this.known;
    if (!known) return null;
    return {
      total: known.total,
      remaining: this.estimate(known),
      resetInMs: Math.max(0, known.resetAt - Date.now()),
      maxConcurrency: known.maxConcurrency,
    };
  }

  /** How long the wait for a reset has left; 0 when nothing waits. */
  get waitMs(): number {
    return Math.max(0, this.waitingUntil - Date.now());
  }

  /**
   * Before connecting: reads the limit (logged at info the first time) and, under the reserve, waits for
   * the reset. Rejects when the signal aborts, or when the limit cannot be read and was never read.
   */
  async ready(signal: AbortSignal): Promise<void> {
    await this.affordable(signal);
  }

  /** Reads the limit (logged at info the first time) without waiting for it: nothing is to spend it yet. */
  async observe(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.needsReading()) await this.read();
  }

  async waitForIdentify(shardId: number, signal: AbortSignal): Promise<void> {
    const known = this.known ?? (await this.read());
    const key = shardId % Math.max(1, known.maxConcurrency);
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { turns: new Turns(), resetsAt: Number.POSITIVE_INFINITY };
      this.buckets.set(key, bucket);
    }
    await bucket.turns.take(signal);
    try {
      await this.affordable(signal);
      const interval = this.options.intervalMs ?? IDENTIFY_INTERVAL_MS;
      const diff = bucket.resetsAt - Date.now();
      if (diff > 0 && diff <= interval) {
        await pause(diff + Math.random() * IDENTIFY_JITTER_MS, signal);
      }
      bucket.resetsAt = Date.now() + interval;
      this.spent++;
    } finally {
      bucket.turns.release();
    }
  }

  /** Returns once at least the reserve is left, reading the limit as needed. */
  private async affordable(signal: AbortSignal): Promise<void> {
    for (;;) {
      signal.throwIfAborted();
      const known = this.needsReading() ? await this.read() : (this.known as Known);
      const remaining = this.estimate(known);
      if (!underReserve(remaining, known.total)) return;
      const now = Date.now();
      if (this.waitingUntil <= now) {
        this.waitingUntil = Math.max(known.resetAt, now) + RESET_MARGIN_MS;
        const waitSeconds = Math.ceil((this.waitingUntil - now) / 1000);
        this.options.logger.warn(
          { remaining, total: known.total, waitSeconds },
          `Discord's IDENTIFY budget is nearly spent: ${remaining} of ${known.total} left; waiting ${waitSeconds}s for it to reset rather than risk the bot's token`,
        );
      }
      await pause(this.waitingUntil - now, signal, { unref: true });
    }
  }

  private needsReading(): boolean {
    const known = this.known;
    if (!known) return true;
    const now = Date.now();
    if (now >= known.resetAt || now - known.readAt >= LIMIT_STALE_MS) return true;
    // Near the reserve by this node's count alone: Discord's own figure decides before waiting.
    return this.spent > 0 && underReserve(this.estimate(known), known.total);
  }

  /** Left by the last reading and the IDENTIFYs since; the whole budget again once past its reset. */
  private estimate(known: Known): number {
    const base = Date.now() >= known.resetAt ? known.total : known.remaining;
    return Math.max(0, base - this.spent);
  }

  /** Reads the limit once however many wait for it; keeps the last reading if Discord cannot be asked. */
  private read(): Promise<Known> {
    this.reading ??= this.fetch().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async fetch(): Promise<Known> {
    const { logger } = this.options;
    let info: APIGatewayBotInfo;
    try {
      info = await this.options.fetchGatewayBot();
    } catch (error) {
      const known = this.known;
      if (!known) throw error;
      // Asked again in a minute; meanwhile this node's own count goes on from the last reading.
      known.readAt = Date.now();
      logger.warn({ err: error }, "could not read Discord's session start limit; going by this node's count");
      return known;
    }
    const limit = info.session_start_limit;
    const first = this.known === null;
    const now = Date.now();
    const known: Known = {
      total: limit.total,
      remaining: limit.remaining,
      resetAt: now + limit.reset_after,
      maxConcurrency: limit.max_concurrency,
      readAt: now,
    };
    this.known = known;
    this.spent = 0;
    const fields = {
      total: limit.total,
      remaining: limit.remaining,
      resetInSeconds: Math.round(limit.reset_after / 1000),
      maxConcurrency: limit.max_concurrency,
    };
    const message = `Discord's IDENTIFY budget (session_start_limit): ${limit.remaining} of ${limit.total} left, resets in ${duration(limit.reset_after)}`;
    if (first) logger.info(fields, message);
    else logger.debug(fields, message);
    return known;
  }
}

/** Under the reserve (IDENTIFY_RESERVE of the day's IDENTIFYs). */
export function underReserve(remaining: number, total: number): boolean {
  return remaining < total * IDENTIFY_RESERVE;
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts; `unref`: keeps no process alive. */
function pause(ms: number, signal: AbortSignal, options: { unref?: boolean } = {}): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    signal.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (options.unref) timer.unref?.();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** "23 h 59 min", "4 min 10 s", "12 s". */
function duration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** One at a time, in the order asked; a waiter whose signal aborts leaves the line. */
class Turns {
  private busy = false;
  private readonly line: Array<() => void> = [];

  async take(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (!this.busy) {
      this.busy = true;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.line.indexOf(go);
        if (at >= 0) this.line.splice(at, 1);
        reject(signal.reason);
      };
      const go = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      this.line.push(go);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(): void {
    const next = this.line.shift();
    if (next) next();
    else this.busy = false;
  }
}
