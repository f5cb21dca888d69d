import { EMPTY, emptyBucket } from './open-addressing.js';
import { joinSnowflake, type Snowflake, type SnowflakeDigits, splitSnowflake } from './snowflake-digits.js';

/** A slot of no snowflake. */
export const NO_SLOT = -1;
/** An empty bucket: buckets hold a slot plus one, so a new table is empty as allocated, never filled. */
const FIRST_CAPACITY = 1024;
/** A key's first number: its high digits and how many digits it has, which keeps leading zeros apart. */
const LENGTHS = 32;
/** Doubles of a slot's key: its first number and its low digits. */
const KEY_DOUBLES = 2;
const INTS_PER_DOUBLE = Float64Array.BYTES_PER_ELEMENT / Int32Array.BYTES_PER_ELEMENT;

/**
 * Snowflakes numbered with small integers (slots), a slot reused once its snowflake is let go, found
 * through an open-addressing table with linear probing: everything is in typed arrays, so however many
 * ids there are, none is an object on the JS heap
 * (why: docs/architecture.md#per-user-state-off-the-js-heap).
 *
 * A slot's key is a record, and the record may have room beside the key for its owner's columns
 * (`roomInts`): a lookup that goes on to read them finds them beside the key, in the cache line it was
 * read from or the next, rather than in another array elsewhere in memory (`room`, `roomAt`).
 */
export class SnowflakeSlots {
  /** Per bucket, the slot whose snowflake is there plus one, or EMPTY. */
  private table: Int32Array;
  /** Doubles per slot's record: its key's two, then its room. */
  private readonly stride: number;
  /**
   * Per slot, a record: its high digits times LENGTHS plus its number of digits, 0 for a slot not in use;
   * then its low digits; then its room, zero for a slot handed out until its owner writes it.
   */
  private keys: Float64Array;
  /** The records again, as Int32s: the room is read and written through these. */
  private ints: Int32Array;
  private released: Int32Array;
  private releasedCount = 0;
  /** Slots ever handed out: every slot in use is below it. */
  private used = 0;
  private count = 0;
  /** The snowflake last split, kept here so splitting allocates nothing. */
  private readonly digits: SnowflakeDigits = { high: 0, low: 0, length: 0 };

  /**
   * `roomInts`: Int32s of room per slot, an even number (records are doubles). `atLeast`: slots to make
   * room for at once, so that filling them never grows the arrays.
   */
  constructor(
    private readonly roomInts = 0,
    atLeast = 0,
  ) {
    if (!Number.isInteger(roomInts / INTS_PER_DOUBLE) || roomInts < 0) {
      throw new RangeError('a slot’s room is a whole number of doubles');
    }
    this.stride = KEY_DOUBLES + roomInts / INTS_PER_DOUBLE;
    const capacity = powerOfTwoAtLeast(FIRST_CAPACITY, atLeast);
    this.table = new Int32Array(capacity * 2);
    this.released = new Int32Array(capacity);
    this.keys = new Float64Array(capacity * this.stride);
    this.ints = new Int32Array(this.keys.buffer);
  }

  get size(): number {
    return this.count;
  }

  /** How many slots there are room for: arrays kept per slot must be this long. */
  get capacity(): number {
    return this.released.length;
  }

  /** Every slot is below this. */
  get end(): number {
    return this.used;
  }

  inUse(slot: number): boolean {
    return this.keys[slot * this.stride] !== 0;
  }

  /** The records as Int32s, the slots' room among them; a new array once the slots have grown. */
  get room(): Int32Array {
    return this.ints;
  }

  /** The table's buckets, written at random places as slots are added. */
  get buckets(): Int32Array {
    return this.table;
  }

  /** Where in `room` the room of a slot below `capacity` starts. */
  roomAt(slot: number): number {
    return (slot * this.stride + KEY_DOUBLES) * INTS_PER_DOUBLE;
  }

  /** The slot of `id`, or NO_SLOT. */
  slotOf(id: Snowflake): number {
    if (!splitSnowflake(id, this.digits)) return NO_SLOT;
    const bucket = this.find(this.first(), this.digits.low);
    return bucket === NO_SLOT ? NO_SLOT : (this.table[bucket] as number) - 1;
  }

  /** The slot of `id`, a new one when it had none. */
  add(id: Snowflake): number {
    if (!splitSnowflake(id, this.digits)) return NO_SLOT;
    return this.addKey(this.first(), this.digits.low);
  }

