import { grown, NO_SLOT, SnowflakeSlots } from '../collections/snowflake-slots.js';
import type { RecentStatus, StatusEntry } from '../model/history.js';
import { timerDelay } from '../ops/timer-delay.js';
import type { DiscordStatus, Snowflake } from '../presence/model.js';
import type { PresenceChange } from '../presence/registry/registry.js';

/**
 * How long a status change is remembered here: longer than history takes to reach the store (a batch a
 * second, retried while the store is away for a while).
 */
export const RECENT_STATUS_MS = 30_000;
/** Status entries kept per user within that time (a user flapping between statuses keeps the newest). */
const MAX_ENTRIES = 20;
const STATUSES: readonly DiscordStatus[] = ['offline', 'online', 'idle', 'dnd'];
/** No entry or no user: the end of a user's entries, or of the order users were touched in. */
const NONE = -1;
const FIRST_ENTRIES = 1024;
/** Arrays this many times longer than what they hold are copied into shorter ones. */
const SPARSE = 8;

/**
 * The status changes of the last RECENT_STATUS_MS as the view that serves presences saw them (the registry,
 * or an API node's replica), stamped with the same moment history records them with. History and stats
 * read the store, which the recorder writes in batches; what the batch has not written yet is here, so
 * they agree with the live presence at every moment (see `statusHistoryWith`, `statsFrom`).
 */
export class RecentStatuses {
  private held = new HeldStatuses();
  /**
   * Users erased within RECENT_STATUS_MS, and when: a change seen before that and heard only now (a pending
   * member rendered since, stamped with when it was listed) is not held again.
   */
  private readonly forgotten = new Map<Snowflake, number>();
  /**
   * Lets the entries go once they are old even when nothing asks: a member listing puts every member
   * here at once, and a reader of presences alone never would.
   */
  private sweep: NodeJS.Timeout | null = null;
  /** Closed: what still arrives while the service shuts down is held, but no sweep is set for it. */
  private closed = false;
  /**
   * Monitored users whose last change was not recorded: their next recorded status is held even when the
   * view saw no change of it, since history compares it with what it last recorded, not with that.
   */
  private readonly unrecorded = new Set<Snowflake>();

  /**
   * `records`: whether the user's change at `at` is kept in their history (the recorder's option of the
   * same name); a change it is not is not held here either, so what is read agrees with what is stored.
   */
  constructor(
    private readonly now: () => number = Date.now,
    private readonly keepMs: number = RECENT_STATUS_MS,
    private readonly records?: (userId: Snowflake, at: number) => boolean,
  ) {}

  /** The view's listener. */
  readonly observe = (change: PresenceChange): void => {
    const { userId, at } = change;
    if (this.records && !this.records(userId, at)) {
      // One coming back is monitored anew, which is held whatever it was.
      if (change.kind === 'unmonitored') this.unrecorded.delete(userId);
      else this.unrecorded.add(userId);
      return;
    }
    const resumed = this.unrecorded.size > 0 && this.unrecorded.delete(userId);
    if (change.kind === 'unmonitored') {
      if (change.previous.status !== 'offline') this.hold(userId, null, at, true);
      return;
    }
    const { status } = change.current;
    const wasOffline = change.kind === 'updated' && change.previous.status === 'offline';
    if (change.kind === 'updated' && change.previous.status === status && !resumed) return;
    this.hold(userId, status, at, change.kind === 'updated' && status === 'offline' && !wasOffline);
  };

  /** Users remembered. */
  get size(): number {
    return this.held.size;
  }

  get(userId: Snowflake): RecentStatus | undefined {
    this.prune();
    const slot = this.held.slotOf(userId);
    return slot === NO_SLOT ? undefined : this.held.statusOf(slot);
  }

  /** `?forget`: nothing seen up to `at` is reported any more. */
  forget(userId: Snowflake, at: number): void {
    this.forgotten.set(userId, Math.max(at, this.forgotten.get(userId) ?? at));
    if (this.sweep === null) this.sweepIn(this.keepMs);
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT || this.held.forget(slot, at)) return;
    this.held.release(slot);
    this.compact();
  }

  /**
   * The user moves to the newest end of the touch order, with a new entry of `status` at `at` unless it
   * is null, and last seen at `at` if `seen`.
   */
  private hold(userId: Snowflake, status: DiscordStatus | null, at: number, seen: boolean): void {
    const forgotten = this.forgotten.get(userId);
    if (forgotten !== undefined && at <= forgotten && forgotten >= this.now() - this.keepMs) return;
    const slot = this.held.touch(userId, this.now());
    if (slot === NO_SLOT) return;
    if (status !== null) this.held.push(slot, STATUSES.indexOf(status), at);
    if (seen) this.held.seen(slot, at);
    this.prune();
    if (this.sweep === null) this.sweepIn(this.keepMs);
  }

  /** Stops the sweep: the process is shutting down. */
  close(): void {
    this.closed = true;
    if (this.sweep !== null) clearTimeout(this.sweep);
    this.sweep = null;
  }

  private sweepIn(ms: number): void {
    if (this.closed) return;
    this.sweep = setTimeout(() => {
      this.sweep = null;
      this.prune();
      const touched = this.held.oldestTouched();
      if (touched !== null) this.sweepIn(timerDelay(Math.max(touched + this.keepMs - this.now(), 0) + 1));
    }, ms);
    this.sweep.unref();
  }

  private prune(): void {
    const now = this.now();
    const before = now - this.keepMs;
    // Users touched ahead of a clock that went back count as touched now: kept RECENT_STATUS_MS, no longer.
    this.held.touchedNoLaterThan(now);
    if (this.held.prune(before)) this.compact();
    for (const [userId, at] of this.forgotten) if (at < before) this.forgotten.delete(userId);
  }

  /** After a burst (a member listing) has gone, its arrays go too. */
  private compact(): void {
    if (this.held.sparse()) this.held = this.held.compacted();
  }
}

