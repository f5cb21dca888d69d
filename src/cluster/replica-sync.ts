import type { Logger } from 'pino';
import type { RedisBus } from '../bus/redis.js';
import type { Snowflake } from '../presence/model.js';
import { type PresenceReplica, type PublishedPresence, withKv } from '../presence/registry/replica.js';
import type { RedisPresences } from '../store/redis/presences.js';

export interface ReplicaSyncOptions {
  replica: PresenceReplica;
  presences: Pick<RedisPresences, 'list' | 'kvJsons' | 'read'>;
  bus: RedisBus;
  logger: Logger;
  /** A full read that failed is tried again after this long; RESYNC_RETRY_MS unless told. */
  retryMs?: number;
}

/** A failed full read leaves the node not ready: it is tried again after this long, until one succeeds. */
export const RESYNC_RETRY_MS = 5_000;

/** KVs held apart read in one round trip by a full read: each may be as large as the KV limit allows. */
const KV_READ_BATCH = 16;
/** A full read reads a user again at most this often when their KV keeps changing under it. */
const KV_READ_ROUNDS = 5;

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
  /** Users whose publications wait for a KV read apart: the next ones wait behind it, in order. */
  private readonly arriving = new Map<Snowflake, Promise<void>>();

  constructor(private readonly options: ReplicaSyncOptions) {}

  /** Resolves once the replica holds every shared presence. */
  async start(): Promise<void> {
    const { bus, replica } = this.options;
    this.unsubscribers.push(
      bus.subscribe('presence.changed', (published) => {
        if (this.reading) this.reading.push(published);
        else this.receive(published);
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
      replica.resync(await this.withKvs(listing));
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
      for (const published of arrived) this.receive(published);
    }
  }

  /**
   * Applies a publication, once its KV is back in if it travelled apart: the KV held already when it is
   * that one, else read once from Redis. A user's later publications wait behind a read.
   */
  private receive(published: PublishedPresence): void {
    const { replica, logger } = this.options;
    const { userId } = published;
    const before = this.arriving.get(userId);
    const whole = before ? undefined : this.wholeFromHeld(published);
    if (whole) {
      replica.apply(whole);
      return;
    }
    const applied = (before ?? Promise.resolve())
      .then(async () => {
        // Stale already (a replay, or overtaken): not worth reading its KV for.
        if (published.json !== null && published.version <= replica.versionOf(userId)) return;
        const [read] = await this.withKvs([published], false);
        if (read) replica.apply(read);
      })
      .catch((error: unknown) => {
        logger.warn(
          { err: error, userId },
          'could not read a KV published apart; reading every presence again',
        );
        void this.resync();
      })
      .finally(() => {
        if (this.arriving.get(userId) === applied) this.arriving.delete(userId);
      });
    this.arriving.set(userId, applied);
  }

  /** The publication as the replica takes it, when nothing needs reading for it; undefined otherwise. */
  private wholeFromHeld(published: PublishedPresence): PublishedPresence | undefined {
    if (published.json === null || published.kvTag === undefined) return published;
    const kvJson = this.options.replica.kvJsonOf(published.userId, published.kvTag);
    return kvJson === undefined ? undefined : withKv(published, kvJson);
  }

  /**
   * The publications with their KVs back in, those held apart read in batches. A KV replaced since its
   * publication was read is no longer there: a full read reads that user again, a single publication is
   * left out (the one that replaced it follows).
   */
  private async withKvs(listing: PublishedPresence[], again = true): Promise<PublishedPresence[]> {
    const { presences } = this.options;
    const whole: PublishedPresence[] = [];
    let pending = listing;
    for (let round = 0; pending.length > 0; round++) {
      if (round === KV_READ_ROUNDS) throw new Error('KVs kept changing while they were read');
      const missing: PublishedPresence[] = [];
      for (const published of pending) {
        const held = this.wholeFromHeld(published);
        if (held) whole.push(held);
        else missing.push(published);
      }
      pending = [];
      for (let i = 0; i < missing.length; i += KV_READ_BATCH) {
        const batch = missing.slice(i, i + KV_READ_BATCH);
        const kvJsons = await presences.kvJsons(batch.map((p) => [p.userId, p.kvTag as string] as const));
        for (const [index, published] of batch.entries()) {
          const kvJson = kvJsons[index];
          if (kvJson !== null && kvJson !== undefined) whole.push(withKv(published, kvJson));
          else if (again) {
            const current = await presences.read(published.userId);
            if (current) pending.push(current);
          }
        }
      }
    }
    return whole;
  }
}
