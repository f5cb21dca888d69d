import type { IncomingMessage, ServerResponse } from 'node:http';
import { isApiKeyShape } from '../keys/api-key.js';
import type { ApiKeyService } from '../keys/service.js';
import { clientKey } from '../net/client-address.js';
import { ABUSE_REFUSAL_DELAY_MS, refuseLater } from '../net/tarpit.js';
import type { Metrics } from '../ops/metrics.js';
import { presentedKey } from './auth.js';
import { answerOutsideRoutes, ERROR_STATUS } from './errors.js';
import type { RequestHandler } from './fast-read.js';
import { keylessWriteRefusal } from './rate-limits.js';

/** The paths of KV writes: `/v1/users/<id or @me>/kv…`. */
const KV_PATH = /^\/v1\/users\/[^/?]+\/kv(?:[/?]|$)/;
/** How often clients whose budget has refilled are forgotten: a write budget's window. */
const SWEEP_EVERY_MS = 60_000;

/** Whether the path is a KV write's, percent-encoded or not, as the router reads it. */
function isKvPath(url: string): boolean {
  if (!url.includes('%')) return KV_PATH.test(url);
  try {
    return KV_PATH.test(decodeURI(url));
  } catch {
    return false;
  }
}

/**
 * Clients past their budget of KV writes refused for their key (see rate-limits.ts), until it refills.
 * While they are, such a write is refused before anything else is done for it: a flood of writes with
 * no key, or with made-up keys, costs a look-up at most, not a request's way through the framework, and
 * its body is never parsed: the connection closes, dropping what the client still sends (net/lingering-close.ts).
 */
export class RefusedWrites {
  private readonly until = new Map<string, number>();
  private sweptAt = 0;

  private readonly metrics: Metrics | undefined;
  private readonly delayMs: number;
  private readonly now: () => number;

  constructor(
    /** RATE_LIMIT_WRITE, which the refusal names. */
    private readonly perMinute: number,
    options: { metrics?: Metrics; delayMs?: number; now?: () => number } = {},
  ) {
    this.metrics = options.metrics;
    this.delayMs = options.delayMs ?? ABUSE_REFUSAL_DELAY_MS;
    this.now = options.now ?? Date.now;
  }

  /** The client (a clientKey) was just refused for its budget, which refills in `seconds`. */
  spent(client: string, seconds: number): void {
    const now = this.now();
    // Clients whose budget has refilled are forgotten, at most once a budget window.
    if (now - this.sweptAt >= SWEEP_EVERY_MS) {
      this.sweptAt = now;
      for (const [key, until] of this.until) if (until <= now) this.until.delete(key);
    }
    this.until.set(client, now + seconds * 1000);
  }

  /**
   * A request handler that refuses keyless KV writes of spent clients at once, and passes everything else
   * (a live key among them: its owner writes whatever the address did) to `next`.
   */
  handler(
    keys: ApiKeyService,
    clientAddress: (request: IncomingMessage) => string,
    next: RequestHandler,
  ): RequestHandler {
    return (request, response) => {
      const seconds =
        this.until.size === 0 || request.method === 'GET' || !isKvPath(request.url ?? '')
          ? 0
          : this.secondsLeft(clientKey(clientAddress(request)));
      if (seconds === 0) {
        next(request, response);
        return;
      }
      const key = presentedKey(request);
      if (key === undefined || !isApiKeyShape(key)) {
        this.refuse(response, seconds);
        return;
      }
      keys.ownerOf(key).then(
        (owner) => (owner === undefined ? this.refuse(response, seconds) : next(request, response)),
        () => next(request, response),
      );
    };
  }

  private secondsLeft(client: string): number {
    const until = this.until.get(client);
    if (until === undefined) return 0;
    const left = Math.ceil((until - this.now()) / 1000);
    if (left > 0) return left;
    this.until.delete(client);
    return 0;
  }

  /** Answers after ABUSE_REFUSAL_DELAY_MS (or up to twice it): the client was refused already, and keeps asking. */
  private refuse(response: ServerResponse, seconds: number): void {
    // Nothing is read while the refusal is held: the client's sending stops at what the buffers hold.
    response.socket?.pause();
    refuseLater(this.delayMs, () => this.answer(response, seconds));
  }

  private answer(response: ServerResponse, seconds: number): void {
    if (response.destroyed) return;
    this.metrics?.rateLimited('write');
    const message = keylessWriteRefusal(this.perMinute, seconds);
    answerOutsideRoutes(response, ERROR_STATUS.rate_limited, 'rate_limited', message, {
      'retry-after': String(seconds),
      'ratelimit-limit': String(this.perMinute),
      'ratelimit-remaining': '0',
      'ratelimit-reset': String(seconds),
    });
  }
}