/**
 * What RecentStatuses holds, in typed arrays: per user (a slot) where their newest entry is, when they
 * were last seen and touched, and their neighbours in the order they were touched; per entry its status,
 * its moment and the same user's entry before it. Held for every member of a large guild: a few arrays,
 * not objects per member (why: docs/architecture.md#per-user-state-off-the-js-heap).
 */
class HeldStatuses {
  private readonly slots = new SnowflakeSlots();
  private readonly firstSlots = this.slots.capacity;
  private newestEntries = new Int32Array(0);
  private entryCounts = new Uint8Array(0);
  /** NaN: not seen going offline. */
  private lastSeens = new Float64Array(0);
  private touchedAt = new Float64Array(0);
  private olderUsers = new Int32Array(0);
  private newerUsers = new Int32Array(0);
  private oldestUser = NONE;
  private newestUser = NONE;
  private statuses = new Uint8Array(FIRST_ENTRIES);
  private timestamps = new Float64Array(FIRST_ENTRIES);
  /** Per entry the user's entry before it; per free entry the next free one. */
  private olderEntries = new Int32Array(FIRST_ENTRIES);
  /** Entries ever handed out: every entry in use is below it. */
  private entriesEnd = 0;
  private freeEntry = NONE;
  private entryCount = 0;

  get size(): number {
    return this.slots.size;
  }

  slotOf(userId: Snowflake): number {
    return this.slots.slotOf(userId);
  }

  /** The slot of `userId`, added if it had none, now the most recently touched; NO_SLOT for no snowflake. */
  touch(userId: Snowflake, now: number): number {
    this.touchedNoLaterThan(now);
    let slot = this.slots.slotOf(userId);
    if (slot === NO_SLOT) {
      slot = this.slots.add(userId);
      if (slot === NO_SLOT) return NO_SLOT;
      if (slot >= this.touchedAt.length) this.reserve(this.slots.capacity);
      this.newestEntries[slot] = NONE;
      this.entryCounts[slot] = 0;
      this.lastSeens[slot] = Number.NaN;
    } else {
      if (slot === this.newestUser) {
        this.touchedAt[slot] = now;
        return slot;
      }
      this.unlink(slot);
    }
    this.touchedAt[slot] = now;
    this.olderUsers[slot] = this.newestUser;
    this.newerUsers[slot] = NONE;
    if (this.newestUser === NONE) this.oldestUser = slot;
    else this.newerUsers[this.newestUser] = slot;
    this.newestUser = slot;
    return slot;
  }

  /** A new newest entry; the oldest of MAX_ENTRIES + 1 goes. */
  push(slot: number, status: number, ts: number): void {
    const entry = this.entry();
    this.statuses[entry] = status;
    this.timestamps[entry] = ts;
    this.olderEntries[entry] = this.newestEntries[slot] as number;
    this.newestEntries[slot] = entry;
    const count = this.entryCounts[slot] as number;
    if (count < MAX_ENTRIES) {
      this.entryCounts[slot] = count + 1;
      return;
    }
    let last = entry;
    for (let kept = 1; kept < MAX_ENTRIES; kept++) last = this.olderEntries[last] as number;
    this.free(this.olderEntries[last] as number);
    this.olderEntries[last] = NONE;
  }

  seen(slot: number, at: number): void {
    this.lastSeens[slot] = at;
  }

  statusOf(slot: number): RecentStatus {
    const entries: StatusEntry[] = [];
    for (let entry = this.newestEntries[slot] as number; entry !== NONE; ) {
      entries.push({
        status: STATUSES[this.statuses[entry] as number] as DiscordStatus,
        ts: this.timestamps[entry] as number,
      });
      entry = this.olderEntries[entry] as number;
    }
    const lastSeen = this.lastSeens[slot] as number;
    return { entries, lastSeen: Number.isNaN(lastSeen) ? null : lastSeen };
  }