  /** The slot here of the snowflake in `from`'s `slot`, a new one when it had none: copied without its digits. */
  adopt(from: SnowflakeSlots, slot: number): number {
    const at = slot * from.stride;
    return this.addKey(from.keys[at] as number, from.keys[at + 1] as number);
  }

  private addKey(first: number, low: number): number {
    const bucket = this.find(first, low);
    if (bucket !== NO_SLOT) return (this.table[bucket] as number) - 1;
    if (this.used === this.capacity && this.releasedCount === 0) this.grow();
    const slot = this.releasedCount > 0 ? (this.released[--this.releasedCount] as number) : this.used++;
    this.keys[slot * this.stride] = first;
    this.keys[slot * this.stride + 1] = low;
    this.count++;
    this.place(slot);
    return slot;
  }

  /** Lets `id` go: its slot is free for another. Returns the slot it had, or NO_SLOT. */
  remove(id: Snowflake): number {
    if (!splitSnowflake(id, this.digits)) return NO_SLOT;
    const bucket = this.find(this.first(), this.digits.low);
    if (bucket === NO_SLOT) return NO_SLOT;
    const slot = (this.table[bucket] as number) - 1;
    this.empty(bucket);
    return slot;
  }

  /** Lets the snowflake of a slot in use go, as `remove` does, without its id; a slot not in use stays so. */
  release(slot: number): void {
    if (!this.inUse(slot)) return;
    const mask = this.table.length - 1;
    let bucket = this.homeOf(slot);
    while (this.table[bucket] !== slot + 1) bucket = (bucket + 1) & mask;
    this.empty(bucket);
  }

  /** The snowflake of a slot in use. */
  idOf(slot: number): Snowflake {
    const first = this.keys[slot * this.stride] as number;
    const length = first % LENGTHS;
    return joinSnowflake((first - length) / LENGTHS, this.keys[slot * this.stride + 1] as number, length);
  }

  /** Takes the snowflake in `hole` out of the table, and frees its slot. */
  private empty(hole: number): void {
    const slot = (this.table[hole] as number) - 1;
    emptyBucket(this.table, hole, this.homeOfSlot);
    this.keys[slot * this.stride] = 0;
    const room = this.roomAt(slot);
    this.ints.fill(0, room, room + this.roomInts);
    this.released[this.releasedCount++] = slot;
    this.count--;
  }

  /** The key's first number (see `keys`) of the snowflake last split. */
  private first(): number {
    return this.digits.high * LENGTHS + this.digits.length;
  }

  private home(first: number, low: number): number {
    const mixed = Math.imul(first | 0, 0x9e3779b1) ^ Math.imul(low | 0, 0x85ebca77);
    return (mixed ^ (mixed >>> 15)) & (this.table.length - 1);
  }

  private readonly homeOfSlot = (slot: number): number => this.homeOf(slot);

  private homeOf(slot: number): number {
    return this.home(this.keys[slot * this.stride] as number, this.keys[slot * this.stride + 1] as number);
  }

  /** The bucket holding this snowflake, or NO_SLOT. */
  private find(first: number, low: number): number {
    const mask = this.table.length - 1;
    for (let bucket = this.home(first, low); ; bucket = (bucket + 1) & mask) {
      const entry = this.table[bucket] as number;
      if (entry === EMPTY) return NO_SLOT;
      const at = (entry - 1) * this.stride;
      if (this.keys[at + 1] === low && this.keys[at] === first) return bucket;
    }
  }

  private place(slot: number): void {
    const mask = this.table.length - 1;
    let bucket = this.homeOf(slot);
    while (this.table[bucket] !== EMPTY) bucket = (bucket + 1) & mask;
    this.table[bucket] = slot + 1;
  }

  /** Twice the slots, and a table kept at most half full. */
  private grow(): void {
    const capacity = this.capacity * 2;
    this.keys = grown(this.keys, capacity * this.stride);
    this.ints = new Int32Array(this.keys.buffer);
    this.released = grown(this.released, capacity);
    this.table = new Int32Array(capacity * 2);
    for (let slot = 0; slot < this.used; slot++) if (this.inUse(slot)) this.place(slot);
  }
}

/** The first of `first`, twice `first`, four times… that is at least `count`. */
export function powerOfTwoAtLeast(first: number, count: number): number {
  let length = first;
  while (length < count) length *= 2;
  return length;
}

type TypedArray = Int32Array | Uint8Array | Uint16Array | Uint32Array | Float64Array;

/** `array` copied into a longer one of the same kind; the rest zero. */
export function grown<T extends TypedArray>(array: T, length: number): T {
  const next = new (array.constructor as new (length: number) => T)(length);
  next.set(array as never);
  return next;
}
