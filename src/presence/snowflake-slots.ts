import type { Snowflake } from './model.js';

/** A slot of no snowflake; also an empty bucket of the table. */
export const NO_SLOT = -1;
/** A snowflake splits into its low nine digits and the rest: at most eleven, exact in a double. */
const LOW_DIGITS = 9;
const ZERO = 48;
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
  /** The halves of the snowflake last split, kept here so splitting allocates nothing. */
  private high = 0;
  private low = 0;

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
    if (!this.split(id)) return NO_SLOT;
    const bucket = this.find(this.high, this.low, id.length);
    return bucket === NO_SLOT ? NO_SLOT : (this.table[bucket] as number);
  }

  /** The slot of `id`, a new one when it had none. */
  add(id: Snowflake): number {
    const known = this.slotOf(id);
    if (known !== NO_SLOT || !this.split(id)) return known;
    if (this.used === this.capacity && this.releasedCount === 0) this.grow();
    const slot = this.releasedCount > 0 ? (this.released[--this.releasedCount] as number) : this.used++;
    this.highs[slot] = this.high;
    this.lows[slot] = this.low;
    this.lengths[slot] = id.length;
    this.count++;
    this.place(slot);
    return slot;
  }

  /** Lets `id` go: its slot is free for another. Returns the slot it had, or NO_SLOT. */
  remove(id: Snowflake): number {
    if (!this.split(id)) return NO_SLOT;
    let hole = this.find(this.high, this.low, id.length);
    if (hole === NO_SLOT) return NO_SLOT;
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
    return slot;
  }

  /** The snowflake of a slot in use. */
  idOf(slot: number): Snowflake {
    const high = this.highs[slot] as number;
    const low = this.lows[slot] as number;
    const digits = high === 0 ? String(low) : `${high}${String(low).padStart(LOW_DIGITS, '0')}`;
    return digits.padStart(this.lengths[slot] as number, '0');
  }

  /** Reads the digits of `id` into `high` and `low`; false for anything but 1–20 digits. */
  private split(id: string): boolean {
    const length = id.length;
    if (length === 0 || length > 20) return false;
    const lowFrom = Math.max(length - LOW_DIGITS, 0);
    let high = 0;
    let low = 0;
    for (let i = 0; i < length; i++) {
      const digit = id.charCodeAt(i) - ZERO;
      if (digit < 0 || digit > 9) return false;
      if (i < lowFrom) high = high * 10 + digit;
      else low = low * 10 + digit;
    }
    this.high = high;
    this.low = low;
    return true;
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
