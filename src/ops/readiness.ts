import type { Snowflake } from '../presence/model.js';

/** How long the store may take to answer a readiness ping before it counts as unreachable. */
export const STORE_PING_TIMEOUT_MS = 1_000;

/** A whole guild's listing waiting on Discord's rate limit. */
export interface ListingWait {
  guildId: Snowflake;
  /** Until it is sent again. */
  retryInMs: number;
}

/**
 * A shard's connection to Discord: `ready`, a live session (READY or RESUMED); `resuming`, disconnected
 * with its session kept, to be resumed (nothing missed); `identifying`, without a session (none yet, or
 * Discord would not resume it), waiting to identify and for READY.
 */
export type ShardState = 'ready' | 'resuming' | 'identifying';

export interface ShardReport {
  id: number;
  state: ShardState;
  /** When Discord last sent the shard a dispatch or a heartbeat acknowledgement; null before any. */
  lastEventAt: number | null;
}

/** The shards as `/v1/ready` lists them: `last_event_ms`, the age of the last event, null before any. */
export function shardsAnswer(
  reports: readonly ShardReport[],
  now: number,
): Array<{ id: number; state: ShardState; last_event_ms: number | null }> {
  return reports.map(({ id, state, lastEventAt }) => ({
    id,
    state,
    last_event_ms: lastEventAt === null ? null : Math.max(0, now - lastEventAt),
  }));
}

/** Guilds named in the gateway check's problem; the rest are counted. */
export const MAX_NAMED_WAITING_GUILDS = 5;

/** One condition for taking traffic; `problem` is what `/v1/ready` says when it does not hold. */
export interface ReadinessCheck {
  name: string;
  /** Worded when the check fails, if it depends on what failed. */
  problem: string | (() => string);
  check(): boolean | Promise<boolean>;
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, 'ok' | 'failed'>;
  /** The problems of the failed checks, in order. */
  problems: string[];
}

/** Runs every check at once; a check that throws has failed. */
export async function checkReadiness(checks: readonly ReadinessCheck[]): Promise<ReadinessReport> {
  const results = await Promise.all(
    checks.map(async (entry) => {
      try {
        return await entry.check();
      } catch {
        return false;
      }
    }),
  );
  const report: ReadinessReport = { ready: true, checks: {}, problems: [] };
  checks.forEach((entry, index) => {
    const ok = results[index] === true;
    report.checks[entry.name] = ok ? 'ok' : 'failed';
    if (!ok) {
      report.ready = false;
      const problem = typeof entry.problem === 'string' ? entry.problem : entry.problem();
      report.problems.push(`${entry.name}: ${problem}`);
    }
  });
  return report;
}

/** A node's connections to Redis, as readiness sees them. */
export interface RedisLinkState {
  /** Why Redis cannot be used now (a connection down, the password refused); null when it can. */
  unusable(): string | null;
}

/**
 * The store answers a trivial query (SQLite, PostgreSQL) or PING (Redis) within STORE_PING_TIMEOUT_MS; a
 * store in Redis also needs every connection of the node up and let in, its subscription's included.
 */
export function storeCheck(
  store: { ping(): Promise<boolean> },
  redis: RedisLinkState | null = null,
): ReadinessCheck {
  return {
    name: 'store',
    problem: () => redis?.unusable() ?? `the store did not answer within ${STORE_PING_TIMEOUT_MS} ms`,
    check: () => !redis?.unusable() && withTimeout(store.ping(), STORE_PING_TIMEOUT_MS),
  };
}

/**
 * Redis answers PING within STORE_PING_TIMEOUT_MS on connections that are all up and let in: a node whose
 * durable store is elsewhere still needs it.
 */
export function redisCheck(redis: RedisLinkState & { ping(): Promise<string> }): ReadinessCheck {
  return {
    name: 'redis',
    problem: () => redis.unusable() ?? `Redis did not answer within ${STORE_PING_TIMEOUT_MS} ms`,
    check: () =>
      !redis.unusable() &&
      withTimeout(
        redis.ping().then((answer) => answer === 'PONG'),
        STORE_PING_TIMEOUT_MS,
      ),
  };
}

function withTimeout(answer: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

const SESSIONS_PROBLEM =
  'not every shard has a live Discord session, or the first member listing is not done';

/**
 * Every shard this node runs has a live Discord session, every guild has been listed once since the
 * start, and no guild's listing waits on Discord's rate limit. Before a listing, offline members of a
 * large guild are not known (reads answer 404) and members who left are still served. The problem says
 * so too when the gateway waits for Discord's IDENTIFY budget to reset.
 */
export function gatewayCheck(
  gateway: { readonly ready: boolean; readonly identifyWaitMs?: number; shardReports?(): ShardReport[] },
  listing: { listed(): boolean; waiting(): readonly ListingWait[] },
): ReadinessCheck {
  return {
    name: 'gateway',
    problem: () => {
      const waits = listing.waiting();
      const problems = gateway.ready && listing.listed() ? [] : [SESSIONS_PROBLEM];
      const down = (gateway.shardReports?.() ?? []).filter((shard) => shard.state !== 'ready');
      if (down.length > 0) problems.push(shardsProblem(down));
      const identifyWaitMs = gateway.identifyWaitMs ?? 0;
      if (identifyWaitMs > 0) {
        problems.push(
          `the gateway waits for Discord's IDENTIFY budget to reset, in ${(identifyWaitMs / 1000).toFixed(1)} s`,
        );
      }
      if (waits.length > 0) problems.push(waitingProblem(waits));
      return problems.length > 0 ? problems.join('; ') : SESSIONS_PROBLEM;
    },
    check: () => gateway.ready && listing.listed() && listing.waiting().length === 0,
  };
}

/** The shards without a live session: their state, and how long ago each last heard from Discord. */
function shardsProblem(down: readonly ShardReport[]): string {
  const named = shardsAnswer(down, Date.now()).map(
    ({ id, state, last_event_ms }) =>
      `shard ${id} ${state}${last_event_ms === null ? '' : `, last event ${(last_event_ms / 1000).toFixed(1)} s ago`}`,
  );
  return named.join(', ');
}

/** Which guilds' listings Discord deferred, and when each is sent again. */
function waitingProblem(waits: readonly ListingWait[]): string {
  const when = (wait: ListingWait) => `${(wait.retryInMs / 1000).toFixed(1)} s`;
  const [first] = waits;
  if (waits.length === 1 && first) {
    return `the member listing of guild ${first.guildId} waits on Discord's rate limit, sent again in ${when(first)}`;
  }
  const named = waits.slice(0, MAX_NAMED_WAITING_GUILDS).map((wait) => `${wait.guildId} (in ${when(wait)})`);
  const more = waits.length - named.length;
  return `the member listings of ${waits.length} guilds wait on Discord's rate limit, sent again: ${named.join(', ')}${more > 0 ? `, and ${more} more` : ''}`;
}

/** An API node serves its replica: it must hold every shared presence. */
export function replicaCheck(replica: { readonly synced: boolean }): ReadinessCheck {
  return {
    name: 'replica',
    problem: 'the shared presences have not been read from Redis since it was last reached',
    check: () => replica.synced,
  };
}
