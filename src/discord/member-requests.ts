import {
  GatewayOpcodes,
  type GatewayRateLimitedDispatchData,
  type GatewayRequestGuildMembersData,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { ListingWait } from '../ops/readiness.js';
import { timerDelay } from '../ops/timer-delay.js';
import type { Snowflake } from '../presence/model.js';
import { type MemberBatch, MemberBatches } from './member-batches.js';
import { SendPacer } from './send-pacer.js';

/**
 * Requests by user id (batches of up to 100 members who joined) kept until answered, in case Discord defers
 * one; past this many unanswered, the oldest is forgotten and its users may be asked for again.
 */
export const MAX_TRACKED_USER_REQUESTS = 1_000;
/** Discord lists a whole guild once per bot in this window: the wait when RATE_LIMITED names none usable. */
export const MEMBER_LISTING_WINDOW_MS = 30_000;
/**
 * Discord allows 120 gateway sends per connection in 60 s, heartbeats and presence updates included, and
 * disconnects past it (https://discord.com/developers/docs/events/gateway#rate-limiting). Member requests
 * (listings, batches by user id, and either sent again after RATE_LIMITED) take at most this many of them
 * per shard in any 60 s; the other 20 are left for heartbeats (one every ~41 s), identify or resume, and
 * presence updates. A request past it waits its turn.
 */
export const MEMBER_REQUESTS_PER_MINUTE = 100;
const MINUTE_MS = 60_000;

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
 * The member requests (op 8) of every shard: users asked for by id are gathered per guild into batches
 * (`MemberBatches`), every request goes out within MEMBER_REQUESTS_PER_MINUTE per shard (`SendPacer`), and
 * those sent and not yet answered are kept by nonce, so that one Discord answers with RATE_LIMITED can be
 * sent again once the limit allows. A whole guild's listing is kept until its last chunk (one per guild);
 * requests by user id are bounded.
 */
export class MemberRequests {
  private readonly listings = new Map<string, Sent>();
  /** Oldest first. */
  private readonly byUser = new Map<string, Sent>();
  /** Users to ask for, gathered per guild, and who is asked for already. */
  private readonly batches: MemberBatches;
  /** Every op 8 of a shard, within its budget. */
  private readonly pacer: SendPacer;
  private nonceCounter = 0;
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly options: MemberRequestsOptions) {
    this.now = options.now ?? Date.now;
    this.pacer = new SendPacer({ limit: MEMBER_REQUESTS_PER_MINUTE, windowMs: MINUTE_MS, now: this.now });
    this.batches = new MemberBatches({
      ready: (batch) => this.pacer.submit(batch.shardId, batch.guildId, () => this.sendBatch(batch)),
    });
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
    const sent: Sent = { shardId, data };
    this.listings.set(data.nonce, sent);
    this.pacer.submit(shardId, guildId, () => this.transmit(data.nonce, sent));
    return data.nonce;
  }

  /**
   * Asks for these members of a guild with presences, in the guild's next batch: sent once it holds
   * MAX_USER_IDS_PER_REQUEST users or MEMBER_BATCH_DELAY_MS after its first. A user already asked for in
   * the guild, and not answered yet, is not asked for again.
   */
  requestUsers(shardId: number, guildId: Snowflake, userIds: Iterable<Snowflake>): void {
    if (this.closed) return;
    for (const userId of userIds) this.batches.add(shardId, guildId, userId);
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
    const timer = setTimeout(
      () => this.pacer.submit(sent.shardId, sent.data.guild_id, () => this.resend(nonce, sent)),
      delayMs,
    ).unref();
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
    this.batches.forgetShard(shardId);
    this.pacer.forgetShard(shardId);
    for (const requests of [this.listings, this.byUser]) {
      for (const [nonce, sent] of requests) if (sent.shardId === shardId) this.forget(requests, nonce, sent);
    }
  }

  /** The guild is gone, or listed afresh. */
  forgetGuild(guildId: Snowflake): void {
    this.batches.forgetGuild(guildId);
    this.pacer.forgetGuild(guildId);
    for (const requests of [this.listings, this.byUser]) {
      for (const [nonce, sent] of requests) {
        if (sent.data.guild_id === guildId) this.forget(requests, nonce, sent);
      }
    }
  }

  /** Shutdown: nothing is sent again. */
  close(): void {
    this.closed = true;
    this.batches.close();
    this.pacer.close();
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

  /** A batch's turn has come: it takes no more users, and goes out with a nonce of its own. */
  private sendBatch(batch: MemberBatch): boolean {
    this.batches.seal(batch);
    if (this.closed || batch.userIds.size === 0) return false;
    const { shardId, guildId } = batch;
    const data: Request = {
      guild_id: guildId,
      user_ids: [...batch.userIds],
      presences: true,
      nonce: this.nextNonce(),
    };
    const sent: Sent = { shardId, data };
    this.byUser.set(data.nonce, sent);
    for (const [nonce, oldest] of this.byUser) {
      if (this.byUser.size <= MAX_TRACKED_USER_REQUESTS) break;
      this.forget(this.byUser, nonce, oldest);
    }
    return this.transmit(data.nonce, sent);
  }

  /** Sends a request still wanted; false if it no longer is. */
  private transmit(nonce: string, sent: Sent): boolean {
    if (this.closed || (this.listings.get(nonce) ?? this.byUser.get(nonce)) !== sent) return false;
    this.options.send(sent.shardId, sent.data);
    return true;
  }

  private resend(nonce: string, sent: Sent): boolean {
    if (this.closed || (this.listings.get(nonce) ?? this.byUser.get(nonce)) !== sent) return false;
    const waitedMs = this.now() - (sent.retry?.since ?? this.now());
    delete sent.retry;
    this.options.logger.info(
      { ...logFields(sent), waitedSeconds: seconds(waitedMs) },
      `${kind(sent)} resumed after Discord's rate limit`,
    );
    if (this.listings.has(nonce)) this.options.onResent?.(nonce);
    return this.transmit(nonce, sent);
  }

  private forget(requests: Map<string, Sent>, nonce: string, sent: Sent): void {
    if (sent.retry) clearTimeout(sent.retry.timer);
    requests.delete(nonce);
    const userIds = userIdsOf(sent);
    if (userIds) this.batches.release(sent.shardId, sent.data.guild_id, userIds);
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

/** What names the request in a log line: a batch by how many users it asks for. */
function logFields(sent: Sent): Record<string, unknown> {
  const ids = userIdsOf(sent);
  return {
    guildId: sent.data.guild_id,
    shardId: sent.shardId,
    ...(ids === undefined ? {} : { users: ids.length }),
  };
}

/** The users a request by id asks for; undefined for a listing. */
function userIdsOf(sent: Sent): readonly Snowflake[] | undefined {
  if (!('user_ids' in sent.data) || sent.data.user_ids === undefined) return undefined;
  const ids = sent.data.user_ids;
  return Array.isArray(ids) ? ids : [ids];
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/** Discord's retry_after is in seconds (a float); a missing or nonsensical one waits the whole window. */
function retryDelayMs(retryAfter: unknown): number {
  if (typeof retryAfter !== 'number' || !Number.isFinite(retryAfter) || retryAfter < 0) {
    return MEMBER_LISTING_WINDOW_MS;
  }
  return timerDelay(Math.ceil(retryAfter * 1000));
}
