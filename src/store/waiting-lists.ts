import type { TrackEntry } from '../model/history.js';
import type { Snowflake } from '../presence/model.js';

/** A status or track list that grew is trimmed at most this long after it first grew… */
export const HISTORY_TRIM_DELAY_MS = 30_000;
/** …or sooner once this many users' lists wait, the longest waiting first. */
export const HISTORY_TRIM_WAITING = 20_000;

export interface WaitingListsOptions {
  trimDelayMs?: number;
  trimWaiting?: number;
  now?: () => number;
}

/** Users whose status lists, and whose track lists, are to be trimmed. */
export type ListsOf = { status: Snowflake[]; tracks: Snowflake[] };

/**
 * The lists of the SQL stores that wait to be trimmed, so that a user is trimmed once for all the entries
 * of that while rather than in every batch. Readers take the newest entries up to the limit (stats and
 * forget count to HISTORY_LIMIT, the recorder's), so the older ones left meanwhile never show. A crash
 * forgets who waits: their lists stay a few entries long, unseen, until their next entry makes them wait
 * again.
 */
export class WaitingLists {
  private readonly status = new Waiting();
  private readonly tracks = new Waiting();
  private readonly trimDelayMs: number;
  private readonly trimWaiting: number;
  readonly now: () => number;

  constructor(options: WaitingListsOptions = {}) {
    this.trimDelayMs = options.trimDelayMs ?? HISTORY_TRIM_DELAY_MS;
    this.trimWaiting = options.trimWaiting ?? HISTORY_TRIM_WAITING;
    this.now = options.now ?? Date.now;
  }

  statusGrew(userId: Snowflake, now: number): void {
    this.status.add(userId, now);
  }

  tracksGrew(userId: Snowflake, now: number): void {
    this.tracks.add(userId, now);
  }

  /** The lists to trim in a batch written at `now`: they stop waiting once it has committed (`trimmed`). */
  due(now: number): ListsOf {
    const grewBefore = now - this.trimDelayMs;
    return {
      status: this.status.due(grewBefore, this.trimWaiting),
      tracks: this.tracks.due(grewBefore, this.trimWaiting),
    };
  }

  trimmed(lists: ListsOf): void {
    this.status.remove(lists.status);
    this.tracks.remove(lists.tracks);
  }

  all(): ListsOf {
    return { status: this.status.all(), tracks: this.tracks.all() };
  }

  clear(): void {
    this.status.clear();
    this.tracks.clear();
  }
}

/** Users whose list grew since it was last trimmed, in the order they first grew, with when. */
class Waiting {
  private readonly since = new Map<Snowflake, number>();

  add(userId: Snowflake, now: number): void {
    if (!this.since.has(userId)) this.since.set(userId, now);
  }

  /** Those that grew at `grewBefore` or earlier, and the longest waiting beyond the `keep` others. */
  due(grewBefore: number, keep: number): Snowflake[] {
    const due: Snowflake[] = [];
    let excess = this.since.size - keep;
    for (const [userId, since] of this.since) {
      if (excess <= 0 && since > grewBefore) break;
      due.push(userId);
      excess--;
    }
    return due;
  }

  all(): Snowflake[] {
    return [...this.since.keys()];
  }

  remove(userIds: readonly Snowflake[]): void {
    for (const userId of userIds) this.since.delete(userId);
  }

  clear(): void {
    this.since.clear();
  }
}

/**
 * The JSON of a play: the entry's without `ts`, cut from the entry's JSON when `ts` is its last key (the
 * recorder adds it last) rather than serializing the track twice.
 */
export function withoutTs(entry: string, track: TrackEntry): string {
  const tail = `,"ts":${track.ts}}`;
  if (entry.endsWith(tail)) return `${entry.slice(0, -tail.length)}}`;
  const { ts: _ts, ...played } = track;
  return JSON.stringify(played);
}
