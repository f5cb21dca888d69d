import { DiscordAPIError, type REST } from '@discordjs/rest';
import { type APIUser, RESTJSONErrorCodes, Routes } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { SnowflakeList } from '../collections/snowflake-list.js';
import { SnowflakeQueue } from '../collections/snowflake-queue.js';
import type { Profile, Snowflake } from '../presence/model.js';
import type { PresenceRegistry } from '../presence/registry/registry.js';
import type { ProfileStore, StoredProfile } from '../store/ports.js';

/** A stored profile younger than this is used as is after a restart instead of being fetched again. */
export const PROFILE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Requests in flight at once. The REST library queues by Discord's rate limits; this keeps a guild of a
 * quarter-million members from becoming a quarter-million pending promises inside it.
 */
export const PROFILE_FETCH_CONCURRENCY = 2;

/**
 * Fetched profiles are written this long after the first of them, all at once: one transaction (one sync
 * to disk) a second, not one per profile at Discord's fifty a second. A crash loses at most this much,
 * which the next start fetches again.
 */
export const PROFILE_WRITE_MS = 1_000;

/** A fetch that failed for a passing reason (network, 5xx) is tried again after this long. */
export const PROFILE_RETRY_MS = 60_000;

/**
 * How often profiles older than PROFILE_TTL_MS are fetched again. Discord tells bots nothing when a user
 * changes their banner or accent colour, so age is the only signal.
 */
export const PROFILE_SWEEP_MS = 10 * 60 * 1000;

/**
 * Fetch times are kept to this precision: users are listed by the minute they were fetched in, so a
 * profile is fetched again between PROFILE_TTL_MS and PROFILE_TTL_MS plus a minute after it was.
 */
export const PROFILE_AGE_STEP_MS = 60 * 1000;

export interface ProfileFetcherOptions {
  rest: REST;
  store: ProfileStore;
  registry: PresenceRegistry;
  logger: Logger;
  now?: () => number;
  sweepMs?: number;
}

/**
 * Banner and accent colour are not in gateway payloads: they come from `GET /users/:id`, once per user,
 * in the background. Reads never wait for it; the presence changes when the profile arrives.
 */
