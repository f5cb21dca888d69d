import { timerDelay } from '../ops/timer-delay.js';
import type { Snowflake } from '../presence/model.js';
import { isPaused, type PrivacySettings, withDefaults } from '../presence/privacy.js';
import type { PrivacyStore } from '../store/ports.js';

/** The longest a timer may be set for (setTimeout's own bound); a later pause end is waited for in steps. */
/** A user's settings that could not be read are read again after this, doubling up to the most. */
export const PRIVACY_RETRY_MS = 1_000;
export const PRIVACY_RETRY_MAX_MS = 60_000;

export interface PrivacyDirectoryOptions {
  now?: () => number;
}

/**
 * This node's view of every user's privacy settings: each presence rendered and each read asks it, so it
 * is a map in memory of the users who set any, read from the store when the node starts and read again
 * for a user whenever theirs change (on any node: `privacy.changed` on the bus). Its listeners hear of
 * each user whose settings changed, and of each whose pause ended, so that what is shown follows at once.
 */
export class PrivacyDirectory {
  private byUser = new Map<Snowflake, PrivacySettings>();
  /** Re-reads of a user, one after another, so the last one to finish read the newest state. */
  private readonly reading = new Map<Snowflake, Promise<void>>();
  private readonly listeners = new Set<(userId: Snowflake) => void>();
  private readonly now: () => number;
  private pauseTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Users whose settings failed to be read, and the wait before the next try. */
  private readonly retrying = new Map<Snowflake, { timer: NodeJS.Timeout; waitMs: number }>();
  /** While `load` reads everyone: the users read again meanwhile, whose newer settings `load` must keep. */
  private refreshedDuringLoad: Set<Snowflake> | null = null;

  constructor(
    private readonly store: PrivacyStore,
    options: PrivacyDirectoryOptions = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Every user's settings, as the store has them now. Read again (after the bus was out of reach), each
   * user whose settings differ from those held is told of.
   */
  async load(): Promise<void> {
    const refreshed = new Set<Snowflake>();
    this.refreshedDuringLoad = refreshed;
    const byUser = new Map<Snowflake, PrivacySettings>();
    try {
      for (const [userId, stored] of await this.store.allPrivacy()) byUser.set(userId, withDefaults(stored));
    } finally {
      if (this.refreshedDuringLoad === refreshed) this.refreshedDuringLoad = null;
    }
    const previous = this.byUser;
    // A user read again while everyone was being read: that read is the newer.
    for (const userId of refreshed) {
      const settings = previous.get(userId);
      if (settings === undefined) byUser.delete(userId);
      else byUser.set(userId, settings);
    }
    this.byUser = byUser;
    this.schedulePauseEnds();
    for (const userId of new Set([...previous.keys(), ...byUser.keys()])) {
      if (JSON.stringify(previous.get(userId)) !== JSON.stringify(byUser.get(userId))) this.tell(userId);
    }
  }

  /** Re-reads the user's settings; resolves once this node applies what the store held when it was called. */
  refresh(userId: Snowflake): Promise<void> {
    // A read that failed before does not stop this one: it reads the newest settings anyway.
    const previous = (this.reading.get(userId) ?? Promise.resolve()).catch(() => undefined);
    const next = previous.then(async () => {
      let stored: Awaited<ReturnType<PrivacyStore['getPrivacy']>>;
      try {
        stored = await this.store.getPrivacy(userId);
      } catch (error) {
        this.retryLater(userId);
        throw error;
      }
      this.stopRetrying(userId);
      this.refreshedDuringLoad?.add(userId);
      if (stored === undefined) this.byUser.delete(userId);
      else this.byUser.set(userId, withDefaults(stored));
      this.schedulePauseEnds();
      this.tell(userId);
    });
    this.reading.set(userId, next);
    const forget = () => {
      if (this.reading.get(userId) === next) this.reading.delete(userId);
    };
    next.then(forget, forget);
    return next;
  }

  /** The user's settings; undefined for one who set none, whom the defaults apply to. */
  of(userId: Snowflake): PrivacySettings | undefined {
    return this.byUser.get(userId);
  }

  /** Users who set anything. */
  get size(): number {
    return this.byUser.size;
  }

  /** Every user who set anything, with their settings. */
  entries(): IterableIterator<[Snowflake, PrivacySettings]> {
    return this.byUser.entries();
  }

  /** Hears of each user whose settings, or what they show at this moment (a pause ended), changed. */
  onChange(listener: (userId: Snowflake) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    this.pauseTimer = null;
    for (const { timer } of this.retrying.values()) clearTimeout(timer);
    this.retrying.clear();
  }

  /**
   * A change this node was told of and could not read is read again, until it is: what a user hid must
   * not stay shown here because the store did not answer once.
   */
  private retryLater(userId: Snowflake): void {
    if (this.closed) return;
    const waitMs = Math.min(
      (this.retrying.get(userId)?.waitMs ?? PRIVACY_RETRY_MS / 2) * 2,
      PRIVACY_RETRY_MAX_MS,
    );
    this.stopRetrying(userId);
    const timer = setTimeout(() => {
      this.refresh(userId).catch(() => undefined);
    }, waitMs);
    timer.unref();
    this.retrying.set(userId, { timer, waitMs });
  }

  private stopRetrying(userId: Snowflake): void {
    const retry = this.retrying.get(userId);
    if (retry) clearTimeout(retry.timer);
    this.retrying.delete(userId);
  }

  private tell(userId: Snowflake): void {
    for (const listener of this.listeners) listener(userId);
  }

  /** One timer, for the pause that ends first; when it fires, everyone whose pause has ended is told. */
  private schedulePauseEnds(): void {
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    this.pauseTimer = null;
    if (this.closed) return;
    const now = this.now();
    let first = Number.POSITIVE_INFINITY;
    for (const settings of this.byUser.values()) {
      if (isPaused(settings, now)) first = Math.min(first, settings.paused_until as number);
    }
    if (first === Number.POSITIVE_INFINITY) return;
    this.pauseTimer = setTimeout(() => this.pausesEnded(now), timerDelay(first - now));
    this.pauseTimer.unref();
  }

  /** Tells of every pause in force at `since` that has ended now. */
  private pausesEnded(since: number): void {
    const now = this.now();
    for (const [userId, settings] of this.byUser) {
      if (isPaused(settings, since) && !isPaused(settings, now)) this.tell(userId);
    }
    this.schedulePauseEnds();
  }
}
