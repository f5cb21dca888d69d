import { EMPTY, emptyBucket } from '../collections/open-addressing.js';
import { grown, NO_SLOT, powerOfTwoAtLeast, SnowflakeSlots } from '../collections/snowflake-slots.js';
import type { Snowflake } from '../presence/model.js';

/** No pair, no next or previous pair. */
const NONE = -1;
/** An empty bucket: buckets hold a pair plus one, so a new table is empty as allocated, never filled. */
const FIRST_PAIRS = 64;
const FIRST_HOLDERS = 64;
/** Arrays this many times longer than what they hold are made anew, as short as they need. */
const SPARSE = 8;
/** Arrays this full start moving into ones twice as long: 7 eighths. */
const FULL_EIGHTHS = 7;
/**
 * Pairs copied into the longer arrays per pair added meanwhile: the copy is done before the arrays are
 * full, so they never grow in one go, which for millions of pairs would stall a second.
 */
const MOVED_PER_ADD = 14;
/** Int32s in a page of memory: the system hands out a new array's memory a page at a time, as it is written. */
const PAGE_INTS = 4096 / Int32Array.BYTES_PER_ELEMENT;
/**
 * Pairs copied for the time it takes to write a page first. A move writes each page of its new tables once,
 * in order, before it copies: copies into tables of millions of buckets land on a page not written yet
 * almost every time, and the first of them would stall for a while. The other arrays fill in order.
 */
const COPIES_PER_PAGE = 32;
/**
 * Int32s each id keeps in its slot's record, beside its key (SnowflakeSlots' `room`): the id's first pair,
 * and how many holders it has.
 */
const ID_RECORD_INTS = 2;
const FIRST_PAIR = 0;
const HOLDER_COUNT = 1;
const NO_HOLDERS: Int32Array = new Int32Array(0);

/**
 * Bytes one pair costs at most in the arrays: six Int32s of its own, and two buckets of the table.
 * An id held by one holder costs its slot too (SnowflakeSlots: a record of three doubles, its key and
 * ID_RECORD_INTS; two buckets; one released entry).
 */
export const PAIR_BYTES = 8 * Int32Array.BYTES_PER_ELEMENT;
export const ID_BYTES = 3 * Float64Array.BYTES_PER_ELEMENT + 3 * Int32Array.BYTES_PER_ELEMENT;
/** What a subscription costs at most: an id of its own, in arrays that grow twice as long when full. */
export const SUBSCRIPTION_BYTES = 2 * (PAIR_BYTES + ID_BYTES);

/**
 * Which numbered holders hold which snowflakes, entirely in typed arrays: an id a holder holds is a pair
 * (the id's slot, the holder), found by an open-addressing table and linked into the id's list of pairs and
 * the holder's. However many ids are held, none is a string, Set or Map on the JS heap (why:
 * docs/architecture.md#per-user-state-off-the-js-heap): an id nobody else holds costs a few dozen bytes
 * outside it (PAIR_BYTES, ID_BYTES).
 */
export class IdSubscribers {
  private readonly ids: SnowflakeSlots;
  /** Per pair: its id's slot (NONE: a free pair), its holder, and its neighbours in both lists. */
  private pairIds: Int32Array;
  private pairHolders: Int32Array;
  private nextOfId: Int32Array;
  private previousOfId: Int32Array;
  /** Per pair its holder's next; per free pair the next free one. */
  private nextOfHolder: Int32Array;
  private previousOfHolder: Int32Array;
  /** Per bucket the pair there plus one, or EMPTY; kept at most half full. */
  private table: Int32Array;
  private firstFree = NONE;
  /** Pairs ever handed out: every pair in use is below it. */
  private used = 0;
  private count = 0;
  /** Per holder its first pair, and how many it has. */
  private holderFirsts = new Int32Array(FIRST_HOLDERS).fill(NONE);
  private holderCounts = new Int32Array(FIRST_HOLDERS);
  /**
   * While moving (into longer arrays, or shorter ones): the same pairs in the new arrays, filled a slice
   * at a time from the pairs below `copied`, and told of every add and remove meanwhile, so that once every
   * pair is copied it holds exactly what this one does.
   */
  private target: IdSubscribers | null = null;
  private copied = 0;
  /** The target's table, and the place in it, whose page is written next. */
  private touchArray = 0;
  private touchAt = 0;
  /** Pages the copies asked for so far have earned, a fraction of one each. */
  private touchCredit = 0;

