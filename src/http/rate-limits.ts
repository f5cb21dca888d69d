import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ReadBudget } from '../limits/read-budget.js';
import { type RequestBudgets, writeBudgetOf } from '../limits/request-budgets.js';
import type { WindowCount } from '../limits/window-counter.js';
import { clientKey } from '../net/client-address.js';
import { refuseLater } from '../net/tarpit.js';
import type { Snowflake } from '../presence/model.js';
import { ApiError } from './errors.js';
import type { RefusedWrites } from './refused-writes.js';

/**
 * How many budgets of reads a client is refused at once, each refusal answered as soon as it is asked;
 * past them, each further refusal is held (net/tarpit.ts) and ends its connection.
 */
export const READ_BUDGETS_REFUSED_AT_ONCE = 1;

/** The request budgets, and how requests past them are answered. */
export interface RateLimitSettings extends RequestBudgets {
  /** Told of every request a limit refuses (metrics). */
  onLimited?(kind: LimitKind): void;
  /** Told of the clients whose budget for keyless writes is spent, to refuse their next ones at once. */
  refused?: RefusedWrites;
  /** How long a client far past its read budget waits for each refusal; absent: answered at once. */
  heldRefusalMs?: number;
}

/** How a refused write's budget is named when it is the client's, not a key owner's. */
const KEYLESS = ' without a valid API key from this address';

/** The message of a write refused for its budget: `whose` names the budget, after "a minute". */
function writeRefusal(max: number, whose: string, seconds: number): string {
  return `more than ${max} KV writes a minute${whose}; retry in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
}

/** `writeRefusal` of a client's budget of writes refused for their key. */
export function keylessWriteRefusal(max: number, seconds: number): string {
  return writeRefusal(max, KEYLESS, seconds);
}

export type LimitKind = 'read' | 'write';

/**
 * Sets the draft `RateLimit-*` headers of a client who has read `used` times this window, and `Retry-After`
 * when that is more than the budget allows; returns whether it is.
 */
function answerBudget(budget: ReadBudget, used: number, reply: FastifyReply): boolean {
  const seconds = budget.secondsLeft();
  reply
    .header('ratelimit-limit', budget.max)
    .header('ratelimit-remaining', Math.max(0, budget.max - used))
    .header('ratelimit-reset', seconds);
  if (used <= budget.max) return false;
  reply.header('retry-after', seconds);
  return true;
}

/** "45 seconds", "1 second", "1 minute": how long a refused client waits. */
function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
  const minutes = Math.round(seconds / 60);
  return `${minutes} ${minutes === 1 ? 'minute' : 'minutes'}`;
}

/**
 * Charges every request of the routes registered in `scope` afterwards one read of `budget`, the budget the
 * fast path (fast-read.ts) charges too, so a client's reads count once wherever they are answered.
 */
export function limitReads(scope: FastifyInstance, budget: ReadBudget, settings: RateLimitSettings): void {
  scope.addHook('onRequest', readLimit(budget, settings));
}

/** The hook of `limitReads`: one read of `budget` charged to the request's client, `429` past it. */
export function readLimit(budget: ReadBudget, settings: RateLimitSettings): onRequestHookHandler {
  return (request, reply, done) => {
    const used = budget.charge(clientKey(request.ip), 1);
    if (!answerBudget(budget, used, reply)) {
      done();
      return;
    }
    settings.onLimited?.('read');
    const wait = duration(budget.secondsLeft());
    const refusal = new ApiError('rate_limited', `more than ${budget.max} reads a minute; retry in ${wait}`);
    if (used <= budget.max * (1 + READ_BUDGETS_REFUSED_AT_ONCE) || !settings.heldRefusalMs) {
      done(refusal);
      return;
    }
    // A client reading on regardless: nothing more is read from its connection while the refusal is held,
    // and the connection ends with it, so a flood gets one answer per connection it may hold every few
    // seconds rather than as many as it can ask for.
    request.raw.socket?.pause();
    reply.header('connection', 'close');
    refuseLater(settings.heldRefusalMs, () => done(refusal));
  };
}

/**
 * Charges a read answered with more than one presence (the bulk read) for each of them: `reads` in all, of
 * which the read budget's hook took one with the request. Over budget it throws `429 rate_limited`.
 */
export type ReadCharge = (request: FastifyRequest, reply: FastifyReply, reads: number) => void;

/** The bulk read's charge against `budget`; null when reads are not limited. */
export function readChargeOf(budget: ReadBudget | null, settings: RateLimitSettings): ReadCharge | null {
  if (budget === null) return null;
  return (request, reply, reads) => {
    if (reads <= 1) return;
    const used = budget.charge(clientKey(request.ip), reads - 1);
    if (!answerBudget(budget, used, reply)) return;
    settings.onLimited?.('read');
    const seconds = budget.secondsLeft();
    throw new ApiError(
      'rate_limited',
      `more than ${budget.max} reads a minute (a bulk read counts one per id); retry in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}`,
    );
  };
}

/**
 * Who pays for a KV write, charged by the KV routes once they know: a write with a live key that may act
 * on its id counts against the key's owner; a write refused for its id or key counts against its client,
 * so random keys are no way around the limit. Over budget, each throws `429 rate_limited`.
 */
export interface WriteBudgets {
  chargeOwner(reply: FastifyReply, owner: Snowflake): Promise<void>;
  chargeClient(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

/**
 * The user a keyed write acts for, as `authorize` settles it, charged to that user's budget; a write
 * `authorize` refuses (no key, a bad key, another user's id) is charged to its client instead.
 */
export async function chargedWriter(
  budgets: WriteBudgets | null | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
  authorize: () => Promise<Snowflake>,
): Promise<Snowflake> {
  let owner: Snowflake;
  try {
    owner = await authorize();
  } catch (error) {
    if (error instanceof ApiError) await budgets?.chargeClient(request, reply);
    throw error;
  }
  await budgets?.chargeOwner(reply, owner);
  return owner;
}

/** The write budgets `settings` ask for, charged to their requests; null when writes are not limited. */
export function writeBudgetsOf(settings: RateLimitSettings): WriteBudgets | null {
  const budget = writeBudgetOf(settings);
  if (budget === null) return null;
  const { max } = budget;
  /**
   * Sets the draft `RateLimit-*` headers of `charged`, and `Retry-After` and `429` when it is past the
   * budget; `whose`: how the refusal names the budget, after "more than N KV writes a minute".
   */
  const answer = async (reply: FastifyReply, charged: Promise<WindowCount>, whose: string): Promise<void> => {
    const { count, msLeft } = await charged;
    const seconds = Math.ceil(msLeft / 1000);
    reply.header('ratelimit-limit', max).header('ratelimit-reset', seconds);
    if (count <= max) {
      reply.header('ratelimit-remaining', Math.max(0, max - count));
      return;
    }
    settings.onLimited?.('write');
    reply.header('ratelimit-remaining', 0).header('retry-after', seconds);
    throw new ApiError('rate_limited', writeRefusal(max, whose, seconds));
  };
  return {
    chargeOwner: (reply, owner) => answer(reply, budget.chargeOwner(owner), ''),
    chargeClient: async (request, reply) => {
      const client = clientKey(request.ip);
      try {
        await answer(reply, budget.chargeClient(client), KEYLESS);
      } catch (error) {
        settings.refused?.spent(client, Number(reply.getHeader('retry-after')));
        throw error;
      }
    },
  };
}