  /** Drops the entries and last sighting up to `at`; false when nothing is left. */
  forget(slot: number, at: number): boolean {
    let newer = NONE;
    for (let entry = this.newestEntries[slot] as number; entry !== NONE; ) {
      const older = this.olderEntries[entry] as number;
      if ((this.timestamps[entry] as number) > at) newer = entry;
      else {
        if (newer === NONE) this.newestEntries[slot] = older;
        else this.olderEntries[newer] = older;
        this.olderEntries[entry] = NONE;
        this.free(entry);
        this.entryCounts[slot] = (this.entryCounts[slot] as number) - 1;
      }
      entry = older;
    }
    // NaN (never seen) is not later than `at` either.
    if (!((this.lastSeens[slot] as number) > at)) this.lastSeens[slot] = Number.NaN;
    return this.entryCounts[slot] !== 0 || !Number.isNaN(this.lastSeens[slot] as number);
  }

  /** Lets the users touched before `before` go, oldest first; true if any went. */
  prune(before: number): boolean {
    const size = this.size;
    while (this.oldestUser !== NONE && (this.touchedAt[this.oldestUser] as number) < before) {
      this.release(this.oldestUser);
    }
    return this.size !== size;
  }

  /** Users touched after `now`, the newest of them first, are touched at `now`: the order stays by time. */
  touchedNoLaterThan(now: number): void {
    for (let slot = this.newestUser; slot !== NONE && (this.touchedAt[slot] as number) > now; ) {
      this.touchedAt[slot] = now;
      slot = this.olderUsers[slot] as number;
    }
  }

  oldestTouched(): number | null {
    return this.oldestUser === NONE ? null : (this.touchedAt[this.oldestUser] as number);
  }

  release(slot: number): void {
    this.unlink(slot);
    this.free(this.newestEntries[slot] as number);
    this.slots.release(slot);
  }

  /** Whether the arrays are much longer than what they hold, as they are once a burst has gone. */
  sparse(): boolean {
    return (
      (this.slots.capacity > this.firstSlots && this.size * SPARSE <= this.slots.capacity) ||
      (this.timestamps.length > FIRST_ENTRIES && this.entryCount * SPARSE <= this.timestamps.length)
    );
  }

  /** The same users and entries in arrays no longer than they need, in the same touch order. */
  compacted(): HeldStatuses {
    const next = new HeldStatuses();
    const chain = new Int32Array(MAX_ENTRIES);
    for (let slot = this.oldestUser; slot !== NONE; slot = this.newerUsers[slot] as number) {
      const moved = next.touch(this.slots.idOf(slot), this.touchedAt[slot] as number);
      next.lastSeens[moved] = this.lastSeens[slot] as number;
      let count = 0;
      for (let entry = this.newestEntries[slot] as number; entry !== NONE; ) {
        chain[count++] = entry;
        entry = this.olderEntries[entry] as number;
      }
      while (count > 0) {
        const entry = chain[--count] as number;
        next.push(moved, this.statuses[entry] as number, this.timestamps[entry] as number);
      }
    }
    return next;
  }

  private unlink(slot: number): void {
    const older = this.olderUsers[slot] as number;
    const newer = this.newerUsers[slot] as number;
    if (older === NONE) this.oldestUser = newer;
    else this.newerUsers[older] = newer;
    if (newer === NONE) this.newestUser = older;
    else this.olderUsers[newer] = older;
  }

  /** A free entry, the arrays doubled when there is none. */
  private entry(): number {
    this.entryCount++;
    if (this.freeEntry !== NONE) {
      const entry = this.freeEntry;
      this.freeEntry = this.olderEntries[entry] as number;
      return entry;
    }
    if (this.entriesEnd === this.timestamps.length) {
      const capacity = this.timestamps.length * 2;
      this.statuses = grown(this.statuses, capacity);
      this.timestamps = grown(this.timestamps, capacity);
      this.olderEntries = grown(this.olderEntries, capacity);
    }
    return this.entriesEnd++;
  }

  /** Frees `entry` and the entries before it. */
  private free(entry: number): void {
    while (entry !== NONE) {
      const older = this.olderEntries[entry] as number;
      this.olderEntries[entry] = this.freeEntry;
      this.freeEntry = entry;
      this.entryCount--;
      entry = older;
    }
  }

  private reserve(capacity: number): void {
    this.newestEntries = grown(this.newestEntries, capacity);
    this.entryCounts = grown(this.entryCounts, capacity);
    this.lastSeens = grown(this.lastSeens, capacity);
    this.touchedAt = grown(this.touchedAt, capacity);
    this.olderUsers = grown(this.olderUsers, capacity);
    this.newerUsers = grown(this.newerUsers, capacity);
  }
}
