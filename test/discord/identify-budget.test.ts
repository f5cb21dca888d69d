import type { APIGatewayBotInfo } from 'discord-api-types/v10';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  IDENTIFY_INTERVAL_MS,
  IDENTIFY_RESERVE,
  IdentifyBudget,
  LIMIT_STALE_MS,
  RESET_MARGIN_MS,
} from '../../src/discord/identify-budget.js';

/**
 * The gateway's IDENTIFY throttler against a fake `GET /gateway/bot`, on fake timers: with the budget fine
 * it paces IDENTIFYs as @discordjs/ws's default throttler does and nothing more; under the reserve it waits
 * for the reset, says so once, and identifies after; an abort ends the wait.
 */

const DAY_MS = 24 * 60 * 60 * 1000;
/** The jitter @discordjs/ws adds to a paced IDENTIFY is up to 1.5 s. */
const JITTER_MS = 1_500;

/** Discord's side: the limit, spent by each IDENTIFY the test sends, reset after its window. */
class FakeDiscord {
  reads = 0;
  failing = false;
  private resetAt: number;

  constructor(
    readonly total: number,
    public remaining: number,
    private readonly windowMs = DAY_MS,
    readonly maxConcurrency = 1,
  ) {
    this.resetAt = Date.now() + windowMs;
  }

  /** GET /gateway/bot. */
  fetch = async (): Promise<APIGatewayBotInfo> => {
    this.reads++;
    if (this.failing) throw new Error('Discord is away');
    this.roll();
    return {
      url: 'wss://gateway.discord.gg',
      shards: 1,
      session_start_limit: {
        total: this.total,
        remaining: this.remaining,
        reset_after: this.resetAt - Date.now(),
        max_concurrency: this.maxConcurrency,
      },
    };
  };

  /** An IDENTIFY reaching Discord. */
  identify(): void {
    this.roll();
    this.remaining--;
  }

  private roll(): void {
    if (Date.now() >= this.resetAt) {
      this.remaining = this.total;
      this.resetAt = Date.now() + this.windowMs;
    }
  }
}

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}
const WARN = 40;
const INFO = 30;

function setUp(discord: FakeDiscord) {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const budget = new IdentifyBudget({ fetchGatewayBot: discord.fetch, logger });
  /** Shards let through, in order, and when. */
  const identified: { shardId: number; at: number }[] = [];
  /** Asks for an IDENTIFY as the library does; the IDENTIFY reaches Discord once let through. */
  const identify = (shardId: number, signal = new AbortController().signal) => {
    const done = budget.waitForIdentify(shardId, signal).then(() => {
      discord.identify();
      identified.push({ shardId, at: Date.now() });
    });
    done.catch(() => undefined);
    return done;
  };
  const warnings = () => lines.filter((line) => line.level === WARN);
  return { budget, lines, identified, identify, warnings };
}

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('the IDENTIFY budget, while it is fine', () => {
  it('lets the first IDENTIFY through at once and paces the next ones 5 s apart per bucket, as the library does', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const discord = new FakeDiscord(1000, 998);
    const { budget, identified, identify, warnings } = setUp(discord);
    const start = Date.now();

    const first = identify(0);
    const second = identify(0);
    await first;
    expect(identified).toEqual([{ shardId: 0, at: start }]);

    // The library's pace: the rest of the 5 s since the last IDENTIFY, plus random() × 1.5 s.
    await vi.advanceTimersByTimeAsync(IDENTIFY_INTERVAL_MS + 0.5 * JITTER_MS - 1);
    expect(identified).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await second;
    expect(identified[1]).toEqual({ shardId: 0, at: start + IDENTIFY_INTERVAL_MS + 0.5 * JITTER_MS });

    // Long after the last, no wait at all.
    await vi.advanceTimersByTimeAsync(IDENTIFY_INTERVAL_MS + 1);
    const later = Date.now();
    await identify(0);
    expect(identified[2]?.at).toBe(later);

    expect(warnings()).toEqual([]);
    expect(discord.reads).toBe(1); // one reading serves every IDENTIFY within the minute
    expect(budget.current()).toEqual({
      total: 1000,
      remaining: 995,
      resetInMs: DAY_MS - (later - start),
      maxConcurrency: 1,
    });
  });

  it('identifies max_concurrency shards at once, one per bucket', async () => {
    const discord = new FakeDiscord(1000, 1000, DAY_MS, 2);
    const { identified, identify } = setUp(discord);
    const start = Date.now();
    await Promise.all([identify(0), identify(1)]);
    expect(identified).toEqual([
      { shardId: 0, at: start },
      { shardId: 1, at: start },
    ]);
    const third = identify(2); // bucket 0 again
    await vi.advanceTimersByTimeAsync(IDENTIFY_INTERVAL_MS - 1);
    expect(identified).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(JITTER_MS + 1);
    await third;
    expect(identified[2]?.shardId).toBe(2);
  });

  it('logs the limit at start, at info, and reads it again once a minute old', async () => {
    const discord = new FakeDiscord(1000, 998);
    const { budget, lines, identify } = setUp(discord);
    await budget.ready(new AbortController().signal);
    expect(lines).toEqual([
      expect.objectContaining({
        level: INFO,
        total: 1000,
        remaining: 998,
        resetInSeconds: DAY_MS / 1000,
        msg: "Discord's IDENTIFY budget (session_start_limit): 998 of 1000 left, resets in 24 h 0 min",
      }),
    ]);
    await identify(0);
    expect(discord.reads).toBe(1);

    // Another process of the bot spends some meanwhile.
    discord.remaining -= 300;
    await vi.advanceTimersByTimeAsync(LIMIT_STALE_MS);
    await identify(0);
    expect(discord.reads).toBe(2);
    // 697 as read, less the IDENTIFY let through since.
    expect(budget.current()?.remaining).toBe(696);
    // Only the first reading is said at info.
    expect(lines.filter((line) => line.level === INFO)).toHaveLength(1);
  });

  it('goes by its own count when Discord cannot be asked again, saying so', async () => {
    const discord = new FakeDiscord(1000, 500);
    const { budget, identify, warnings } = setUp(discord);
    await identify(0);
    discord.failing = true;
    await vi.advanceTimersByTimeAsync(LIMIT_STALE_MS);
    await identify(0);
    expect(budget.current()?.remaining).toBe(498);
    expect(warnings()).toEqual([
      expect.objectContaining({
        msg: "could not read Discord's session start limit; going by this node's count",
      }),
    ]);
  });

  it('rejects when the limit was never read: the caller retries', async () => {
    const discord = new FakeDiscord(1000, 1000);
    discord.failing = true;
    const { budget } = setUp(discord);
    await expect(budget.ready(new AbortController().signal)).rejects.toThrow('Discord is away');
    expect(budget.current()).toBeNull();
  });
});

