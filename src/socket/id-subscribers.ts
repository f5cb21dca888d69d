import type { Snowflake } from '../presence/model.js';
import { grown, NO_SLOT, SnowflakeSlots } from '../presence/snowflake-slots.js';

/** No pair, no next or previous pair. */
const NONE = -1;
const FIRST_PAIRS = 1024;
const FIRST_HOLDERS = 64;
/** Arrays this many times longer than what they hold are made anew, as short as they need. */
const SPARSE = 8;
/** Per id in the slots' room: the id's first pair, and how many holders it has. */
const USER_ROOM_INTS = 2;
const NO_HOLDERS: Int32Array = new Int32Array(0);

/**
 * Bytes one pair costs at most in the arrays: six Int32s of its own, and two buckets of the table.
 * An id held by one holder costs its slot too (SnowflakeSlots: a record of three doubles, key and room;
 * two buckets; one released entry).
 */
export const PAIR_BYTES = 8 * Int32Array.BYTES_PER_ELEMENT;
export const ID_BYTES = 3 * Float64Array.BYTES_PER_ELEMENT + 3 * Int32Array.BYTES_PER_ELEMENT;
/** What a subscription costs at most: an id of its own, in arrays that grow twice as long when full. */
export const SUBSCRIPTION_BYTES = 2 * (PAIR_BYTES + ID_BYTES);

/**
 * Which numbered holders hold which snowflakes, entirely in typed arrays: an id a holder holds is a pair
 * (the id's slot, the holder), found by an open-addressing table and linked into the id's list of pairs and
 * the holder's. However many ids are held, none is a string, Set or Map on the JS heap: an id nobody else
 * holds costs a few dozen bytes outside it (PAIR_BYTES, ID_BYTES), and nothing for the collector to visit.
 */
export class IdSubscribers {
  private readonly ids = new SnowflakeSlots(USER_ROOM_INTS);
  /** Per pair: its id's slot (NONE: a free pair), its holder, and its neighbours in both lists. */
  private pairIds = new Int32Array(FIRST_PAIRS).fill(NONE);
  private pairHolders = new Int32Array(FIRST_PAIRS);
  private nextOfId = new Int32Array(FIRST_PAIRS);
  private previousOfId = new Int32Array(FIRST_PAIRS);
  /** Per pair its holder's next; per free pair the next free one. */
  private nextOfHolder = new Int32Array(FIRST_PAIRS);
  private previousOfHolder = new Int32Array(FIRST_PAIRS);
  /** Per bucket the pair there, or NONE; kept at most half full. */
  private table = new Int32Array(FIRST_PAIRS * 2).fill(NONE);
  private firstFree = NONE;
  /** Pairs ever handed out: every pair in use is below it. */
  private used = 0;
  private count = 0;
  /** Per holder its first pair, and how many it has. */
  private holderFirsts = new Int32Array(FIRST_HOLDERS).fill(NONE);
  private holderCounts = new Int32Array(FIRST_HOLDERS);

  /** Pairs held. */
  get size(): number {
    return this.count;
  }

  /** Bytes the arrays take, outside the JS heap. */
  get bytes(): number {
    const idSlots = this.ids.capacity;
    const pairs = this.pairIds.length;
    return (
      pairs * 6 * Int32Array.BYTES_PER_ELEMENT +
      this.table.byteLength +
      this.holderFirsts.byteLength +
      this.holderCounts.byteLength +
      idSlots * ID_BYTES
    );
  }

  /** Whether anybody holds `id`. */
  heard(id: Snowflake): boolean {
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
    const room = this.ids.room;
    const holders = new Int32Array(room[at + 1] as number);
    let index = 0;
    for (let pair = room[at] as number; pair !== NONE; pair = this.nextOfId[pair] as number) {
      holders[index++] = this.pairHolders[pair] as number;
    }
    return holders;
  }

  /** `holder` holds `id` from now on; false when it did already, or `id` is no snowflake. */
  add(holder: number, id: Snowflake): boolean {
    const known = this.ids.size;
    const slot = this.ids.add(id);
    if (slot === NO_SLOT) return false;
    if (this.ids.size === known && this.find(slot, holder) !== NONE) return false;
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
    return true;
  }

  /** Every id `holder` holds is let go; returns how many. */
  removeHolder(holder: number): number {
    const held = this.held(holder);
    while (this.held(holder) > 0) {
      const pair = this.holderFirsts[holder] as number;
      this.unlink(this.bucketOf(this.pairIds[pair] as number, holder));
    }
    return held;
  }