  /** `pairs`, `ids`: how many to make room for at once, so that filling them never grows the arrays. */
  constructor(pairs = 0, ids = 0) {
    const length = powerOfTwoAtLeast(FIRST_PAIRS, pairs);
    this.ids = new SnowflakeSlots(ID_RECORD_INTS, ids);
    // Pairs from `used` on are never read before they are handed out: no fill needed.
    this.pairIds = new Int32Array(length);
    this.pairHolders = new Int32Array(length);
    this.nextOfId = new Int32Array(length);
    this.previousOfId = new Int32Array(length);
    this.nextOfHolder = new Int32Array(length);
    this.previousOfHolder = new Int32Array(length);
    this.table = new Int32Array(length * 2);
  }

  /** Pairs held. */
  get size(): number {
    return this.count;
  }

  /** Bytes the arrays take, outside the JS heap, those of a move under way among them. */
  get bytes(): number {
    const idSlots = this.ids.capacity;
    const pairs = this.pairIds.length;
    return (
      pairs * 6 * Int32Array.BYTES_PER_ELEMENT +
      this.table.byteLength +
      this.holderFirsts.byteLength +
      this.holderCounts.byteLength +
      idSlots * ID_BYTES +
      (this.target?.bytes ?? 0)
    );
  }

  /** Whether anybody holds `id`. */
  isHeld(id: Snowflake): boolean {
    return this.ids.slotOf(id) !== NO_SLOT;
  }

  has(holder: number, id: Snowflake): boolean {
    const slot = this.ids.slotOf(id);
    return slot !== NO_SLOT && this.find(slot, holder) !== NONE;
  }

  /** How many ids `holder` holds. */
  held(holder: number): number {
    return holder < this.holderCounts.length ? (this.holderCounts[holder] as number) : 0;
  }

  /** The holders of `id`, copied: the index may change while the caller goes through them. */
  holdersOf(id: Snowflake): Int32Array {
    const slot = this.ids.slotOf(id);
    if (slot === NO_SLOT) return NO_HOLDERS;
    const at = this.ids.roomAt(slot);
    const records = this.ids.room;
    const holders = new Int32Array(records[at + HOLDER_COUNT] as number);
    let index = 0;
    for (let pair = records[at + FIRST_PAIR] as number; pair !== NONE; pair = this.nextOfId[pair] as number) {
      holders[index++] = this.pairHolders[pair] as number;
    }
    return holders;
  }

  /** `holder` holds `id` from now on; false when it did already, or `id` is no snowflake. */
  add(holder: number, id: Snowflake): boolean {
    if (!this.put(holder, id)) return false;
    if (this.target === null) {
      if (this.nearlyFull()) this.moveInto(this.pairIds.length * 2);
      return true;
    }
    this.target.put(holder, id);
    // Arrays that would have to grow before the move is done (shorter ones, as more came): it is given up.
    if (this.target.nearlyFull()) this.target = null;
    else this.moveSome(MOVED_PER_ADD);
    return true;
  }

  /** `add` without starting or furthering a move. */
  private put(holder: number, id: Snowflake): boolean {
    const known = this.ids.size;
    const slot = this.ids.add(id);
    return slot !== NO_SLOT && this.pair(slot, holder, this.ids.size === known);
  }

  /** A copy of `from`'s pair here, as `put` does, without the id's digits. */
  private adopt(from: IdSubscribers, pair: number): void {
    const known = this.ids.size;
    const slot = this.ids.adopt(from.ids, from.pairIds[pair] as number);
    this.pair(slot, from.pairHolders[pair] as number, this.ids.size === known);
  }

  /** Pairs the id in `slot` with `holder` unless it is already (`known`: the id was held before). */
  private pair(slot: number, holder: number, known: boolean): boolean {
    if (known && this.find(slot, holder) !== NONE) return false;
    this.link(slot, holder);
    return true;
  }

  /** `holder` no longer holds `id`; false when it did not. */
  remove(holder: number, id: Snowflake): boolean {
    const slot = this.ids.slotOf(id);
    if (slot === NO_SLOT) return false;
    const bucket = this.bucketOf(slot, holder);
    if (bucket === NONE) return false;
    this.unlink(bucket);
    this.target?.remove(holder, id);
    return true;
  }

  /** Every id `holder` holds is let go; returns how many. */
  removeHolder(holder: number): number {
    return this.removeSome(holder, this.held(holder));
  }

  /** Up to `most` of the ids `holder` holds are let go; returns how many. */
  removeSome(holder: number, most: number): number {
    let removed = 0;
    for (; removed < most && this.held(holder) > 0; removed++) {
      const pair = this.holderFirsts[holder] as number;
      const slot = this.pairIds[pair] as number;
      this.target?.remove(holder, this.ids.idOf(slot));
      this.unlink(this.bucketOf(slot, holder));
    }
    return removed;
  }

