import type { Snowflake } from './model.js';
import { joinSnowflake, type SnowflakeDigits, splitSnowflake } from './snowflake-digits.js';

/** A slot of no snowflake; also an empty bucket of the table. */
export const NO_SLOT = -1;
const FIRST_CAPACITY = 1024;

/**
 * Snowflakes numbered with small integers (slots), a slot reused once its snowflake is let go, found
 * through an open-addressing table with linear probing: everything is in typed arrays, so a million ids
 * put no object on the JS heap for the garbage collector to visit.
 */
export class SnowflakeSlots {
  /** Per bucket, the slot whose snowflake is there, or NO_SLOT. */
  private table = new Int32Array(FIRST_CAPACITY * 2).fill(NO_SLOT);
  private highs = new Float64Array(FIRST_CAPACITY);
  private lows = new Float64Array(FIRST_CAPACITY);
  /** Digits of each slot's snowflake; 0 for a slot not in use. */
  private lengths = new Uint8Array(FIRST_CAPACITY);
  private released = new Int32Array(FIRST_CAPACITY);
  private releasedCount = 0;
  /** Slots ever handed out: every slot in use is below it. */
  private used = 0;
  private count = 0;
  /** The snowflake last split, kept here so splitting allocates nothing. */
  private readonly digits: SnowflakeDigits = { high: 0, low: 0, length: 0 };

  get size(): number {
    return this.count;
  }

  /** How many slots there are room for: arrays kept per slot must be this long. */
  get capacity(): number {
    return this.lengths.length;
  }

  /** Every slot is below this. */
  get end(): number {
    return this.used;
  }

  inUse(slot: number): boolean {
    return this.lengths[slot] !== 0;
  }

  /** The slot of `id`, or NO_SLOT. */
  slotOf(id: Snowflake): number {
    if (!splitSnowflake(id, this.digits)) return NO_SLOT;
    const bucket = this.find(this.digits.high, this.digits.low, this.digits.length);
    return bucket === NO_SLOT ? NO_SLOT : (this.table[bucket] as number);
  }

  /** The slot of `id`, a new one when it had none. */
  add(id: Snowflake): number {
    const known = this.slotOf(id);
    if (known !== NO_SLOT || !splitSnowflake(id, this.digits)) return known;
    if (this.used === this.capacity && this.releasedCount === 0) this.grow();
    const slot = this.releasedCount > 0 ? (this.released[--this.releasedCount] as number) : this.used++;
    this.highs[slot] = this.digits.high;
    this.lows[slot] = this.digits.low;
    this.lengths[slot] = this.digits.length;
    this.count++;
    this.place(slot);
    return slot;
  }

  /** Lets `id` go: its slot is free for another. Returns the slot it had, or NO_SLOT. */
  remove(id: Snowflake): number {
    if (!splitSnowflake(id, this.digits)) return NO_SLOT;
    const bucket = this.find(this.digits.high, this.digits.low, this.digits.length);
    if (bucket === NO_SLOT) return NO_SLOT;
    const slot = this.table[bucket] as number;
    this.empty(bucket);
    return slot;
  }

  /** Lets the snowflake of a slot in use go, as `remove` does, without its id. */
  release(slot: number): void {
    const mask = this.table.length - 1;
    let bucket = this.home(this.highs[slot] as number, this.lows[slot] as number);
    while (this.table[bucket] !== slot) bucket = (bucket + 1) & mask;
    this.empty(bucket);
  }

  /** The snowflake of a slot in use. */
  idOf(slot: number): Snowflake {
    return joinSnowflake(this.highs[slot] as number, this.lows[slot] as number, this.lengths[slot] as number);
  }

  /** Takes the snowflake in `hole` out of the table, and frees its slot. */
  private empty(hole: number): void {
    const slot = this.table[hole] as number;
    const mask = this.table.length - 1;
    // Backward-shift deletion: each later entry of the run that may sit in the hole moves into it, so a
    // probe never stops early at a gap and no tombstones build up.
    for (let bucket = (hole + 1) & mask; ; bucket = (bucket + 1) & mask) {
      const other = this.table[bucket] as number;
      if (other === NO_SLOT) break;
      const home = this.home(this.highs[other] as number, this.lows[other] as number);
      const outside = hole <= bucket ? home <= hole || home > bucket : home <= hole && home > bucket;
      if (outside) {
        this.table[hole] = other;
        hole = bucket;
      }
    }
    this.table[hole] = NO_SLOT;
    this.lengths[slot] = 0;
    this.released[this.releasedCount++] = slot;
    this.count--;
  }

  private home(high: number, low: number): number {
    const mixed = Math.imul(high | 0, 0x9e3779b1) ^ Math.imul(low | 0, 0x85ebca77);
    return (mixed ^ (mixed >>> 15)) & (this.table.length - 1);
  }

  /** The bucket holding this snowflake, or NO_SLOT. */
  private find(high: number, low: number, length: number): number {
    const mask = this.table.length - 1;
    for (let bucket = this.home(high, low); ; bucket = (bucket + 1) & mask) {
      const slot = this.table[bucket] as number;
      if (slot === NO_SLOT) return NO_SLOT;
      if (this.lows[slot] === low && this.highs[slot] === high && this.lengths[slot] === length)
        return bucket;
    }
  }

  private place(slot: number): void {
    const mask = this.table.length - 1;
    let bucket = this.home(this.highs[slot] as number, this.lows[slot] as number);
    while (this.table[bucket] !== NO_SLOT) bucket = (bucket + 1) & mask;
    this.table[bucket] = slot;
  }

  /** Twice the slots, and a table kept at most half full. */
  private grow(): void {
    const capacity = this.capacity * 2;
    this.highs = grown(this.highs, capacity);
    this.lows = grown(this.lows, capacity);
    this.lengths = grown(this.lengths, capacity);
    this.released = grown(this.released, capacity);
    this.table = new Int32Array(capacity * 2).fill(NO_SLOT);
    for (let slot = 0; slot < this.used; slot++) if (this.lengths[slot] !== 0) this.place(slot);
  }
}

type TypedArray = Int32Array | Uint8Array | Uint16Array | Uint32Array | Float64Array;

/** `array` copied into a longer one of the same kind; the rest zero. */
export function grown<T extends TypedArray>(array: T, length: number): T {
  const next = new (array.constructor as new (length: number) => T)(length);
  next.set(array as never);
  return next;
}