  /** Whether the arrays are much longer than what they hold, as they are once a flood has gone. */
  sparse(): boolean {
    return this.pairIds.length > FIRST_PAIRS && this.count * SPARSE <= this.pairIds.length;
  }

  /** The same pairs in arrays no longer than they need. */
  compacted(): IdSubscribers {
    const next = new IdSubscribers();
    for (let pair = 0; pair < this.used; pair++) {
      const slot = this.pairIds[pair] as number;
      if (slot !== NONE) next.add(this.pairHolders[pair] as number, this.ids.idOf(slot));
    }
    return next;
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

    const room = this.ids.room;
    const at = this.ids.roomAt(slot);
    const idFirst = (room[at + 1] as number) === 0 ? NONE : (room[at] as number);
    this.nextOfId[pair] = idFirst;
    this.previousOfId[pair] = NONE;
    if (idFirst !== NONE) this.previousOfId[idFirst] = pair;
    room[at] = pair;
    room[at + 1] = (room[at + 1] as number) + 1;

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
    const pair = this.table[hole] as number;
    const slot = this.pairIds[pair] as number;
    const holder = this.pairHolders[pair] as number;
    this.empty(hole);

    const room = this.ids.room;
    const at = this.ids.roomAt(slot);
    const nextOfId = this.nextOfId[pair] as number;
    const previousOfId = this.previousOfId[pair] as number;
    if (previousOfId === NONE) room[at] = nextOfId;
    else this.nextOfId[previousOfId] = nextOfId;
    if (nextOfId !== NONE) this.previousOfId[nextOfId] = previousOfId;
    room[at + 1] = (room[at + 1] as number) - 1;
    if (room[at + 1] === 0) this.ids.release(slot);

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

  private homeOf(pair: number): number {
    return this.home(this.pairIds[pair] as number, this.pairHolders[pair] as number);
  }

  /** The bucket of the pair (slot, holder), or NONE. */
  private bucketOf(slot: number, holder: number): number {
    const mask = this.table.length - 1;
    for (let bucket = this.home(slot, holder); ; bucket = (bucket + 1) & mask) {
      const pair = this.table[bucket] as number;
      if (pair === NONE) return NONE;
      if (this.pairIds[pair] === slot && this.pairHolders[pair] === holder) return bucket;
    }
  }

  private find(slot: number, holder: number): number {
    const bucket = this.bucketOf(slot, holder);
    return bucket === NONE ? NONE : (this.table[bucket] as number);
  }

  private place(pair: number): void {
    const mask = this.table.length - 1;
    let bucket = this.homeOf(pair);
    while (this.table[bucket] !== NONE) bucket = (bucket + 1) & mask;
    this.table[bucket] = pair;
  }

  /** Backward-shift deletion, as SnowflakeSlots does: no tombstones build up. */
  private empty(hole: number): void {
    const mask = this.table.length - 1;
    for (let bucket = (hole + 1) & mask; ; bucket = (bucket + 1) & mask) {
      const other = this.table[bucket] as number;
      if (other === NONE) break;
      const home = this.homeOf(other);
      const outside = hole <= bucket ? home <= hole || home > bucket : home <= hole && home > bucket;
      if (outside) {
        this.table[hole] = other;
        hole = bucket;
      }
    }
    this.table[hole] = NONE;
  }

  /** Twice the pairs, and a table kept at most half full. */
  private grow(): void {
    const pairs = this.pairIds.length * 2;
    const ids = new Int32Array(pairs).fill(NONE);
    ids.set(this.pairIds);
    this.pairIds = ids;
    this.pairHolders = grown(this.pairHolders, pairs);
    this.nextOfId = grown(this.nextOfId, pairs);
    this.previousOfId = grown(this.previousOfId, pairs);
    this.nextOfHolder = grown(this.nextOfHolder, pairs);
    this.previousOfHolder = grown(this.previousOfHolder, pairs);
    this.table = new Int32Array(pairs * 2).fill(NONE);
    for (let pair = 0; pair < this.used; pair++) if (this.pairIds[pair] !== NONE) this.place(pair);
  }

  private growHolders(holder: number): void {
    let length = this.holderCounts.length;
    while (length <= holder) length *= 2;
    const firsts = new Int32Array(length).fill(NONE);
    firsts.set(this.holderFirsts);
    this.holderFirsts = firsts;
    this.holderCounts = grown(this.holderCounts, length);
  }
}