  /** Whether the arrays are much longer than what they hold, as they are once a flood has gone. */
  sparse(): boolean {
    return this.pairIds.length > FIRST_PAIRS && this.count * SPARSE <= this.pairIds.length;
  }

  /** Whether the pairs are being moved into other arrays (`moveSome`). */
  get moving(): boolean {
    return this.target !== null;
  }

  /**
   * Copies up to `most` more pairs into the arrays they are moving to, or, when no move is under way, starts
   * one into arrays twice as long as the pairs need. This index is in use meanwhile: millions of pairs
   * move over many turns of the event loop, not in one. Returns the new index once it holds every pair,
   * to be used from then on in place of this one.
   */
  moveSome(most: number): IdSubscribers | null {
    if (this.target === null) this.moveInto(this.count * 2);
    const target = this.target as IdSubscribers;
    this.touchCredit += most / COPIES_PER_PAGE;
    const pages = Math.floor(this.touchCredit);
    this.touchCredit -= pages;
    if (!this.touchSome(pages)) return null;
    // Free pairs cost a read each, copied ones far more: both count, so a slice stays short however sparse.
    const end = Math.min(this.used, this.copied + most * SPARSE);
    for (let copies = 0; this.copied < end && copies < most; this.copied++) {
      if (this.pairIds[this.copied] === NONE) continue;
      target.adopt(this, this.copied);
      copies++;
    }
    return this.copied < this.used ? null : target;
  }

  /** The new index once a move under way holds every pair, to be used from then on in place of this one. */
  moved(): IdSubscribers | null {
    return this.target !== null && this.copied >= this.used ? this.target : null;
  }

  /**
   * Starts a move into arrays of `pairs` pairs, with room for the ids held now and a new one for every pair
   * they take before they are nearly full: sized by what they may hold, not by the ids' arrays here, which
   * start longer than the pairs' and would otherwise double with them, their pages never all written before
   * the pairs are full.
   */
  private moveInto(pairs: number): void {
    const length = powerOfTwoAtLeast(FIRST_PAIRS, pairs);
    const newIds = Math.max(0, (length * FULL_EIGHTHS) / 8 - this.count);
    this.target = new IdSubscribers(length, Math.ceil(((this.ids.size + newIds) * 8) / FULL_EIGHTHS));
    this.copied = 0;
    this.touchArray = 0;
    this.touchAt = 0;
    this.touchCredit = 0;
  }

  /** Writes up to `pages` more pages of the target's tables, each as it is; true once all are written. */
  private touchSome(pages: number): boolean {
    const arrays = (this.target as IdSubscribers).tables();
    for (; this.touchArray < arrays.length; this.touchArray++, this.touchAt = 0) {
      const array = arrays[this.touchArray] as Int32Array;
      for (; this.touchAt < array.length; this.touchAt += PAGE_INTS) {
        if (pages-- === 0) return false;
        array[this.touchAt] = array[this.touchAt] as number;
      }
    }
    return true;
  }

  private tables(): Int32Array[] {
    return [this.table, this.ids.buckets];
  }

  /** Whether the pairs or the ids nearly fill their arrays: time to start moving into longer ones. */
  private nearlyFull(): boolean {
    return (
      this.count * 8 >= this.pairIds.length * FULL_EIGHTHS ||
      this.ids.size * 8 >= this.ids.capacity * FULL_EIGHTHS
    );
  }

  /** A new pair of the id in `slot` and `holder`, first in both lists. */
  private link(slot: number, holder: number): void {
    if (this.firstFree === NONE && this.used === this.pairIds.length) this.grow();
    if (holder >= this.holderCounts.length) this.growHolders(holder);
    let pair = this.firstFree;
    if (pair === NONE) pair = this.used++;
    else this.firstFree = this.nextOfHolder[pair] as number;
    this.pairIds[pair] = slot;
    this.pairHolders[pair] = holder;

    const records = this.ids.room;
    const at = this.ids.roomAt(slot);
    const idFirst =
      (records[at + HOLDER_COUNT] as number) === 0 ? NONE : (records[at + FIRST_PAIR] as number);
    this.nextOfId[pair] = idFirst;
    this.previousOfId[pair] = NONE;
    if (idFirst !== NONE) this.previousOfId[idFirst] = pair;
    records[at + FIRST_PAIR] = pair;
    records[at + HOLDER_COUNT] = (records[at + HOLDER_COUNT] as number) + 1;

    const holderFirst = this.holderFirsts[holder] as number;
    this.nextOfHolder[pair] = holderFirst;
    this.previousOfHolder[pair] = NONE;
    if (holderFirst !== NONE) this.previousOfHolder[holderFirst] = pair;
    this.holderFirsts[holder] = pair;
    this.holderCounts[holder] = (this.holderCounts[holder] as number) + 1;

    this.place(pair);
    this.count++;
  }

