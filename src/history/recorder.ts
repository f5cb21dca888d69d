import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bus } from '../bus/ports.js';
import {
  EMPTY_MEMORY,
  HISTORY_LIMIT,
  type HistoryMemory,
  liveStatusOf,
  memoryFromHistory,
  memoryOf,
  notLive,
  type Observation,
  recordObservation,
  TRACKED_TRACKS_PER_USER,
} from '../model/history.js';
import type { DiscordStatus, Snowflake } from '../presence/model.js';
import type { PresenceChange } from '../presence/registry/registry.js';
import { afterForget } from '../store/forgotten.js';
import type { ForgetResult, HistoryStore, HistoryWrite, LatestHistory } from '../store/ports.js';
import { TurnBatch } from '../store/turn-batch.js';
import { HistoryMemories } from './memories.js';

/** Writes are batched: at most this long after a change, or sooner when this many are waiting. */
export const HISTORY_FLUSH_MS = 1_000;
export const HISTORY_BATCH_SIZE = 1_000;
/** Users whose stored history is read in one go, at most (a member listing brings them by the thousand). */
export const HISTORY_LOAD_BATCH = 1_000;
/**
 * Writes that may wait while the store cannot take them (a database away); past it the oldest are
 * dropped, counted and logged, so an outage costs a bounded amount of memory.
 */
export const HISTORY_PENDING_MAX = 100_000;

export interface HistoryRecorderOptions {
  store: HistoryStore;
  logger: Logger;
  /** Erasures are announced here, and heard from every node that records history. */
  bus?: Bus;
  now?: () => number;
  flushMs?: number;
  /** HISTORY_PENDING_MAX unless a test says otherwise. */
  maxPending?: number;
  /** Writes dropped because too many waited. */
  onDropped?(writes: number): void;
  /**
   * Whether the user's change at `at` is kept in their history (their privacy settings: `recordsHistory`);
   * absent: every change is.
   */
  records?: (userId: Snowflake, at: number) => boolean;
}

/** Writes sent to the store together, under one id for every try. */
interface Batch {
  id: string;
  writes: HistoryWrite[];
}

/** A change waiting for the user's stored history, and whether their settings let it be recorded. */
interface Queued {
  observation: Observation;
  records: boolean;
}

/** A user whose stored history is being read: their changes wait, in order. */
interface Loading {
  observations: Queued[];
  /** The status last seen live meanwhile (what the memory's `live` says for the others). */
  live: DiscordStatus | null;
  /** The observations before this one came before a `forget`: they move the memory on, none is written. */
  forgotten: number;
}

/**
 * Feeds the registry's changes through the recording rules and writes what they decide, in batches.
 * The rules need what was recorded before (the last status, the last play); for a user this process
 * has not seen yet that comes from the store, and their changes wait in order until it has.
 *
 * The status last seen live is part of each user's memory, not a map of its own, and the memories are
 * held in typed arrays (memories.ts): nothing on the JS heap for a user who plays nothing.
 */
