import type { Logger } from 'pino';
import type { BusMessages } from '../bus/ports.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceChange, PresenceRegistry } from '../presence/registry/registry.js';
import type { KvStore } from '../store/ports.js';
import { TurnBatch } from '../store/turn-batch.js';
import type { ProfileFetcher } from './profiles.js';

/** Users whose stored state is read in one go, at most. */
export const MONITORED_LOAD_BATCH = 1_000;

export interface MonitoredLoaderOptions {
  registry: PresenceRegistry;
  profiles: Pick<ProfileFetcher, 'usersMonitored'>;
  kv: KvStore;
  logger: Logger;
}

/**
 * What is stored for a user who starts being monitored — their profile and their KV, which outlives
 * monitoring so a returning user gets theirs back — read for everyone who started in the same turn at
 * once. A member chunk brings a thousand users in one turn, and a look-up each (two for KV) took a third
 * of start-up's CPU; read together, they take a query each.
 */
export class MonitoredLoader {
  private readonly waiting = new TurnBatch<Snowflake>((userIds) => this.load(userIds), MONITORED_LOAD_BATCH);
  private readonly kvReloads = new TurnBatch<Snowflake>(
    (userIds) => this.loadKvs(userIds),
    MONITORED_LOAD_BATCH,
  );

  constructor(private readonly options: MonitoredLoaderOptions) {}

  /** The registry's listener. A pending member was read for as they came (`pending`), not again now. */
  readonly observe = (change: PresenceChange): void => {
    if (change.kind !== 'monitored' || change.wasPending) return;
    this.waiting.add(change.userId);
  };

  /** The registry's listener of pending members: read for as they come, before they are rendered. */
  readonly pending = (userId: Snowflake): void => {
    this.waiting.add(userId);
  };

  /** An accepted KV write announced on the bus: applied, or (a change missed) the KV read again. */
  readonly kvChanged = (change: BusMessages['kv.changed']): void => {
    if (change.whole) {
      // Taken at once: read again from the store, it could come after other news of the user.
      this.options.registry.kvLoaded(change.userId, Object.fromEntries(change.set), change.revision);
      return;
    }
    if (!this.options.registry.kvChanged(change.userId, change, change.revision))
      this.kvReloads.add(change.userId);
  };

  private load(userIds: Snowflake[]): void {
    const { profiles, logger } = this.options;
    profiles.usersMonitored(userIds).catch((error: unknown) => {
      logger.warn({ err: error, users: userIds.length }, 'could not load the stored profiles');
    });
    this.loadKvs(userIds);
  }

  private loadKvs(userIds: Snowflake[]): void {
    const { registry, kv, logger } = this.options;
    kv.getKvs(userIds)
      .then((states) => {
        for (const [userId, state] of states) registry.kvLoaded(userId, state.kv, state.revision);
      })
      .catch((error: unknown) =>
        logger.error({ err: error, users: userIds.length }, 'could not load the stored KV'),
      );
  }
}