  /** Takes the pair in `hole` out of the table and both its lists; an id left with no holder is let go. */
  private unlink(hole: number): void {
    const pair = (this.table[hole] as number) - 1;
    const slot = this.pairIds[pair] as number;
    const holder = this.pairHolders[pair] as number;
    this.empty(hole);

    const records = this.ids.room;
    const at = this.ids.roomAt(slot);
    const nextOfId = this.nextOfId[pair] as number;
    const previousOfId = this.previousOfId[pair] as number;
    if (previousOfId === NONE) records[at + FIRST_PAIR] = nextOfId;
    else this.nextOfId[previousOfId] = nextOfId;
    if (nextOfId !== NONE) this.previousOfId[nextOfId] = previousOfId;
    records[at + HOLDER_COUNT] = (records[at + HOLDER_COUNT] as number) - 1;
    if (records[at + HOLDER_COUNT] === 0) this.ids.release(slot);

    const nextOfHolder = this.nextOfHolder[pair] as number;
    const previousOfHolder = this.previousOfHolder[pair] as number;
    if (previousOfHolder === NONE) this.holderFirsts[holder] = nextOfHolder;
    else this.nextOfHolder[previousOfHolder] = nextOfHolder;
    if (nextOfHolder !== NONE) this.previousOfHolder[nextOfHolder] = previousOfHolder;
    this.holderCounts[holder] = (this.holderCounts[holder] as number) - 1;

    this.pairIds[pair] = NONE;
    this.nextOfHolder[pair] = this.firstFree;
    this.firstFree = pair;
    this.count--;
  }

  private home(slot: number, holder: number): number {
    const mixed = Math.imul(slot, 0x9e3779b1) ^ Math.imul(holder, 0x85ebca77);
    return (mixed ^ (mixed >>> 15)) & (this.table.length - 1);
  }

  private readonly homeOfPair = (pair: number): number => this.homeOf(pair);

  private homeOf(pair: number): number {
    return this.home(this.pairIds[pair] as number, this.pairHolders[pair] as number);
  }

  /** The bucket of the pair (slot, holder), or NONE. */
  private bucketOf(slot: number, holder: number): number {
    const mask = this.table.length - 1;
    for (let bucket = this.home(slot, holder); ; bucket = (bucket + 1) & mask) {
      const entry = this.table[bucket] as number;
      if (entry === EMPTY) return NONE;
      if (this.pairIds[entry - 1] === slot && this.pairHolders[entry - 1] === holder) return bucket;
    }
  }

  private find(slot: number, holder: number): number {
    const bucket = this.bucketOf(slot, holder);
    return bucket === NONE ? NONE : (this.table[bucket] as number) - 1;
  }

  private place(pair: number): void {
    const mask = this.table.length - 1;
    let bucket = this.homeOf(pair);
    while (this.table[bucket] !== EMPTY) bucket = (bucket + 1) & mask;
    this.table[bucket] = pair + 1;
  }

  private empty(hole: number): void {
    emptyBucket(this.table, hole, this.homeOfPair);
  }

  /** Twice the pairs, and a table kept at most half full. */
  private grow(): void {
    const pairs = this.pairIds.length * 2;
    this.pairIds = grown(this.pairIds, pairs);
    this.pairHolders = grown(this.pairHolders, pairs);
    this.nextOfId = grown(this.nextOfId, pairs);
    this.previousOfId = grown(this.previousOfId, pairs);
    this.nextOfHolder = grown(this.nextOfHolder, pairs);
    this.previousOfHolder = grown(this.previousOfHolder, pairs);
    this.table = new Int32Array(pairs * 2);
    for (let pair = 0; pair < this.used; pair++) if (this.pairIds[pair] !== NONE) this.place(pair);
  }

  private growHolders(holder: number): void {
    const length = powerOfTwoAtLeast(this.holderCounts.length, holder + 1);
    const firsts = new Int32Array(length).fill(NONE);
    firsts.set(this.holderFirsts);
    this.holderFirsts = firsts;
    this.holderCounts = grown(this.holderCounts, length);
  }
}
