import type { Redis } from 'ioredis';
import { ReadBudget } from './read-budget.js';
import { MemoryWindowCounter, RedisWindowCounter } from './window-counter.js';
import { WriteBudget } from './write-budget.js';

/** Limits count requests per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** The budgets of HTTP requests, as RATE_LIMIT_READ and RATE_LIMIT_WRITE set them. */
export interface RequestBudgets {
  /** Reads per window per client; 0: no limit. */
  read: number;
  /** KV writes per window per key owner, and refused ones per client; 0: no limit. */
  write: number;
  /** Scale-out: write counters in Redis, read counts synced through it: limits hold across API nodes. */
  redis?: { client: Redis; prefix: string };
}

/** The read budget `budgets` ask for, counted in this process (read-budget.ts); null: reads not limited. */
export function readBudgetOf(budgets: RequestBudgets): ReadBudget | null {
  if (budgets.read === 0) return null;
  return new ReadBudget({
    max: budgets.read,
    windowMs: RATE_LIMIT_WINDOW_MS,
    ...(budgets.redis ? { shared: { redis: budgets.redis.client, prefix: budgets.redis.prefix } } : {}),
  });
}

/** The write budget `budgets` ask for, in memory or Redis; null: writes not limited. */
export function writeBudgetOf(budgets: RequestBudgets): WriteBudget | null {
  if (budgets.write === 0) return null;
  const counter = budgets.redis
    ? new RedisWindowCounter(
        budgets.redis.client,
        `${budgets.redis.prefix}rate-limit:write:`,
        RATE_LIMIT_WINDOW_MS,
      )
    : new MemoryWindowCounter(RATE_LIMIT_WINDOW_MS);
  return new WriteBudget(budgets.write, counter);
}
