import type { Logger } from 'pino';
import type { RedisBus } from '../bus/redis.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceChange, PresenceListener, PresenceRegistry } from '../presence/registry.js';
import type { RedisPresences } from '../store/redis/presences.js';

export interface PublisherOptions {
  registry: PresenceRegistry;
  presences: RedisPresences;
  bus: RedisBus;
  /** This ingest node's number: its lowest shard id. */
  node: number;
  logger: Logger;
}

/**
 * An ingest node's side of the shared presences: what this node's registry sees goes to Redis, where the
 * node that owns a user publishes it to every API node. Listeners here hear only the changes this node
 * published, so history records each real change once across the cluster.
 */
export class SharedPresencePublisher {
  private readonly listeners = new Set<PresenceListener>();
  private readonly unsubscribers: Array<() => void> = [];
  /** Writes in flight, so shutdown and tests can wait for Redis to have them. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Until this node's guilds are all loaded, a user it does not see yet may simply not be listed yet. */
  private synced = false;

  constructor(private readonly options: PublisherOptions) {}

  start(): void {
    const { registry, bus, node } = this.options;
    this.unsubscribers.push(
      registry.onChange((change) => this.forward(change)),
      bus.subscribe('presence.handover', (handover) => {
        if (handover.node === node) this.republish(handover.userId);
      }),
      // Writes that failed while Redis was away are replayed from what this node sees now.
      bus.onResubscribed(() => void this.resync()),
    );
  }

  /** The changes this node published: one per real change, whichever node saw it first. */
  onPublished(listener: PresenceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every guild of this node's shards is loaded: users Redis still has for it and it lacks are gone. */
  markSynced(): Promise<void> {
    this.synced = true;
    return this.resync();
  }

  /**
   * Makes Redis agree with this node: every user it sees is put again, and users Redis has down for this
   * node that it no longer sees (they left while the node was down or cut off) are left.
   */
  async resync(): Promise<void> {
    const { registry, presences, node, logger } = this.options;
    try {
      const stale = this.synced
        ? (await presences.usersOf(node)).filter((userId) => !registry.isMonitored(userId))
        : [];
      for (const userId of stale) this.track(this.leave(userId, undefined));
      for (const [userId] of registry.snapshots()) this.republish(userId);
      await this.settled();
      logger.info({ node, users: registry.size, left: stale.length }, 'shared presences in step with Redis');
    } catch (error) {
      logger.error({ err: error, node }, 'could not bring the shared presences in step with Redis');
    }
  }

  /** Resolves once every write sent so far has been answered. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  async close(): Promise<void> {
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    await this.settled();
    this.listeners.clear();
  }

  private forward(change: PresenceChange): void {
    if (change.kind === 'unmonitored') {
      this.track(this.leave(change.userId, change));
      return;
    }
    this.track(this.put(change));
  }

  private republish(userId: Snowflake): void {
    const current = this.options.registry.get(userId);
    if (current) this.track(this.put({ kind: 'monitored', userId, current }));
  }

  private async put(change: Exclude<PresenceChange, { kind: 'unmonitored' }>): Promise<void> {
    const { presences, registry, node } = this.options;
    const version = await presences.put(
      node,
      change.userId,
      change.current.json,
      registry.kvRevisionOf(change.userId),
    );
    if (version > 0) this.emit(change);
  }

  private async leave(userId: Snowflake, change: PresenceChange | undefined): Promise<void> {
    const outcome = await this.options.presences.leave(this.options.node, userId);
    if (outcome === 'unmonitored' && change) this.emit(change);
  }

  private track(write: Promise<void>): void {
    const tracked = write.catch((error: unknown) => {
      this.options.logger.warn(
        { err: error },
        'could not write a shared presence; resyncing when Redis is back',
      );
    });
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }

  private emit(change: PresenceChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (error) {
        this.options.logger.error({ err: error, userId: change.userId }, 'a presence listener failed');
      }
    }
  }
}