export class HistoryRecorder {
  private readonly memory = new HistoryMemories();
  /**
   * The live status of users whose last change was not recorded (their settings say so): their memory
   * holds what was last recorded, which the first change recorded again is compared with (see `skip`).
   */
  private readonly unrecordedLive = new Map<Snowflake, DiscordStatus>();
  private readonly loading = new Map<Snowflake, Loading>();
  private pending: HistoryWrite[] = [];
  /**
   * The batch whose write failed: the store may have committed it and lost only its answer, so it goes
   * again alone, under its id, before what waited since.
   */
  private unsure: Batch | null = null;
  /** The last batch failed: writes wait for the timer's next try rather than call on the store each. */
  private failing = false;
  /** Writes dropped since the store last took a batch. */
  private dropped = 0;
  private readonly maxPending: number;
  /** Users seen for the first time in this turn (a whole member chunk): their stored history is read together. */
  private readonly toLoad = new TurnBatch<Snowflake>((userIds) => this.loadSeen(userIds), HISTORY_LOAD_BATCH);
  /** Reads of stored history under way: their users' changes wait for them. */
  private readonly loads = new Set<Promise<void>>();
  /** Flushes and erasures run one after another, so an erasure never races a batch holding the user. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: HistoryRecorderOptions) {
    this.now = options.now ?? Date.now;
    this.maxPending = options.maxPending ?? HISTORY_PENDING_MAX;
    this.timer = setInterval(() => void this.flush(), options.flushMs ?? HISTORY_FLUSH_MS);
    this.timer.unref();
    this.unsubscribe =
      options.bus?.subscribe('history.forgotten', ({ userId, at }) => this.dropQueued(userId, at)) ??
      (() => {});
  }

  /** The registry's listener. */
  readonly observe = (change: PresenceChange): void => {
    const ts = change.at;
    const previousLiveStatus = this.liveStatus(change.userId);
    // Taken back after a restart: recorded when it was seen (what changed since is replayed as changes),
    // so only followed, as a change the settings keep out is.
    const restored = change.kind === 'monitored' && change.restored === true;
    const records = !restored && (this.options.records?.(change.userId, ts) ?? true);
    if (change.kind === 'unmonitored') {
      this.notLive(change.userId);
      if (records && previousLiveStatus !== null && previousLiveStatus !== 'offline') {
        this.enqueue({ userId: change.userId, status: null, track: null, countsPlay: false, lastSeen: ts });
      }
      return;
    }
    const presence = change.current.summary();
    this.consider(
      change.userId,
      { status: presence.discord_status, nowPlaying: presence.now_playing, ts, previousLiveStatus },
      records,
    );
  };

  /** Writes what is waiting. Resolves when it is durable. */
  flush(): Promise<void> {
    return this.serialize(async () => {
      const retried = this.unsure;
      this.unsure = null;
      if (retried && !(await this.write(retried))) return;
      if (this.pending.length === 0) return;
      const batch = { id: randomUUID(), writes: this.pending };
      this.pending = [];
      await this.write(batch);
    });
  }

  /** Whether the store took the batch; if not, it is the one to write first. */
  private async write(batch: Batch): Promise<boolean> {
    try {
      await this.options.store.appendHistory(
        batch.writes,
        { history: HISTORY_LIMIT, trackedTracks: TRACKED_TRACKS_PER_USER },
        batch.id,
      );
    } catch (error) {
      this.unsure = batch;
      this.failing = true;
      this.dropOldest(this.maxPending);
      this.options.logger.error(
        { err: error, writes: this.waiting(), dropped: this.dropped },
        'could not write history; will retry',
      );
      return false;
    }
    if (this.failing) {
      this.options.logger.info(
        { writes: batch.writes.length, dropped: this.dropped },
        'history written again',
      );
      this.failing = false;
      this.dropped = 0;
    }
    return true;
  }

  /**
   * `?forget confirm`: drops what waits to be written for the user, erases what is stored (after any batch
   * already on its way), then tells the other nodes to drop what they hold queued. The store remembers the
   * moment, so a batch of theirs in flight, or one whose node missed the message, cannot write back
   * anything seen before it; this relies on the nodes' clocks agreeing. What the rules remember stays, so
   * the current track is not recorded again; for a user whose stored history is still being read, the
   * changes seen so far still move it on.
   */
  async forget(userId: Snowflake): Promise<ForgetResult> {
    const at = this.now();
    this.dropQueued(userId, at);
    const erased = await this.serialize(() => {
      this.dropQueued(userId, at);
      return this.options.store.forget(userId, at);
    });
    try {
      await this.options.bus?.publish('history.forgotten', { userId, at });
    } catch (error) {
      // The store already refuses what other nodes hold: they only keep it queued a while longer.
      this.options.logger.warn({ err: error, userId }, 'could not announce an erased history');
    }
    return erased;
  }

