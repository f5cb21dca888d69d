import type { Snowflake } from '../presence/model.js';

/**
 * Who listens to whom. Each subscriber's own subscriptions are kept next to the index, so releasing a
 * closed socket removes exactly what it added.
 */
export class Subscriptions<S> {
  private readonly byUser = new Map<Snowflake, Set<S>>();
  private readonly toAll = new Set<S>();
  private readonly bySubscriber = new Map<S, Set<Snowflake>>();

  /** Adds ids (repeats ignored); returns how many ids the subscriber now holds. */
  subscribe(subscriber: S, ids: readonly Snowflake[], all: boolean): number {
    let own = this.bySubscriber.get(subscriber);
    if (!own) {
      own = new Set();
      this.bySubscriber.set(subscriber, own);
    }
    for (const id of ids) {
      if (own.has(id)) continue;
      own.add(id);
      let set = this.byUser.get(id);
      if (!set) {
        set = new Set();
        this.byUser.set(id, set);
      }
      set.add(subscriber);
    }
    if (all) this.toAll.add(subscriber);
    return own.size;
  }

  unsubscribe(subscriber: S, ids: readonly Snowflake[], all: boolean): void {
    const own = this.bySubscriber.get(subscriber);
    if (all) this.toAll.delete(subscriber);
    if (!own) return;
    for (const id of all ? [...own] : ids) {
      if (!own.delete(id)) continue;
      const set = this.byUser.get(id);
      set?.delete(subscriber);
      if (set?.size === 0) this.byUser.delete(id);
    }
  }

  /** Everything the subscriber held: called when its socket closes. */
  release(subscriber: S): void {
    this.unsubscribe(subscriber, [], true);
    this.bySubscriber.delete(subscriber);
  }

  subscribedToAll(subscriber: S): boolean {
    return this.toAll.has(subscriber);
  }

  /** Whether the subscriber hears of this user's changes. */
  isSubscribed(subscriber: S, userId: Snowflake): boolean {
    return this.toAll.has(subscriber) || this.byUser.get(userId)?.has(subscriber) === true;
  }

  /** Whether anybody hears of this user's changes: most users' changes go to nobody. */
  heard(userId: Snowflake): boolean {
    return this.toAll.size > 0 || this.byUser.has(userId);
  }

  holds(subscriber: S): number {
    return this.bySubscriber.get(subscriber)?.size ?? 0;
  }

  /** Every subscriber of the user's changes, each once. */
  *subscribersOf(userId: Snowflake): Iterable<S> {
    const specific = this.byUser.get(userId);
    if (specific) yield* specific;
    for (const subscriber of this.toAll) {
      if (!specific?.has(subscriber)) yield subscriber;
    }
  }

  /** Subscriptions held across all subscribers (ids plus subscribe-to-all flags): zero when all are released. */
  get count(): number {
    let count = this.toAll.size;
    for (const set of this.byUser.values()) count += set.size;
    return count;
  }

  get subscriberCount(): number {
    return this.bySubscriber.size;
  }
}
