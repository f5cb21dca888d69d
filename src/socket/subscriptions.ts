import { SubscriptionCap } from '../limits/subscription-cap.js';
import type { Snowflake } from '../presence/model.js';
import { CommandQueue } from './command-queue.js';
import { IdSubscribers } from './id-subscribers.js';

/** Ids let go, or pairs copied into other arrays, per item of the work queue. */
export const TIDY_SLICE_PAIRS = 512;

/**
 * Who listens to whom. Subscribers are numbered, and who holds which id is kept by number in typed arrays
 * (id-subscribers.ts): an id costs a few dozen bytes outside the JS heap, not a Set, a Map entry and a
 * string on it. Every id subscribed counts against the process's cap (MAX_SUBSCRIPTIONS) until let go.
 *
 * A subscriber released hears nothing more at once, but its ids are let go, and the arrays moved into
 * shorter ones once they are sparse, a slice at a time in the work queue: twenty thousand sockets of a
 * thousand ids leaving together are millions of ids, seconds of work that would otherwise stall every
 * other client. Arrays filling up move into longer ones a few pairs per pair added (id-subscribers.ts).
 */
export class Subscriptions<S> {
  private index = new IdSubscribers();
  private readonly numbers = new Map<S, number>();
  /** Per number its subscriber; undefined: a number free to hand out again, or one still letting go. */
  private readonly subscribers: Array<S | undefined> = [];
  private readonly freeNumbers: number[] = [];
  /** Numbers of subscribers released whose ids are still being let go. */
  private readonly leaving: number[] = [];
  /** Ids the leaving still hold. */
  private leavingIds = 0;
  private tidying = false;
  private readonly toAll = new Set<S>();

  constructor(
    private readonly cap = new SubscriptionCap(0),
    private readonly work: Pick<CommandQueue, 'push'> = new CommandQueue(),
  ) {}

  /** Whether the cap has room for the ids the subscriber does not hold yet: ask before `subscribe`. */
  fits(subscriber: S, ids: readonly Snowflake[]): boolean {
    if (this.cap.fits(ids.length)) return true;
    const number = this.numbers.get(subscriber);
    let count = 0;
    for (const id of new Set(ids)) if (number === undefined || !this.index.has(number, id)) count++;
    return this.cap.fits(count);
  }

  /** Adds ids (repeats ignored), counted against the cap; returns how many ids the subscriber now holds. */
  subscribe(subscriber: S, ids: readonly Snowflake[], all: boolean): number {
    const number = this.numberOf(subscriber);
    let added = 0;
    for (const id of ids) if (this.index.add(number, id)) added++;
    this.cap.take(added);
    this.index = this.index.moved() ?? this.index;
    // Arrays moving into longer ones also move between subscribes, so that they are done before full.
    if (this.index.moving) this.tidy();
    if (all) this.toAll.add(subscriber);
    return this.index.held(number);
  }

  unsubscribe(subscriber: S, ids: readonly Snowflake[], all: boolean): void {
    if (all) this.toAll.delete(subscriber);
    const number = this.numbers.get(subscriber);
    if (number === undefined) return;
    let removed = 0;
    if (all) removed = this.index.removeHolder(number);
    else for (const id of ids) if (this.index.remove(number, id)) removed++;
    this.letGo(removed);
  }

  /**
   * Everything the subscriber held: called when its socket closes. It hears nothing from now on; its ids
   * go back to the cap as they are let go, over the next turns.
   */
  release(subscriber: S): void {
    this.toAll.delete(subscriber);
    const number = this.numbers.get(subscriber);
    if (number === undefined) return;
    this.numbers.delete(subscriber);
    this.subscribers[number] = undefined;
    this.leaving.push(number);
    this.leavingIds += this.index.held(number);
    this.tidy();
  }

  subscribedToAll(subscriber: S): boolean {
    return this.toAll.has(subscriber);
  }

  /** Whether the subscriber hears of this user's changes. */
  isSubscribed(subscriber: S, userId: Snowflake): boolean {
    if (this.toAll.has(subscriber)) return true;
    const number = this.numbers.get(subscriber);
    return number !== undefined && this.index.has(number, userId);
  }

  /** Whether anybody hears of this user's changes: most users' changes go to nobody. */
  hasSubscribers(userId: Snowflake): boolean {
    if (this.toAll.size > 0) return true;
    if (!this.index.isHeld(userId)) return false;
    // Its holders may all be subscribers released whose ids are not let go yet.
    if (this.leaving.length === 0) return true;
    for (const number of this.index.holdersOf(userId))
      if (this.subscribers[number] !== undefined) return true;
    return false;
  }

  holds(subscriber: S): number {
    const number = this.numbers.get(subscriber);
    return number === undefined ? 0 : this.index.held(number);
  }

  /** Every subscriber of the user's changes, each once. */
  *subscribersOf(userId: Snowflake): Iterable<S> {
    for (const number of this.index.holdersOf(userId)) {
      const subscriber = this.subscribers[number];
      if (subscriber !== undefined) yield subscriber;
    }
    for (const subscriber of this.toAll) {
      if (!this.index.has(this.numbers.get(subscriber) as number, userId)) yield subscriber;
    }
  }

  /** Subscriptions held across all subscribers (ids plus subscribe-to-all flags): zero when all are released. */
  get count(): number {
    return this.toAll.size + this.index.size - this.leavingIds;
  }

  get subscriberCount(): number {
    return this.numbers.size;
  }

  /** Whether no work is left in the queue: every released subscriber's ids let go, no arrays moving. */
  get tidied(): boolean {
    return !this.tidying;
  }

  /** Bytes the subscriptions to ids take, outside the JS heap, those still being let go among them. */
  get bytes(): number {
    return this.index.bytes;
  }

  private numberOf(subscriber: S): number {
    let number = this.numbers.get(subscriber);
    if (number === undefined) {
      number = this.freeNumbers.pop() ?? this.subscribers.length;
      this.numbers.set(subscriber, number);
      this.subscribers[number] = subscriber;
    }
    return number;
  }

  private letGo(removed: number): void {
    this.cap.give(removed);
    if (this.index.sparse()) this.tidy();
  }

  private tidy(): void {
    if (this.tidying) return;
    this.tidying = true;
    this.work.push(this.tidySome);
  }

  /** One slice: ids of the last subscriber released let go, or else the arrays moved some more. */
  private readonly tidySome = (): void => {
    const number = this.leaving.at(-1);
    if (number !== undefined) {
      const removed = this.index.removeSome(number, TIDY_SLICE_PAIRS);
      this.leavingIds -= removed;
      this.cap.give(removed);
      if (this.index.held(number) === 0) {
        this.leaving.pop();
        this.freeNumbers.push(number);
      }
    } else if (this.index.moving || this.index.sparse()) {
      this.index = this.index.moveSome(TIDY_SLICE_PAIRS) ?? this.index;
    }
    if (this.leaving.length > 0 || this.index.moving || this.index.sparse()) this.work.push(this.tidySome);
    else this.tidying = false;
  };
}
