import type { RecentStatus, StatusEntry } from '../presence/history.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceChange } from '../presence/registry.js';

/**
 * How long a status change is remembered here: longer than history takes to reach the store (a batch a
 * second, retried while the store is away for a while).
 */
export const RECENT_STATUS_MS = 30_000;
/** Status entries kept per user within that time (a user flapping between statuses keeps the newest). */
const MAX_ENTRIES = 20;

interface Held extends RecentStatus {
  /** When this user's entry last changed: the map is kept in that order, oldest first. */
  touched: number;
}

/**
 * The status changes of the last RECENT_STATUS_MS as the view that serves presences saw them (the registry,
 * or an API node's replica), stamped with the same moment history records them with. History and stats
 * read the store, which the recorder writes in batches; what the batch has not written yet is here, so
 * they agree with the live presence at every moment (see `statusHistoryWith`, `statsFrom`).
 */
export class RecentStatuses {
  private readonly users = new Map<Snowflake, Held>();
  /**
   * Lets the entries go once they are old even when nothing asks: a member listing puts every member
   * here at once, and a reader of presences alone never would.
   */
  private sweep: NodeJS.Timeout | null = null;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly keepMs: number = RECENT_STATUS_MS,
  ) {}

  /** The view's listener. */
  readonly observe = (change: PresenceChange): void => {
    const { userId, at } = change;
    const held = this.users.get(userId);
    if (change.kind === 'unmonitored') {
      if (change.previous.status !== 'offline') this.hold(userId, held?.entries ?? [], at);
      return;
    }
    const { status } = change.current;
    const changed = change.kind === 'monitored' || change.previous.status !== status;
    if (!changed) return;
    const wentOffline =
      change.kind === 'updated' && status === 'offline' && change.previous.status !== 'offline';
    const entries = [{ status, ts: at }, ...(held?.entries ?? [])].slice(0, MAX_ENTRIES);
    this.hold(userId, entries, wentOffline ? at : (held?.lastSeen ?? null));
  };

  /** Users remembered. */
  get size(): number {
    return this.users.size;
  }

  get(userId: Snowflake): RecentStatus | undefined {
    this.prune();
    return this.users.get(userId);
  }

  /** `?forget`: nothing seen up to `at` is reported any more. */
  forget(userId: Snowflake, at: number): void {
    const held = this.users.get(userId);
    if (!held) return;
    const entries = held.entries.filter((entry) => entry.ts > at);
    const lastSeen = held.lastSeen !== null && held.lastSeen > at ? held.lastSeen : null;
    if (entries.length === 0 && lastSeen === null) this.users.delete(userId);
    else this.users.set(userId, { ...held, entries, lastSeen });
  }

  private hold(userId: Snowflake, entries: StatusEntry[], lastSeen: number | null): void {
    this.users.delete(userId);
    this.users.set(userId, { entries, lastSeen, touched: this.now() });
    this.prune();
    if (this.sweep === null) this.sweepIn(this.keepMs);
  }

  private sweepIn(ms: number): void {
    this.sweep = setTimeout(() => {
      this.sweep = null;
      this.prune();
      const [oldest] = this.users.values();
      if (oldest) this.sweepIn(Math.max(oldest.touched + this.keepMs - this.now(), 0) + 1);
    }, ms);
    this.sweep.unref();
  }

  private prune(): void {
    const before = this.now() - this.keepMs;
    for (const [userId, held] of this.users) {
      if (held.touched >= before) break;
      this.users.delete(userId);
    }
  }
}
