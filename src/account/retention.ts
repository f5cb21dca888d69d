import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Snowflake } from '../presence/model.js';
import type { PresenceChange, PresenceRegistry } from '../presence/registry/registry.js';
import type { RetentionStore } from '../store/ports.js';
import type { AccountService } from './service.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** Users one store call carries: moments written, users due read, data holders adopted. */
export const RETENTION_BATCH = 1_000;

/** When the sweep does what, in ms. */
export interface RetentionTiming {
  /** How long a user gone from every monitored guild keeps their data: RETENTION_DAYS. */
  retentionMs: number;
  /** How often the moment of every user this node monitors is written again, and data holders adopted. */
  refreshMs: number;
  /** How often users due are erased. */
  sweepMs: number;
  /** A sweep erases no one gone for less than this, whatever the retention. */
  minimumAgeMs: number;
  /** Whether the first sweep comes as soon as every guild is listed, or a `sweepMs` later. */
  sweepAtStart: boolean;
  /** How long moments heard wait, to be written with the others of that while. */
  flushMs: number;
}

/**
 * The timing for RETENTION_DAYS. Alone, a node sees every monitored user; in scale-out (`clustered`) a
 * node tells a user monitored on another node by the moment that node refreshes and by the shared
 * presences, so it waits for the other nodes started with it to have listed and refreshed, and it never
 * takes a moment younger than a day for a user gone.
 */
export function retentionTiming(retentionDays: number, clustered: boolean): RetentionTiming {
  const retentionMs = retentionDays * DAY_MS;
  return {
    retentionMs,
    // Well below the retention (or the day of scale-out): a monitored user's moment is never that old.
    refreshMs: retentionMs >= 4 * DAY_MS ? DAY_MS : 6 * HOUR_MS,
    sweepMs: HOUR_MS,
    minimumAgeMs: clustered ? DAY_MS : 0,
    sweepAtStart: !clustered,
    flushMs: 1_000,
  };
}

/** What tests change: the clock and the timing. */
export interface RetentionOverrides {
  now?: () => number;
  timing?: Partial<RetentionTiming>;
}

export interface RetentionSweepOptions extends RetentionOverrides {
  store: RetentionStore;
  /** Who this node monitors now. */
  registry: Pick<PresenceRegistry, 'isMonitored' | 'userIds'>;
  /** The erasure of everything kept about a user, announced to every node. */
  account: Pick<AccountService, 'erase'>;
  retentionDays: number;
  /** Scale-out: this node sees only its shards; absent, it sees every monitored guild. */
  clustered?: {
    /** Whether any ingest node monitors the user now (the shared presences). */
    monitored(userId: Snowflake): Promise<boolean>;
  };
  logger: Logger;
  onErased?(users: number): void;
  /**
   * Whether a guild this node monitors is unavailable now (a Discord outage): its members look gone and
   * are not, so nobody is erased until it is back; their moments stay for the sweep after.
   */
  outage?: () => boolean;
}

/**
 * Retention: what is kept of a user who is in no monitored guild any more (KV, key, read tokens, webhooks,
 * settings, profile, history) is erased once they have been gone for RETENTION_DAYS, unless they came back.
 *
 * The store keeps each user's last moment in a monitored guild. This node writes it as users become
 * monitored and as they leave (in scale-out, as the cluster hears it: the changes this node published),
 * and again for every user it monitors once per `refreshMs`, so a user monitored for months never looks
 * gone; users with data and no moment (they left while no node could see it) are given one. Every
 * `sweepMs` it erases the users whose moment is older than the retention and whom no node monitors, the
 * longest gone first, through AccountService (so every node drops what it holds of them), then drops
 * their moments. With a retention of 0, a user is erased as soon as their leave is heard.
 *
 * Two nodes sweeping at once may erase a user twice: the second erasure finds nothing, and is announced
 * again to no harm. No lock is taken.
 */
export class RetentionSweep {
  readonly timing: RetentionTiming;
  private readonly now: () => number;
  /** Moments heard and not written yet. */
  private pending = new Map<Snowflake, number>();
  /** With a retention of 0: users whose leave was heard, by its moment, erased once it is written. */
  private leaving = new Map<Snowflake, number>();
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly timers: NodeJS.Timeout[] = [];
  /** The refreshes and sweeps, one at a time. */
  private work: Promise<void> = Promise.resolve();
  private readonly queued = new Set<string>();
  /**
   * Every guild has been listed (or a refresh walked the registry): users becoming monitored are written
   * as they come, and with a retention of 0 a user who leaves is erased at once. Before, the first refresh
   * writes the users being listed, and a leave may be from one guild of a user listed in another later.
   */
  private known = false;
  private closed = false;

