import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { presentedKey } from './auth.js';
import { ApiError } from './errors.js';
import type { ReadLimiter } from './fast-read.js';

/** Limits count requests per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface RateLimitSettings {
  /** Reads per window per client IP; 0: no limit. */
  read: number;
  /** KV writes per window per API key; 0: no limit. */
  write: number;
  /** Scale-out: counters in Redis, so a limit holds across every API node. */
  redis?: { client: Redis; prefix: string };
  /** Told of every request a limit refuses (metrics). */
  onLimited?(kind: LimitKind): void;
}

export type LimitKind = 'read' | 'write';

/**
 * Puts one budget on every route registered in `scope` afterwards: per client IP for reads, per API key
 * for writes (a request without a key counts against its IP). A counter that cannot be reached (Redis
 * away) lets the request through: the limit protects the service, it must not take it down.
 */
export async function limitRoutes(
  scope: FastifyInstance,
  kind: LimitKind,
  settings: RateLimitSettings,
): Promise<void> {
  const max = settings[kind];
  if (max === 0) return;
  await scope.register(rateLimit, {
    max,
    timeWindow: RATE_LIMIT_WINDOW_MS,
    enableDraftSpec: true,
    skipOnError: true,
    keyGenerator: kind === 'read' ? (request) => request.ip : writerOf,
    onExceeded: () => settings.onLimited?.(kind),
    ...(settings.redis
      ? { redis: settings.redis.client, nameSpace: `${settings.redis.prefix}rate-limit:${kind}:` }
      : {}),
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        'rate_limited',
        `more than ${context.max} ${kind === 'read' ? 'reads' : 'KV writes'} a minute; retry in ${context.after}`,
      ),
  });
}

/**
 * The read budget of `scope` (after `limitRoutes(scope, 'read', …)`) for requests answered outside Fastify
 * (fast-read.ts): the same counters, so a client's reads count once wherever they are answered.
 */
export function readLimiterOf(scope: FastifyInstance): ReadLimiter {
  const limit = scope.createRateLimit();
  return async (ip) => {
    // The plugin reads the key from the request (our keyGenerator: its ip) and a route's own settings
    // (none here); nothing else of a request is read.
    const budget = await limit({ ip, routeOptions: { config: {} } } as unknown as FastifyRequest);
    if (budget.isAllowed) return { exceeded: false, headers: [] };
    return {
      exceeded: budget.isExceeded,
      headers: [
        'ratelimit-limit',
        budget.max,
        'ratelimit-remaining',
        budget.remaining,
        'ratelimit-reset',
        budget.ttlInSeconds,
      ],
    };
  };
}

/** The key's hash, never the key: counters live in memory or Redis, where a key must not. */
function writerOf(request: FastifyRequest): string {
  const key = presentedKey(request);
  return key === undefined ? `ip:${request.ip}` : createHash('sha256').update(key).digest('base64url');
}