export class ProfileFetcher {
  /** Held in typed arrays: a large guild's members wait here long after they arrive, at Discord's rate limit. */
  private readonly queue = new SnowflakeQueue();
  private readonly retries = new Set<Snowflake>();
  /**
   * Who was fetched when, by the minute (PROFILE_AGE_STEP_MS): what the sweep ages. A list per minute,
   * not a time per user: a map entry per user would outweigh what else is held for them beside their
   * presence. A user fetched again since (USER_UPDATE) stays listed under the old minute too, and is
   * fetched once more when it is due. The lists hold ids in typed arrays (why:
   * docs/architecture.md#per-user-state-off-the-js-heap).
   */
  private readonly fetchedIn = new Map<number, SnowflakeList>();
  private retryTimer: NodeJS.Timeout | undefined;
  /** Fetched, not written yet. */
  private unwritten = new Map<Snowflake, StoredProfile>();
  /** Being written, oldest first: not in the store until their write is committed. */
  private readonly writing: ReadonlyMap<Snowflake, StoredProfile>[] = [];
  private writeTimer: NodeJS.Timeout | undefined;
  private readonly sweepTimer: NodeJS.Timeout;
  private active = 0;
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly options: ProfileFetcherOptions) {
    this.now = options.now ?? Date.now;
    this.sweepTimer = setInterval(() => this.sweep(), options.sweepMs ?? PROFILE_SWEEP_MS);
    this.sweepTimer.unref();
  }

  /**
   * Users started being monitored: use each stored profile when fresh, else fetch it. The stored ones are
   * read in one go.
   */
  async usersMonitored(userIds: readonly Snowflake[]): Promise<void> {
    // Fetched before but not in the store yet: the user left and came back within the second. Taken now,
    // for a write may run while the store is asked, and empty `unwritten`.
    const held = new Map<Snowflake, StoredProfile>();
    const unread: Snowflake[] = [];
    for (const userId of userIds) {
      const unwritten = this.unwritten.get(userId) ?? this.beingWritten(userId);
      if (unwritten) held.set(userId, unwritten);
      else unread.push(userId);
    }
    const read =
      unread.length === 0
        ? new Map<Snowflake, StoredProfile>()
        : await this.options.store.getProfiles(unread);
    for (const userId of userIds) {
      const stored = held.get(userId) ?? read.get(userId);
      const fresh = stored !== undefined && this.now() - stored.fetchedAt <= PROFILE_TTL_MS;
      if (stored) this.options.registry.profileFetched(userId, stored.profile);
      // A stale one is listed by the fetch about to replace it: listed now too, it would be fetched twice.
      if (fresh) this.fetched(userId, stored.fetchedAt);
      else this.enqueue(userId);
    }
  }

  /** Fetches again the profiles of monitored users that are older than PROFILE_TTL_MS. */
  sweep(): void {
    const { registry } = this.options;
    const due = Math.floor((this.now() - PROFILE_TTL_MS) / PROFILE_AGE_STEP_MS);
    // The ids met so far in the list being swept, so a second listing goes; emptied for each list.
    const seen = new SnowflakeQueue();
    for (const [minute, userIds] of this.fetchedIn) {
      if (minute < due) {
        this.fetchedIn.delete(minute);
        for (const userId of userIds) {
          if (registry.isMonitored(userId)) this.enqueue(userId);
        }
        continue;
      }
      // Users who left, and those listed again as they came back (a guild lost and found again lists all
      // its members once more), go now rather than when their minute is due: the lists grow with the
      // users monitored, not with how often they come and go.
      userIds.retain((userId) => registry.isMonitored(userId) && seen.add(userId));
      seen.clear();
      if (userIds.length === 0) this.fetchedIn.delete(minute);
    }
  }

  /** Fetch again, e.g. after USER_UPDATE. */
  enqueue(userId: Snowflake): void {
    if (this.stopped) return;
    this.queue.add(userId);
    this.pump();
  }

  get pending(): number {
    return this.queue.size + this.active;
  }

  /** Stops fetching, and writes what was fetched and not written yet. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.clear();
    this.retries.clear();
    this.fetchedIn.clear();
    clearTimeout(this.retryTimer);
    clearInterval(this.sweepTimer);
    await this.write();
  }

  /** Writes the profiles fetched since the last write. */
  async write(): Promise<void> {
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    const profiles = this.unwritten;
    if (profiles.size === 0) return;
    this.unwritten = new Map();
    this.writing.push(profiles);
    try {
      await this.options.store.putProfiles(profiles);
    } catch (error) {
      this.options.logger.warn(
        { err: error, profiles: profiles.size },
        'could not store user profiles; they are fetched again after a restart',
      );
    } finally {
      this.writing.splice(this.writing.indexOf(profiles), 1);
    }
  }

  /** The user's profile in the newest write still under way. */
  private beingWritten(userId: Snowflake): StoredProfile | undefined {
    for (let i = this.writing.length - 1; i >= 0; i--) {
      const stored = this.writing[i]?.get(userId);
      if (stored) return stored;
    }
    return undefined;
  }

  private retryLater(userId: Snowflake): void {
    this.retries.add(userId);
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = undefined;
      for (const id of this.retries) {
        if (this.options.registry.isMonitored(id)) this.enqueue(id);
      }
      this.retries.clear();
    }, PROFILE_RETRY_MS).unref();
  }

  private pump(): void {
    while (!this.stopped && this.active < PROFILE_FETCH_CONCURRENCY && this.queue.size > 0) {
      const userId = this.queue.shift() as Snowflake;
      this.active++;
      this.fetch(userId).finally(() => {
        this.active--;
        this.pump();
      });
    }
  }

  private async fetch(userId: Snowflake): Promise<void> {
    const { rest, registry, logger } = this.options;
    let profile: Profile;
    try {
      const user = (await rest.get(Routes.user(userId))) as APIUser;
      profile = { banner: user.banner ?? null, accent_color: user.accent_color ?? null };
    } catch (error) {
      if (error instanceof DiscordAPIError && error.code === RESTJSONErrorCodes.UnknownUser) {
        profile = { banner: null, accent_color: null };
      } else {
        logger.warn({ err: error, userId }, 'could not fetch the user profile; retrying later');
        this.retryLater(userId);
        return;
      }
    }
    if (this.stopped || !registry.isMonitored(userId)) return;
    registry.profileFetched(userId, profile);
    const fetchedAt = this.now();
    this.fetched(userId, fetchedAt);
    this.unwritten.set(userId, { profile, fetchedAt });
    this.writeTimer ??= setTimeout(() => void this.write(), PROFILE_WRITE_MS).unref();
  }

  private fetched(userId: Snowflake, at: number): void {
    const minute = Math.floor(at / PROFILE_AGE_STEP_MS);
    let listed = this.fetchedIn.get(minute);
    if (!listed) {
      listed = new SnowflakeList();
      this.fetchedIn.set(minute, listed);
    }
    listed.push(userId);
  }
}