  constructor(private readonly options: RetentionSweepOptions) {
    this.now = options.now ?? Date.now;
    this.timing = {
      ...retentionTiming(options.retentionDays, options.clustered !== undefined),
      ...options.timing,
    };
  }

  /** Every change of the registry alone; in scale-out, those this node published. */
  readonly observe = (change: PresenceChange): void => {
    if (this.closed || change.kind === 'updated') return;
    if (change.kind === 'monitored') {
      this.leaving.delete(change.userId);
      // A pending member is in the registry from their listing on, which the refreshes walk; a sweep finds
      // them monitored anyway. A listing brings users by the million.
      if (!this.known || change.wasPending) return;
    } else if (this.timing.retentionMs === 0 && this.known) {
      this.leaving.set(change.userId, change.at);
    }
    this.note(change.userId, change.at);
    this.flushTimer ??= setTimeout(() => void this.flush(), this.timing.flushMs).unref();
  };

  /** Refreshes and sweeps from the moment every guild has been listed: every user seen is known then. */
  start(firstListed: Promise<void>): void {
    void firstListed.then(() => {
      if (this.closed) return;
      this.known = true;
      const refresh = () => this.enqueue('refresh', () => this.refreshAndAdopt());
      const sweep = () => this.enqueue('sweep', () => this.sweep());
      refresh();
      if (this.timing.sweepAtStart) sweep();
      this.timers.push(
        setInterval(refresh, this.timing.refreshMs).unref(),
        setInterval(sweep, this.timing.sweepMs).unref(),
      );
    });
  }

