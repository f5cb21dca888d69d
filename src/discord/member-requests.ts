import {
  GatewayOpcodes,
  type GatewayRateLimitedDispatchData,
  type GatewayRequestGuildMembersData,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { ListingWait } from '../ops/readiness.js';
import type { Snowflake } from '../presence/model.js';

/**
 * Requests by user id (one per member who joins) kept until answered, in case Discord defers one; past this
 * many unanswered, the oldest is forgotten.
 */
export const MAX_TRACKED_USER_REQUESTS = 1_000;
/** Discord lists a whole guild once per bot in this window: the wait when RATE_LIMITED names none usable. */
export const MEMBER_LISTING_WINDOW_MS = 30_000;
/** setTimeout's longest delay: a longer one would fire at once. */
const MAX_DELAY_MS = 2_147_483_647;

type Request = GatewayRequestGuildMembersData & { nonce: string };

interface Sent {
  shardId: number;
  data: Request;
  /** Set while the request waits out Discord's rate limit: since when, and until when. */
  retry?: { timer: NodeJS.Timeout; since: number; at: number };
}

export interface MemberRequestsOptions {
  /** Sends REQUEST_GUILD_MEMBERS (op 8) on a shard. */
  send(shardId: number, data: GatewayRequestGuildMembersData): void;
  /** A whole guild's listing was sent again after the limit: its progress starts over. */
  onResent?(nonce: string): void;
  logger: Logger;
  now?: () => number;
}

/**
 * The member requests (op 8) sent and not yet answered, by nonce, so that one Discord answers with
 * RATE_LIMITED can be sent again once the limit allows. A whole guild's listing is kept until its last
 * chunk (one per guild); requests by user id are bounded.
 */
export class MemberRequests {
  private readonly listings = new Map<string, Sent>();
  /** Oldest first. */
  private readonly byUser = new Map<string, Sent>();
  private nonceCounter = 0;
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly options: MemberRequestsOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Asks for every member of a guild with presences, in place of any request for it still under way (the
   * listing answers those too). Returns the listing's nonce.
   */
  listGuild(shardId: number, guildId: Snowflake): string {
    this.forgetGuild(guildId);
    const data: Request = {
      guild_id: guildId,
      query: '',
      limit: 0,
      presences: true,
      nonce: this.nextNonce(),
    };
    this.listings.set(data.nonce, { shardId, data });
    this.options.send(shardId, data);
    return data.nonce;
  }

  requestUsers(shardId: number, guildId: Snowflake, userIds: Snowflake[]): void {
    const data: Request = { guild_id: guildId, user_ids: userIds, presences: true, nonce: this.nextNonce() };
    this.byUser.set(data.nonce, { shardId, data });
    for (const [nonce, sent] of this.byUser) {
      if (this.byUser.size <= MAX_TRACKED_USER_REQUESTS) break;
      this.forget(this.byUser, nonce, sent);
    }
    this.options.send(shardId, data);
  }

  /** A GUILD_MEMBERS_CHUNK carrying this nonce arrived; after the last one the request is done. */
  answered(nonce: string, last: boolean): void {
    if (!last) return;
    for (const requests of [this.listings, this.byUser]) {
      const sent = requests.get(nonce);
      if (sent) this.forget(requests, nonce, sent);
    }
  }

  /** RATE_LIMITED: a deferred member request is sent again after `retry_after`; other opcodes are logged. */
  rateLimited(data: GatewayRateLimitedDispatchData<GatewayOpcodes.RequestGuildMembers>): void {
    const { logger } = this.options;
    const opcode = data.opcode as number;
    if (opcode !== GatewayOpcodes.RequestGuildMembers) {
      logger.warn({ opcode, retryAfterSeconds: data.retry_after }, 'Discord rate limited a gateway request');
      return;
    }
    const found = this.find(data.meta?.nonce, data.meta?.guild_id);
    if (!found || this.closed) {
      logger.debug({ guildId: data.meta?.guild_id }, 'a rate-limited member request is no longer wanted');
      return;
    }
    const [nonce, sent] = found;
    const delayMs = retryDelayMs(data.retry_after);
    const now = this.now();
    if (sent.retry) clearTimeout(sent.retry.timer);
    const timer = setTimeout(() => this.resend(nonce, sent), delayMs).unref();
    sent.retry = { timer, since: sent.retry?.since ?? now, at: now + delayMs };
    logger.warn(
      { ...logFields(sent), retryInSeconds: seconds(delayMs) },
      `${kind(sent)} deferred by Discord's rate limit; sent again when it allows`,
    );
  }

  /** Whole-guild listings waiting on Discord's rate limit, soonest first. */
  waiting(): ListingWait[] {
    const now = this.now();
    const waits: ListingWait[] = [];
    for (const sent of this.listings.values()) {
      if (sent.retry)
        waits.push({ guildId: sent.data.guild_id, retryInMs: Math.max(sent.retry.at - now, 0) });
    }
    return waits.sort((a, b) => a.retryInMs - b.retryInMs);
  }

  /** A fresh session on the shard: the old session's requests will not be answered. */
  forgetShard(shardId: number): void {
    for (const requests of [this.listings, this.byUser]) {
      for (const [nonce, sent] of requests) if (sent.shardId === shardId) this.forget(requests, nonce, sent);
    }
  }

  /** The guild is gone, or listed afresh. */
  forgetGuild(guildId: Snowflake): void {
    for (const requests of [this.listings, this.byUser]) {
      for (const [nonce, sent] of requests) {
        if (sent.data.guild_id === guildId) this.forget(requests, nonce, sent);
      }
    }
  }

  /** Shutdown: nothing is sent again. */
  close(): void {
    this.closed = true;
    for (const requests of [this.listings, this.byUser]) {
      for (const [nonce, sent] of requests) this.forget(requests, nonce, sent);
    }
  }

  private find(nonce: string | undefined, guildId: Snowflake | undefined): [string, Sent] | undefined {
    if (nonce !== undefined) {
      const sent = this.listings.get(nonce) ?? this.byUser.get(nonce);
      return sent ? [nonce, sent] : undefined;
    }
    for (const entry of this.listings) if (entry[1].data.guild_id === guildId) return entry;
    return undefined;
  }

  private resend(nonce: string, sent: Sent): void {
    const waitedMs = this.now() - (sent.retry?.since ?? this.now());
    delete sent.retry;
    this.options.logger.info(
      { ...logFields(sent), waitedSeconds: seconds(waitedMs) },
      `${kind(sent)} resumed after Discord's rate limit`,
    );
    if (this.listings.has(nonce)) this.options.onResent?.(nonce);
    this.options.send(sent.shardId, sent.data);
  }

  private forget(requests: Map<string, Sent>, nonce: string, sent: Sent): void {
    if (sent.retry) clearTimeout(sent.retry.timer);
    requests.delete(nonce);
  }

  private nextNonce(): string {
    this.nonceCounter = (this.nonceCounter + 1) % Number.MAX_SAFE_INTEGER;
    return `p${this.nonceCounter.toString(36)}`;
  }
}

/** What the log calls it: a whole guild's listing, or members asked for by id. */
function kind(sent: Sent): string {
  return 'user_ids' in sent.data ? 'member request' : 'member listing';
}

/** What names the request in a log line. */
function logFields(sent: Sent): Record<string, unknown> {
  const ids = 'user_ids' in sent.data ? sent.data.user_ids : undefined;
  return {
    guildId: sent.data.guild_id,
    shardId: sent.shardId,
    ...(ids === undefined ? {} : { userIds: ids }),
  };
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/** Discord's retry_after is in seconds (a float); a missing or nonsensical one waits the whole window. */
function retryDelayMs(retryAfter: unknown): number {
  if (typeof retryAfter !== 'number' || !Number.isFinite(retryAfter) || retryAfter < 0) {
    return MEMBER_LISTING_WINDOW_MS;
  }
  return Math.min(Math.ceil(retryAfter * 1000), MAX_DELAY_MS);
}