  /**
   * Another node records this user now (scale-out ownership moved): what this one remembers would be
   * stale if the user came back to it, and its last_seen at shutdown would be wrong. What waits to be
   * written stays: it happened while this node was the one recording.
   */
  release(userId: Snowflake): void {
    this.memory.delete(userId);
    this.unrecordedLive.delete(userId);
    const loading = this.loading.get(userId);
    if (loading) loading.live = null;
  }

  /**
   * Final flush, with last_seen for everyone still online whose settings let it be recorded now: after a
   * restart nobody else can know it.
   */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.unsubscribe();
    this.toLoad.flush();
    await Promise.all(this.loads);
    const ts = this.now();
    for (const [userId, memory] of this.memory.entries()) {
      const status = this.unrecordedLive.get(userId) ?? liveStatusOf(memory);
      if (status === null || status === 'offline' || this.options.records?.(userId, ts) === false) continue;
      this.enqueue({ userId, status: null, track: null, countsPlay: false, lastSeen: ts });
    }
    await this.flush();
  }

  /** The status this process last saw live, or null when it has not since it started or the user left. */
  private liveStatus(userId: Snowflake): DiscordStatus | null {
    const memory = this.memory.get(userId);
    if (memory) return this.unrecordedLive.get(userId) ?? liveStatusOf(memory);
    return this.loading.get(userId)?.live ?? null;
  }

  private notLive(userId: Snowflake): void {
    this.unrecordedLive.delete(userId);
    const memory = this.memory.get(userId);
    if (memory) this.memory.set(userId, notLive(memory));
    const loading = this.loading.get(userId);
    if (loading) loading.live = null;
  }

  private consider(userId: Snowflake, observation: Observation, records: boolean): void {
    const memory = this.memory.get(userId);
    if (memory) {
      this.step(userId, memory, observation, records);
      return;
    }
    const queued = this.loading.get(userId);
    if (queued) {
      queued.observations.push({ observation, records });
      queued.live = observation.status;
      return;
    }
    this.loading.set(userId, {
      observations: [{ observation, records }],
      live: observation.status,
      forgotten: 0,
    });
    this.toLoad.add(userId);
  }

  /** Reads what is stored for the users waiting, then applies their changes in the order they came. */
  private loadSeen(userIds: Snowflake[]): void {
    const load = this.options.store
      .latest(userIds)
      .catch((error: unknown) => {
        this.options.logger.error(
          { err: error, users: userIds.length },
          'could not read history; recording from scratch',
        );
        return new Map<Snowflake, LatestHistory>();
      })
      .then((found) => {
        for (const userId of userIds) {
          const loading = this.loading.get(userId);
          this.loading.delete(userId);
          let current = this.remembered(userId, found.get(userId));
          const { observations = [], forgotten = 0 } = loading ?? {};
          for (const [index, { observation, records }] of observations.entries()) {
            current = this.step(userId, current, observation, records, index >= forgotten);
          }
          // Gone (or handed to another node) since their last change: not live any more.
          if (loading?.live === null) this.notLive(userId);
        }
      })
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'could not record history'))
      .finally(() => this.loads.delete(load));
    this.loads.add(load);
  }

  /**
   * What the rules remember of a user from their stored history. One user's unreadable entry (a store
   * edited by hand, say) costs that user's memory, not the batch read with them.
   */
  private remembered(userId: Snowflake, stored: LatestHistory | undefined): HistoryMemory {
    if (!stored) return EMPTY_MEMORY;
    try {
      return memoryFromHistory(stored.status, stored.track);
    } catch (error) {
      this.options.logger.error({ err: error, userId }, 'unreadable stored history; recording from scratch');
      return EMPTY_MEMORY;
    }
  }

  /** One change: recorded (or, for one before a `forget`, only moving the memory on), or skipped. */
  private step(
    userId: Snowflake,
    memory: HistoryMemory,
    observation: Observation,
    records: boolean,
    write = true,
  ): HistoryMemory {
    if (!records) return this.skip(userId, memory, observation);
    this.unrecordedLive.delete(userId);
    return this.apply(userId, memory, observation, write);
  }

  /**
   * A change the user's settings keep out of history: nothing is written, and the memory stays at what was
   * last recorded, so the first change recorded again is judged against that: a status entry if the status
   * differs from the last recorded one; a play if its track differs from the last recorded play, or is the
   * same track seen starting over after that play's end (the play rules). The last play counts as paused,
   * as after a restart: nobody watched meanwhile, so a track merely resumed is no phantom replay, and a
   * track played and gone while not recording is never counted. The live status is kept apart
   * (`unrecordedLive`), so going offline is still told from what the user really was just before.
   */
  private skip(userId: Snowflake, memory: HistoryMemory, observation: Observation): HistoryMemory {
    const play = memory.play === null || memory.play.paused ? memory.play : { ...memory.play, paused: true };
    const kept = memory.live || play !== memory.play ? memoryOf(memory.status, play, false) : memory;
    this.memory.set(userId, kept);
    this.unrecordedLive.set(userId, observation.status);
    return kept;
  }

  /** `record`: write what the rules decide; without it the observation only moves the memory on. */
  private apply(
    userId: Snowflake,
    memory: HistoryMemory,
    observation: Observation,
    record = true,
  ): HistoryMemory {
    const decision = recordObservation(memory, observation);
    this.memory.set(userId, decision.memory);
    if (record && (decision.status || decision.track || decision.lastSeen !== null)) {
      this.enqueue({
        userId,
        status: decision.status,
        track: decision.track,
        countsPlay: decision.countsPlay,
        lastSeen: decision.lastSeen,
      });
    }
    return decision.memory;
  }

  /** The user's history was erased at `at`: what this node holds of them from up to then is not written. */
  private dropQueued(userId: Snowflake, at: number): void {
    const kept = (writes: HistoryWrite[]) => {
      const left: HistoryWrite[] = [];
      for (const write of writes) {
        const after = write.userId === userId ? afterForget(write, at) : write;
        if (after !== null) left.push(after);
      }
      return left;
    };
    this.pending = kept(this.pending);
    if (this.unsure) this.unsure.writes = kept(this.unsure.writes);
    const loading = this.loading.get(userId);
    if (loading) {
      const seenBefore = loading.observations.findLastIndex(({ observation }) => observation.ts <= at) + 1;
      loading.forgotten = Math.max(loading.forgotten, seenBefore);
    }
  }

  private enqueue(write: HistoryWrite): void {
    this.pending.push(write);
    if (!this.failing) {
      if (this.pending.length >= HISTORY_BATCH_SIZE) void this.flush();
    } else if (this.waiting() >= this.maxPending + HISTORY_BATCH_SIZE) {
      // A batch's worth at a time, so that an outage does not copy the queue at every write.
      this.dropOldest(this.maxPending);
    }
  }

  /** Writes waiting, not in flight: the failed batch's, and those since. */
  private waiting(): number {
    return (this.unsure?.writes.length ?? 0) + this.pending.length;
  }

  /**
   * Drops the oldest writes waiting past `keep`, the failed batch's first. What is left of it keeps its
   * id: if its first try committed, the store skips it whole; if not, the rest is written.
   */
  private dropOldest(keep: number): void {
    const excess = this.waiting() - keep;
    if (excess <= 0) return;
    let left = excess;
    if (this.unsure) {
      const cut = Math.min(left, this.unsure.writes.length);
      this.unsure.writes.splice(0, cut);
      left -= cut;
      if (this.unsure.writes.length === 0) this.unsure = null;
    }
    this.pending.splice(0, left);
    this.dropped += excess;
    this.options.onDropped?.(excess);
  }

  private serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => undefined);
    return run;
  }
}