  /**
   * Writes the moments heard so far; with a retention of 0, then erases the users who left. Resolves once
   * done (a failure is logged, and what was not written is tried again).
   */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.writePending());
    this.flushing = run.catch(() => undefined);
    return run;
  }

  /** Writes now as the moment of every user this node monitors. Answers how many. */
  async refresh(): Promise<number> {
    this.known = true;
    const at = this.now();
    let batch = new Map<Snowflake, number>();
    let written = 0;
    // The registry's ids are read as the batches go: a million users are no array of a million here.
    for (const userId of this.options.registry.userIds()) {
      if (this.closed) return written;
      batch.set(userId, at);
      if (batch.size < RETENTION_BATCH) continue;
      await this.options.store.seen(batch);
      written += batch.size;
      batch = new Map();
      await nextTurn();
    }
    await this.options.store.seen(batch);
    written += batch.size;
    this.options.logger.debug({ users: written }, 'retention: moments of the monitored users written');
    return written;
  }

  /** One pass over the users with data, giving those without a moment now as theirs. Answers how many. */
  async adopt(): Promise<number> {
    const at = this.now();
    let adopted = 0;
    while (!this.closed) {
      const step = await this.options.store.adoptUnseen(at, RETENTION_BATCH);
      adopted += step.adopted;
      if (step.passEnded) break;
      await nextTurn();
    }
    if (adopted > 0) {
      this.options.logger.info({ users: adopted }, 'retention: users with data and no moment given one');
    }
    return adopted;
  }

  /**
   * Erases every user gone for longer than the retention whom no node monitors now, the longest gone
   * first; a user still monitored is given now as their moment. Answers the counts, logged at info.
   */
  async sweep(): Promise<{ erased: number; monitored: number }> {
    const started = performance.now();
    const now = this.now();
    const before = now - Math.max(this.timing.retentionMs, this.timing.minimumAgeMs);
    const counts = { erased: 0, monitored: 0 };
    try {
      while (!this.closed) {
        const due = await this.options.store.due(before, RETENTION_BATCH);
        const erased = await this.eraseGone(due, now, () => before);
        counts.erased += erased.erased;
        counts.monitored += erased.monitored;
        if (due.length < RETENTION_BATCH) break;
        await nextTurn();
      }
    } finally {
      this.options.logger.info(
        { ...counts, seconds: Math.round(performance.now() - started) / 1000 },
        'retention sweep',
      );
    }
    return counts;
  }

  /** Stops the timers, lets the work under way end, and writes the moments heard. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await this.work;
    await this.flush();
  }

  private note(userId: Snowflake, at: number): void {
    const noted = this.pending.get(userId);
    if (noted === undefined || noted < at) this.pending.set(userId, at);
  }

  private enqueue(name: string, task: () => Promise<unknown>): void {
    if (this.closed || this.queued.has(name)) return;
    this.queued.add(name);
    this.work = this.work.then(async () => {
      this.queued.delete(name);
      if (this.closed) return;
      try {
        await task();
      } catch (error) {
        this.options.logger.warn({ err: error }, `retention ${name} stopped; the next one goes on`);
      }
    });
  }

  private async refreshAndAdopt(): Promise<void> {
    await this.refresh();
    await this.adopt();
  }

  private async writePending(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const moments = this.pending;
    const leaving = this.leaving;
    this.pending = new Map();
    this.leaving = new Map();
    try {
      for (const batch of inBatches(moments)) {
        await this.options.store.seen(batch);
        if (batch.size === RETENTION_BATCH) await nextTurn();
      }
    } catch (error) {
      for (const [userId, at] of moments) this.note(userId, at);
      for (const [userId, at] of leaving) if (!this.leaving.has(userId)) this.leaving.set(userId, at);
      this.options.logger.warn({ err: error }, 'retention: could not write when users were last monitored');
      if (!this.closed) this.flushTimer ??= setTimeout(() => void this.flush(), this.timing.flushMs).unref();
      return;
    }
    if (leaving.size === 0 || this.closed) return;
    try {
      // A user is told from one who came back by their moment: kept only while it is still their leave's.
      const { erased } = await this.eraseGone([...leaving.keys()], this.now(), (userId) => {
        return (leaving.get(userId) as number) + 1;
      });
      if (erased > 0) this.options.logger.info({ erased }, 'retention: users who left erased at once');
    } catch (error) {
      // Their moments are written: the next sweep erases them.
      this.options.logger.warn({ err: error }, 'retention: could not erase users who left');
    }
  }

  /**
   * Erases each of these users whom no node monitors, then drops their moments still before `before`
   * theirs; the others get `now`. Stops at the first erasure that fails, having recorded the rest.
   */
  private async eraseGone(
    userIds: readonly Snowflake[],
    now: number,
    before: (userId: Snowflake) => number,
  ): Promise<{ erased: number; monitored: number }> {
    const { store, account } = this.options;
    if (this.options.outage?.()) {
      this.options.logger.info(
        { users: userIds.length },
        'retention: a guild is unavailable; erasing nobody until it is back',
      );
      return { erased: 0, monitored: 0 };
    }
    const monitored = new Map<Snowflake, number>();
    const erased: Snowflake[] = [];
    let failure: unknown;
    for (const userId of userIds) {
      if (this.closed) break;
      try {
        if (await this.isMonitored(userId)) {
          monitored.set(userId, now);
          continue;
        }
        await account.erase(userId);
        erased.push(userId);
      } catch (error) {
        failure = error;
        break;
      }
    }
    await store.seen(monitored);
    const byMoment = new Map<number, Snowflake[]>();
    for (const userId of erased) {
      const at = before(userId);
      const users = byMoment.get(at);
      if (users) users.push(userId);
      else byMoment.set(at, [userId]);
    }
    for (const [at, users] of byMoment) await store.forgetSeen(users, at);
    this.options.onErased?.(erased.length);
    if (failure !== undefined) throw failure;
    return { erased: erased.length, monitored: monitored.size };
  }

  private async isMonitored(userId: Snowflake): Promise<boolean> {
    if (this.options.registry.isMonitored(userId)) return true;
    return (await this.options.clustered?.monitored(userId)) === true;
  }
}

function* inBatches(moments: ReadonlyMap<Snowflake, number>): Iterable<Map<Snowflake, number>> {
  let batch = new Map<Snowflake, number>();
  for (const [userId, at] of moments) {
    batch.set(userId, at);
    if (batch.size === RETENTION_BATCH) {
      yield batch;
      batch = new Map();
    }
  }
  if (batch.size > 0) yield batch;
}
