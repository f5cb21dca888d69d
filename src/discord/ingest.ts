import {
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayGuildCreateDispatchData,
  type GatewayGuildMembersChunkDispatchData,
  type GatewayReadyDispatchData,
  type GatewayRequestGuildMembersData,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { ListingWait } from '../ops/readiness.js';
import type { RawPresence, Snowflake } from '../presence/model.js';
import { OFFLINE_PRESENCE, rawPresenceFrom } from '../presence/normalize/raw.js';
import type { PresenceRegistry } from '../presence/registry/registry.js';
import { MemberRequests } from './member-requests.js';
import type { MonitorPolicy } from './monitor-policy.js';

type PresenceLike = { user?: { id?: string } } & Parameters<typeof rawPresenceFrom>[0];

export interface IngestOptions {
  registry: PresenceRegistry;
  /** Sends REQUEST_GUILD_MEMBERS (op 8) on a shard. */
  requestMembers(shardId: number, data: GatewayRequestGuildMembersData): void;
  /** USER_UPDATE: the user's profile (banner, accent) may have changed too. */
  onUserUpdated?(userId: Snowflake): void;
  /** Every guild READY listed on the shard has been loaded in full: its members are all known now. */
  onShardSynced?(shardId: number): void;
  /**
   * A guild's members or a chunk of them were taken in: some may wait to be rendered
   * (`PresenceRegistry.renderPending`), and a listing may have ended (`listing`).
   */
  onMembersListed?(): void;
  logger: Logger;
  /** The clock of the loading progress logs; tests give their own. */
  now?: () => number;
  /** Who is monitored; absent: everyone the bot sees. */
  policy?: MonitorPolicy;
}

/** A large guild's members arrive over seconds to minutes: progress is logged at most this often. */
export const PROGRESS_LOG_INTERVAL_MS = 5_000;

/** A member listing of a whole guild under way. */
interface Listing {
  guildId: Snowflake;
  shardId: number;
  /** The guild's member count as GUILD_CREATE gave it; the listing's own total is not known ahead. */
  expected: number | undefined;
  received: number;
  startedAt: number;
  loggedAt: number;
}

/**
 * Turns gateway dispatches into registry calls, and keeps what the registry needs to rebuild state
 * after a fresh session: which shard each guild lives on, and which member listing is the current one.
 */
export class GatewayIngest {
  private readonly guildShards = new Map<Snowflake, number>();
  /** nonce → listing of a whole guild; a listing's last chunk ends its sync. */
  private readonly listings = new Map<string, Listing>();
  /** What was asked of Discord and not yet answered, to ask again when Discord defers it. */
  private readonly requests: MemberRequests;
  /** Per shard, the guilds of its last READY whose member listing has not completed yet. */
  private readonly unsynced = new Map<number, Set<Snowflake>>();
  /** Guilds Discord said are unavailable (an outage) and has not sent again since. */
  private readonly unavailable = new Set<Snowflake>();
  /** Shards whose guilds a previous process saved (`restore`): synced once resumed, listed anew if not. */
  private readonly restored = new Set<number>();
  /**
   * By shard being resumed, by user, the sequence number up to which the user's saved presence holds the
   * shard's events already: what the resume replays up to it is not applied to them again.
   */
  private readonly heldUpTo = new Map<number, ReadonlyMap<Snowflake, number>>();

  private readonly now: () => number;
  /** The policy when it may leave anyone out; null when everyone is monitored, so nobody is asked about. */
  private readonly policy: MonitorPolicy | null;

  constructor(private readonly options: IngestOptions) {
    this.now = options.now ?? Date.now;
    this.policy = options.policy && !options.policy.monitorsEveryone ? options.policy : null;
    this.requests = new MemberRequests({
      send: options.requestMembers,
      onResent: (nonce) => this.restarted(nonce),
      logger: options.logger,
      now: this.now,
    });
  }

  /** Guild listings Discord deferred with RATE_LIMITED: until sent again, these guilds are not listed. */
  get listingsWaiting(): ListingWait[] {
    return this.requests.waiting();
  }

  /** Whether a guild is unavailable now: its members were let go for the outage, not because they left. */
  get outage(): boolean {
    return this.unavailable.size > 0;
  }

  /** Whether a whole guild's member listing is under way: its chunks are still to come. */
  get listing(): boolean {
    return this.listings.size > 0;
  }

  /**
   * Whether every guild of the shard is known in full: none waits for its listing (sent, deferred, or to
   * come after READY), and it is not a previous process's shard still to be resumed. Only such a shard's
   * session is saved to be resumed, since a resume lists nothing.
   */
  knownInFull(shardId: number): boolean {
    if (this.unsynced.has(shardId) || this.restored.has(shardId)) return false;
    for (const listing of this.listings.values()) if (listing.shardId === shardId) return false;
    return true;
  }

  /**
   * A previous process's shard not resumed because the shard count changed: each of its guilds is on the
   * shard that holds it now, lost until that shard's session sends it, or let go where this node does not
   * run that shard. Its READY then tells which guilds are still there.
   */
  shardGone(shardId: number, shardCount: number, runs: (shardId: number) => boolean): void {
    this.restored.delete(shardId);
    this.heldUpTo.delete(shardId);
    const lost: Snowflake[] = [];
    for (const guildId of this.guildsOn(shardId)) {
      const now = Number((BigInt(guildId) >> 22n) % BigInt(shardCount));
      if (runs(now)) {
        this.guildShards.set(guildId, now);
        lost.push(guildId);
      } else {
        this.guildShards.delete(guildId);
        this.options.policy?.guildLeft(guildId);
        this.options.registry.guildRemoved(guildId);
      }
    }
    this.options.registry.guildsLost(lost);
  }

  /** Which shard each guild taken in lives on: saved across a restart with the presences. */
  guildShardEntries(): Array<[Snowflake, number]> {
    return [...this.guildShards];
  }

  /**
   * A previous process's guilds, whose members the registry has taken back: their shards are to be
   * resumed, after which nothing of them is listed again.
   */
  restore(
    shardIds: readonly number[],
    guildShards: ReadonlyArray<readonly [Snowflake, number]>,
    heldUpTo: ReadonlyMap<number, ReadonlyMap<Snowflake, number>> = new Map(),
  ): void {
    for (const shardId of shardIds) this.restored.add(shardId);
    for (const [shardId, users] of heldUpTo)
      if (this.restored.has(shardId)) this.heldUpTo.set(shardId, users);
    for (const [guildId, shardId] of guildShards) {
      if (this.restored.has(shardId)) this.guildShards.set(guildId, shardId);
    }
  }

  /** Shutdown: no deferred request is sent any more. */
  close(): void {
    this.requests.close();
  }

  handle(payload: GatewayDispatchPayload, shardId: number): void {
    const { registry } = this.options;
    if (this.heldUpTo.size > 0 && this.heldAlready(payload, shardId)) return;
    switch (payload.t) {
      case GatewayDispatchEvents.Ready:
        this.heldUpTo.delete(shardId);
        this.restored.delete(shardId);
        this.ready(payload.d, shardId);
        break;
      case GatewayDispatchEvents.Resumed:
        // The replay is over: everything from here on is new.
        this.heldUpTo.delete(shardId);
        // The session a previous process left: every guild of it is known from what it saved, and current
        // with what was replayed, even what that process held as stale.
        if (this.restored.delete(shardId)) {
          registry.guildsResumed(this.guildsOn(shardId));
          this.options.onShardSynced?.(shardId);
        }
        break;
      case GatewayDispatchEvents.GuildCreate:
        this.guildCreate(payload.d, shardId);
        this.options.onMembersListed?.();
        break;
      case GatewayDispatchEvents.GuildMembersChunk:
        this.membersChunk(payload.d, shardId);
        this.options.onMembersListed?.();
        break;
      case GatewayDispatchEvents.GuildMemberAdd:
        if (!this.admits(payload.d.guild_id, payload.d.user.id, payload.d.roles)) break;
        registry.memberSeen(payload.d.guild_id, payload.d.user);
        // Gathered with the guild's other joins into one request; a user asked for already (Discord sends
        // this for members too) is not asked for again.
        this.requests.requestUsers(shardId, payload.d.guild_id, [payload.d.user.id]);
        break;
      case GatewayDispatchEvents.GuildMemberUpdate:
        // A member who lost what let them be monitored (the opt-in role) is let go everywhere.
        if (!this.admits(payload.d.guild_id, payload.d.user.id, payload.d.roles)) {
          if (this.policy?.monitors(payload.d.user.id) === false) registry.stopMonitoring(payload.d.user.id);
          else registry.memberRemoved(payload.d.guild_id, payload.d.user.id);
          break;
        }
        if (!registry.isMonitored(payload.d.user.id) && this.policy !== null) {
          // Monitored from now on (given the role): their presence is asked for, as for a new member.
          this.requests.requestUsers(shardId, payload.d.guild_id, [payload.d.user.id]);
        }
        registry.memberSeen(payload.d.guild_id, payload.d.user);
        break;
      case GatewayDispatchEvents.GuildMemberRemove:
        this.options.policy?.memberLeft(payload.d.user.id, payload.d.guild_id);
        registry.memberRemoved(payload.d.guild_id, payload.d.user.id);
        break;
      case GatewayDispatchEvents.GuildDelete:
        if (payload.d.unavailable) this.unavailable.add(payload.d.id);
        else {
          this.unavailable.delete(payload.d.id);
          this.options.policy?.guildLeft(payload.d.id);
        }
        this.guildShards.delete(payload.d.id);
        this.requests.forgetGuild(payload.d.id);
        registry.guildRemoved(payload.d.id);
        // Left for good: nothing of it is coming. Merely unavailable: its listing is still awaited.
        if (!payload.d.unavailable) this.synced(shardId, payload.d.id);
        break;
      case GatewayDispatchEvents.PresenceUpdate:
        if (!this.admits(payload.d.guild_id, payload.d.user.id)) break;
        registry.memberSeen(payload.d.guild_id, payload.d.user, rawPresenceFrom(payload.d));
        break;
      case GatewayDispatchEvents.UserUpdate:
        registry.userUpdated(payload.d);
        this.options.onUserUpdated?.(payload.d.id);
        break;
      case GatewayDispatchEvents.RateLimited:
        this.requests.rateLimited(payload.d);
        break;
      default:
        break;
    }
  }

  /**
   * A fresh session (not a resume): guilds this shard had that Discord no longer lists were left while
   * we were away. The guilds it does list follow as GUILD_CREATE and are re-listed in full.
   */
  private ready(data: GatewayReadyDispatchData, shardId: number): void {
    const listed = new Set(data.guilds.map((guild) => guild.id));
    this.requests.forgetShard(shardId);
    for (const [nonce, listing] of this.listings) {
      if (listing.shardId === shardId) this.listings.delete(nonce);
    }
    this.unsynced.set(shardId, new Set(listed));
    if (listed.size === 0) this.synced(shardId, undefined);
    for (const [guildId, shard] of this.guildShards) {
      if (shard === shardId && !listed.has(guildId)) {
        this.guildShards.delete(guildId);
        this.options.policy?.guildLeft(guildId);
        this.options.registry.guildRemoved(guildId);
      }
    }
  }

  /**
   * The shard's session is lost: nothing is heard through its guilds until a new session sends them again,
   * so their members seen through no other guild are stale meanwhile.
   */
  sessionLost(shardId: number): void {
    this.options.registry.guildsLost(this.guildsOn(shardId));
  }

  /**
   * The shard has been disconnected too long to be current (`silent`), or has resumed since: Discord
   * replayed what it sent meanwhile, so what is held of its guilds is current again.
   */
  shardSilent(shardId: number, silent: boolean): void {
    const guilds = this.guildsOn(shardId);
    if (silent) this.options.registry.guildsLost(guilds);
    else this.options.registry.guildsResumed(guilds);
  }

  /** An event of a resume's replay that the user's saved presence holds already (see `heldUpTo`). */
  private heldAlready(payload: GatewayDispatchPayload, shardId: number): boolean {
    const users = this.heldUpTo.get(shardId);
    if (!users) return false;
    let userId: Snowflake | undefined;
    switch (payload.t) {
      case GatewayDispatchEvents.PresenceUpdate:
      case GatewayDispatchEvents.GuildMemberAdd:
      case GatewayDispatchEvents.GuildMemberUpdate:
      case GatewayDispatchEvents.GuildMemberRemove:
        userId = payload.d.user.id;
        break;
      case GatewayDispatchEvents.UserUpdate:
        userId = payload.d.id;
        break;
      default:
        return false;
    }
    const upTo = users.get(userId);
    return upTo !== undefined && payload.s <= upTo;
  }

  private guildsOn(shardId: number): Snowflake[] {
    const guilds: Snowflake[] = [];
    for (const [guildId, shard] of this.guildShards) if (shard === shardId) guilds.push(guildId);
    return guilds;
  }

  /**
   * Asks every counted guild for the user's member and presence, in each guild's next batch: they have just
   * become monitored (opted in), and what was dropped of them until now is not known.
   */
  requestUser(userId: Snowflake): void {
    for (const [guildId, shardId] of this.guildShards) {
      if (this.policy?.countsGuild(guildId) !== false) this.requests.requestUsers(shardId, guildId, [userId]);
    }
  }

  /** Whether the member is monitored: everyone is, unless the policy leaves them or their guild out. */
  private admits(guildId: Snowflake, userId: Snowflake, roles?: readonly Snowflake[]): boolean {
    const { policy } = this;
    return policy === null || (policy.countsGuild(guildId) && policy.monitors(userId, { guildId, roles }));
  }

  private guildCreate(data: GatewayGuildCreateDispatchData, shardId: number): void {
    if ((data as { unavailable?: boolean }).unavailable) return;
    this.unavailable.delete(data.id);
    if (this.policy?.countsGuild(data.id) === false) {
      // Not listed, nothing of it kept: it is done with as far as loading goes.
      this.synced(shardId, data.id);
      return;
    }
    const { registry } = this.options;
    this.guildShards.set(data.id, shardId);
    registry.beginGuildSync(data.id);
    this.seeMembers(data.id, data.members ?? [], data.presences ?? []);

    for (const [nonce, listing] of this.listings) {
      if (listing.guildId === data.id) this.listings.delete(nonce);
    }
    const startedAt = this.now();
    const listing: Listing = {
      guildId: data.id,
      shardId,
      expected: data.member_count,
      received: data.members?.length ?? 0,
      startedAt,
      loggedAt: startedAt,
    };
    this.listings.set(this.requests.listGuild(shardId, data.id), listing);
    this.options.logger.info(
      { guildId: data.id, shardId, memberCount: data.member_count, large: data.large },
      'guild available; requesting its members',
    );
  }

  private membersChunk(data: GatewayGuildMembersChunkDispatchData, shardId: number): void {
    this.seeMembers(data.guild_id, data.members, data.presences ?? []);
    const done = data.chunk_index >= data.chunk_count - 1;
    if (data.nonce !== undefined) this.requests.answered(data.nonce, done);
    const listing = data.nonce === undefined ? undefined : this.listings.get(data.nonce);
    if (listing?.guildId !== data.guild_id) return;
    listing.received += data.members.length;
    const now = this.now();
    const seconds = Math.max(now - listing.startedAt, 1) / 1000;
    const perSecond = Math.round(listing.received / seconds);
    if (done) {
      this.listings.delete(data.nonce as string);
      this.options.registry.endGuildSync(data.guild_id);
      // Who the listing did not have left meanwhile: the role they held there counts no more.
      this.options.policy?.keepRoleHoldersIn(data.guild_id, (userId) =>
        this.options.registry.isMemberOf(data.guild_id, userId),
      );
      this.options.logger.info(
        {
          guildId: data.guild_id,
          members: this.options.registry.memberCount(data.guild_id),
          seconds: Math.round(seconds * 10) / 10,
          perSecond,
        },
        'guild members loaded',
      );
      this.synced(shardId, data.guild_id);
    } else if (now - listing.loggedAt >= PROGRESS_LOG_INTERVAL_MS) {
      listing.loggedAt = now;
      this.options.logger.info(
        {
          guildId: data.guild_id,
          loaded: listing.received,
          of: listing.expected,
          chunk: `${data.chunk_index + 1}/${data.chunk_count}`,
          perSecond,
        },
        'loading guild members',
      );
    }
  }

  /**
   * Member listings carry presences only for members who are not offline, so a member listed without
   * one is offline.
   */
  private seeMembers(
    guildId: Snowflake,
    members: ReadonlyArray<{ user?: { id: string }; roles?: readonly Snowflake[] }>,
    presences: ReadonlyArray<PresenceLike>,
  ): void {
    const byUser = new Map<string, RawPresence>();
    for (const presence of presences) {
      const id = presence.user?.id;
      if (typeof id === 'string') byUser.set(id, rawPresenceFrom(presence));
    }
    for (const member of members) {
      if (!member.user || !this.admits(guildId, member.user.id, member.roles)) continue;
      this.options.registry.memberListed(
        guildId,
        member.user,
        byUser.get(member.user.id) ?? OFFLINE_PRESENCE,
      );
    }
  }

  private synced(shardId: number, guildId: Snowflake | undefined): void {
    const waiting = this.unsynced.get(shardId);
    if (!waiting) return;
    if (guildId !== undefined) waiting.delete(guildId);
    if (waiting.size > 0) return;
    this.unsynced.delete(shardId);
    this.options.onShardSynced?.(shardId);
  }

  /** A deferred listing was sent again: its pace is measured from now. */
  private restarted(nonce: string): void {
    const listing = this.listings.get(nonce);
    if (!listing) return;
    listing.startedAt = this.now();
    listing.loggedAt = listing.startedAt;
  }
}
