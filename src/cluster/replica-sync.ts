import type { Logger } from 'pino';
import type { RedisBus } from '../bus/redis.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceReplica, PublishedPresence } from '../presence/replica.js';
import type { RedisPresences } from '../store/redis/presences.js';

export interface ReplicaSyncOptions {
  replica: PresenceReplica;
  presences: Pick<RedisPresences, 'list'>;
  bus: RedisBus;
  logger: Logger;
  /** A full read that failed is tried again after this long; RESYNC_RETRY_MS unless told. */
  retryMs?: number;
}

/** A failed full read leaves the node not ready: it is tried again after this long, until one succeeds. */
export const RESYNC_RETRY_MS = 5_000;

/**
 * Keeps an API node's replica equal to the shared presences: a full read at start-up and after every
 * reconnect to Redis (pub/sub drops what is sent while a node is away), and the published changes in
 * between. Changes that arrive while a full read is running wait for it, then apply by version.
 */
export class ReplicaSync {
  private reading: PublishedPresence[] | null = null;
  private readonly unsubscribers: Array<() => void> = [];
  /** Each waiting write: check → give up. */
  private readonly kvWaiters = new Map<() => void, () => void>();
  private resyncing: Promise<void> = Promise.resolve();
  /** Full reads asked for and not finished. */
  private pendingReads = 0;
  private lastReadSucceeded = false;
  /** Times the bus dropped: a read that saw it drop meanwhile does not make the replica synced. */
  private disconnects = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: ReplicaSyncOptions) {}

  /** Resolves once the replica holds every shared presence. */
  async start(): Promise<void> {
    const { bus, replica } = this.options;
    this.unsubscribers.push(
      bus.subscribe('presence.changed', (published) => {
        if (this.reading) this.reading.push(published);
        else replica.apply(published);
      }),
      bus.onResubscribed(() => void this.resync()),
      // What is published while the bus is away is lost: the replica is behind until the next full read.
      bus.onDisconnected(() => {
        this.disconnects++;
        this.lastReadSucceeded = false;
      }),
      replica.onChange(() => {
        for (const check of [...this.kvWaiters.keys()]) check();
      }),
    );
    await bus.ready();
    await this.resync();
  }

  /** Reads every shared presence again; one read at a time. */
  resync(): Promise<void> {
    this.pendingReads++;
    this.resyncing = this.resyncing.then(() => this.readAll());
    return this.resyncing;
  }

  /**
   * The replica holds every shared presence: the last full read succeeded, no other is waiting, and the
   * bus has not dropped since.
   */
  get synced(): boolean {
    return this.pendingReads === 0 && this.lastReadSucceeded;
  }

  /**
   * Resolves true once a read on this node shows the KV of `revision` (or the user is not monitored, so
   * there is no presence to show it in), false after `timeoutMs`. Only for writes that changed the KV:
   * one that changed nothing publishes nothing to wait for.
   */
  waitForKv(userId: Snowflake, revision: number, timeoutMs: number): Promise<boolean> {
    const { replica } = this.options;
    const shown = (): boolean =>
      replica.get(userId) === undefined || replica.kvRevisionOf(userId) >= revision;
    if (shown()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (ok: boolean): void => {
        clearTimeout(timer);
        this.kvWaiters.delete(check);
        resolve(ok);
      };
      const check = (): void => {
        if (shown()) finish(true);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      this.kvWaiters.set(check, () => finish(false));
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    for (const giveUp of [...this.kvWaiters.values()]) giveUp();
  }

  private async readAll(): Promise<void> {
    const { presences, replica, logger } = this.options;
    this.reading = [];
    const started = Date.now();
    const disconnects = this.disconnects;
    try {
      const listing: PublishedPresence[] = [];
      for await (const published of presences.list()) listing.push(published);
      replica.resync(listing);
      // Dropped meanwhile: what was published since is lost, and the read the reconnect asks for is due.
      this.lastReadSucceeded = this.disconnects === disconnects;
      logger.info({ users: listing.length, ms: Date.now() - started }, 'presences read from Redis');
    } catch (error) {
      this.lastReadSucceeded = false;
      logger.error({ err: error }, 'could not read the shared presences; serving what this node had');
      // Nothing else would ask again until the bus drops: try again, or the node stays not ready.
      if (!this.closed) {
        this.retryTimer ??= setTimeout(() => {
          this.retryTimer = undefined;
          void this.resync();
        }, this.options.retryMs ?? RESYNC_RETRY_MS).unref();
      }
    } finally {
      this.pendingReads--;
      const arrived = this.reading ?? [];
      this.reading = null;
      for (const published of arrived) replica.apply(published);
    }
  }
}
