import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { RedisBus } from '../bus/redis.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceChange, PresenceListener, PresenceRegistry } from '../presence/registry/registry.js';
import type { KvStore } from '../store/ports.js';
import { NOT_OWNER, type RedisPresences } from '../store/redis/presences.js';

/** Users whose KV is re-read at once when catching up after an outage. */
const KV_RELOAD_BATCH = 500;

/** A node that has not renewed its liveness for this long is taken for dead: it owns no user any more. */
export const NODE_TTL_MS = 15_000;
/** How often each ingest node looks for dead ones and leaves their users in their place. */
export const DEAD_NODE_SWEEP_MS = 10_000;
/**
 * A node shut down to be restarted (its gateway sessions kept to be resumed) stays alive to the others
 * this long: its users are not handed over while it restarts, and are if it does not come back.
 */
export const RESTART_HOLD_MS = 60_000;

export interface PublisherOptions {
  registry: PresenceRegistry;
  presences: RedisPresences;
  /** KV changes announced while this node could not hear them are read back from here. */
  kv: KvStore;
  bus: RedisBus;
  /** This ingest node's number: its lowest shard id. */
  node: number;
  logger: Logger;
  /** Tests shorten these. */
  liveness?: { ttlMs?: number; sweepMs?: number };
}

/**
 * An ingest node's side of the shared presences: what this node's registry sees goes to Redis, where the
 * node that owns a user publishes it to every API node. Listeners here hear only the changes this node
 * published, so history records each real change once across the cluster.
 */
export class SharedPresencePublisher {
  private readonly listeners = new Set<PresenceListener>();
  private readonly releasedListeners = new Set<(userId: Snowflake) => void>();
  private readonly unsubscribers: Array<() => void> = [];
  /** Writes in flight, so shutdown and tests can wait for Redis to have them. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Until this node's guilds are all loaded, a user it does not see yet may simply not be listed yet. */
  private synced = false;
  /** Tells this process from an earlier or a misconfigured twin holding the same node number. */
  private readonly instance = randomUUID();
  private readonly ttlMs: number;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Shut down to be restarted: see RESTART_HOLD_MS. */
  private restarting = false;

  constructor(private readonly options: PublisherOptions) {
    this.ttlMs = options.liveness?.ttlMs ?? NODE_TTL_MS;
  }

  /**
   * Claims this node's number (waiting out a crashed predecessor's liveness; refusing a live twin), then
   * follows the registry. Resolves once this node may publish.
   */
  async start(): Promise<void> {
    const { registry, bus, node, logger } = this.options;
    await this.claim();
    this.timers.push(
      setInterval(() => void this.renew(), this.ttlMs / 3).unref(),
      setInterval(
        () => void this.sweepDeadNodes(),
        this.options.liveness?.sweepMs ?? DEAD_NODE_SWEEP_MS,
      ).unref(),
    );
    logger.info({ node }, 'ingest node registered in Redis');
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

  /** Users another node publishes now: what this node recorded of them is no longer current. */
  onReleased(listener: (userId: Snowflake) => void): () => void {
    this.releasedListeners.add(listener);
    return () => this.releasedListeners.delete(listener);
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
      await this.reloadKv();
      // A pending member is published as it is rendered and announced, not all at once here.
      for (const userId of registry.userIds()) if (!registry.isPending(userId)) this.republish(userId);
      await this.settled();
      logger.info({ node, users: registry.size, left: stale.length }, 'shared presences in step with Redis');
    } catch (error) {
      logger.error({ err: error, node }, 'could not bring the shared presences in step with Redis');
    }
  }

  /** The registry's KV as stored now: kv.changed messages sent while the bus was away never arrived. */
  private async reloadKv(): Promise<void> {
    const { registry, kv } = this.options;
    const users = [...registry.userIds()];
    for (let i = 0; i < users.length; i += KV_RELOAD_BATCH) {
      const batch = users.slice(i, i + KV_RELOAD_BATCH);
      for (const [userId, state] of await kv.getKvs(batch))
        registry.kvLoaded(userId, state.kv, state.revision);
    }
  }

  /** Resolves once every write sent so far has been answered. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Leaves, in place of nodes whose liveness expired, the users they saw; live nodes take over. */
  async sweepDeadNodes(): Promise<void> {
    const { presences, node, logger } = this.options;
    try {
      for (const dead of await presences.deadNodes()) {
        if (dead === node) continue;
        const users = await presences.usersOf(dead);
        for (const userId of users) await presences.leave(dead, userId);
        await presences.forgetNode(dead);
        logger.warn({ node: dead, users: users.length }, 'ingest node gone; its users were handed over');
      }
    } catch (error) {
      logger.warn({ err: error }, 'could not look for dead ingest nodes');
    }
  }

  /** The node is shut down to be restarted: `close` keeps it alive for RESTART_HOLD_MS. */
  willRestart(): void {
    this.restarting = true;
  }

  async close(): Promise<void> {
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await this.settled();
    this.listeners.clear();
    this.releasedListeners.clear();
    await this.options.presences
      .release(this.options.node, this.instance, this.restarting ? RESTART_HOLD_MS : 0)
      .catch(() => undefined);
  }

  private async claim(): Promise<void> {
    const { presences, node, logger } = this.options;
    const deadline = Date.now() + this.ttlMs + 1_000;
    while (!(await presences.claim(node, this.instance, this.ttlMs))) {
      if (Date.now() > deadline) {
        throw new Error(
          `ingest node ${node} is run by another live process: give each ingest node its own SHARD_IDS`,
        );
      }
      logger.warn({ node }, 'ingest node number held by another process; waiting for it to expire');
      await sleep(1_000);
    }
  }

  private async renew(): Promise<void> {
    const { presences, node, logger } = this.options;
    try {
      if (!(await presences.claim(node, this.instance, this.ttlMs))) {
        logger.error({ node }, 'another process took over this ingest node number; check SHARD_IDS');
      }
    } catch (error) {
      logger.warn({ err: error, node }, 'could not renew this ingest node in Redis');
    }
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
    if (current) this.track(this.put({ kind: 'monitored', userId, current, at: Date.now() }));
  }

  private async put(change: Exclude<PresenceChange, { kind: 'unmonitored' }>): Promise<void> {
    const { presences, registry, node } = this.options;
    const version = await presences.put(
      node,
      change.userId,
      change.current,
      registry.kvRevisionOf(change.userId),
      change.at,
    );
    if (version > 0) this.emit(change);
    else if (version === NOT_OWNER) this.released(change.userId);
  }

  private async leave(userId: Snowflake, change: PresenceChange | undefined): Promise<void> {
    const outcome = await this.options.presences.leave(this.options.node, userId, change?.at);
    if (outcome === 'unmonitored' && change) this.emit(change);
    else this.released(userId);
  }

  private released(userId: Snowflake): void {
    for (const listener of this.releasedListeners) listener(userId);
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
