import type { Logger } from 'pino';
import type { Snowflake } from '../presence/model.js';
import type { PresenceChange, PresenceRegistry } from '../presence/registry.js';
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

  constructor(private readonly options: MonitoredLoaderOptions) {}

  /** The registry's listener. */
  readonly observe = (change: PresenceChange): void => {
    if (change.kind !== 'monitored') return;
    this.waiting.add(change.userId);
  };

  private load(userIds: Snowflake[]): void {
    const { registry, profiles, kv, logger } = this.options;
    profiles.usersMonitored(userIds).catch((error: unknown) => {
      logger.warn({ err: error, users: userIds.length }, 'could not load the stored profiles');
    });
    kv.getKvs(userIds)
      .then((states) => {
        for (const [userId, state] of states) registry.kvChanged(userId, state.kv, state.revision);
      })
      .catch((error: unknown) =>
        logger.error({ err: error, users: userIds.length }, 'could not load the stored KV'),
      );
  }
}