describe('the IDENTIFY budget, under its reserve', () => {
  it('waits for the reset instead of identifying, says so once, then identifies', async () => {
    const RESET_MS = 90_000;
    // 99 of 1,000: under 10%.
    const discord = new FakeDiscord(1000, 99, RESET_MS);
    expect(99 < 1000 * IDENTIFY_RESERVE).toBe(true);
    const { budget, identified, identify, warnings } = setUp(discord);
    const start = Date.now();

    const shard0 = identify(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(warnings()).toEqual([
      expect.objectContaining({
        remaining: 99,
        total: 1000,
        waitSeconds: 91,
        msg: "Discord's IDENTIFY budget is nearly spent: 99 of 1000 left; waiting 91s for it to reset rather than risk the bot's token",
      }),
    ]);
    expect(budget.waitMs).toBe(RESET_MS + RESET_MARGIN_MS);

    await vi.advanceTimersByTimeAsync(RESET_MS + RESET_MARGIN_MS - 1);
    expect(identified).toEqual([]);
    expect(discord.remaining).toBe(99);

    await vi.advanceTimersByTimeAsync(1);
    await shard0;
    expect(identified).toEqual([{ shardId: 0, at: start + RESET_MS + RESET_MARGIN_MS }]);
    expect(warnings()).toHaveLength(1);
    expect(discord.reads).toBe(2); // before the wait, and after it
    expect(budget.current()?.remaining).toBe(999);
    expect(budget.waitMs).toBe(0);
  });

  it('several shards waiting share one wait and one warning', async () => {
    const discord = new FakeDiscord(20, 1, 30_000, 4);
    const { identified, identify, warnings } = setUp(discord);
    const waiting = [0, 1, 2, 3].map((shardId) => identify(shardId));
    await vi.advanceTimersByTimeAsync(30_000 + RESET_MARGIN_MS);
    await Promise.all(waiting);
    expect(identified.map((entry) => entry.shardId).sort()).toEqual([0, 1, 2, 3]);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]?.msg).toMatch(/1 of 20 left; waiting 31s/);
  });

  it('reaches the reserve by its own count: reads Discord’s figure, then waits', async () => {
    // 101 of 1,000: one IDENTIFY leaves 100 (10%, fine), the next would leave 99.
    const discord = new FakeDiscord(1000, 101, 60_000 * 10);
    const { identified, identify, warnings } = setUp(discord);
    await identify(0);
    await vi.advanceTimersByTimeAsync(IDENTIFY_INTERVAL_MS + JITTER_MS);
    await identify(0);
    expect(identified).toHaveLength(2);
    expect(discord.reads).toBe(1);
    // 99 left by its count: Discord is asked before waiting, and agrees.
    const third = identify(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(discord.reads).toBe(2);
    expect(warnings()).toEqual([expect.objectContaining({ remaining: 99, total: 1000 })]);
    expect(identified).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(60_000 * 10);
    await third;
    expect(identified).toHaveLength(3);
  });

  it('an abort ends the wait: no IDENTIFY, no timer left, no further reading', async () => {
    const discord = new FakeDiscord(1000, 3, DAY_MS);
    const { budget, identified, identify, warnings } = setUp(discord);
    const controller = new AbortController();
    const waiting = identify(0, controller.signal);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(warnings()).toHaveLength(1);

    controller.abort();
    await expect(waiting).rejects.toThrow();
    expect(identified).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    expect(discord.reads).toBe(1);

    // ready() before connecting waits the same way, and an abort (the gateway destroyed) ends it too.
    const stopping = new AbortController();
    const ready = budget.ready(stopping.signal);
    ready.catch(() => undefined);
    await vi.advanceTimersByTimeAsync(1_000);
    stopping.abort();
    await expect(ready).rejects.toThrow();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an abort while queued behind another shard of the bucket leaves the line', async () => {
    const discord = new FakeDiscord(1000, 1000);
    const { identified, identify } = setUp(discord);
    await identify(0);
    const paced = identify(0);
    const controller = new AbortController();
    const queued = identify(0, controller.signal);
    const after = identify(0);
    controller.abort();
    await expect(queued).rejects.toThrow();
    await vi.advanceTimersByTimeAsync(2 * (IDENTIFY_INTERVAL_MS + JITTER_MS));
    await Promise.all([paced, after]);
    expect(identified).toHaveLength(3);
  });
});
