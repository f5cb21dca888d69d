import type { Logger } from 'pino';
import type { PresenceSource } from '../presence/registry/registry.js';

/** Discord reviews the privileged intents of an app that more unique users than this can see. */
export const DISCORD_REVIEW_USERS = 10_000;

/** Counts of unique users at which the log warns: ahead of Discord's review, and at it. */
export const UNIQUE_USER_WARNINGS: readonly number[] = [8_000, DISCORD_REVIEW_USERS];

/**
 * A threshold warns again only once the count has fallen below this share of it: a count that hovers at a
 * threshold, members joining and leaving, warns once rather than at every step across it.
 */
export const REARM_SHARE = 0.95;

export const REVIEW_NOTICE =
  'Discord reviews the privileged intents of apps that reach more than 10,000 unique users, every year: see docs/deployment.md';

/**
 * The unique users the bot can see (`presently_unique_users`), read from a count the app gives, and a
 * warning in the log each time the count reaches a threshold.
 */
export class UniqueUsers {
  /** Thresholds warned of and not re-armed since. */
  private readonly warned = new Set<number>();

  constructor(
    private readonly count: () => number,
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly thresholds: readonly number[] = UNIQUE_USER_WARNINGS,
  ) {}

  /** The count now; warns once of each threshold it has reached since it was last well below it. */
  read(): number {
    const users = this.count();
    for (const threshold of this.thresholds) {
      if (users >= threshold) {
        if (this.warned.has(threshold)) continue;
        this.warned.add(threshold);
        this.logger.warn(
          { uniqueUsers: users, threshold },
          `presently_unique_users reached ${threshold.toLocaleString('en')}: ${REVIEW_NOTICE}`,
        );
      } else if (users < threshold * REARM_SHARE) {
        this.warned.delete(threshold);
      }
    }
    return users;
  }
}

/**
 * The unique users of `source`: the registry on a node that runs the whole gateway, the replica of the
 * shared presences on one that has it (each user once, whichever ingest node sees them). Read whenever
 * it gains or loses a user, so the warnings come without a scrape, and by each scrape.
 */
export function watchUniqueUsers(
  source: Pick<PresenceSource, 'size' | 'onChange'>,
  logger: Pick<Logger, 'warn'>,
): UniqueUsers {
  const users = new UniqueUsers(() => source.size, logger);
  source.onChange((change) => {
    if (change.kind !== 'updated') users.read();
  });
  return users;
}
