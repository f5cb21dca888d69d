import { joinSnowflake, type Snowflake, type SnowflakeDigits, splitSnowflake } from './snowflake-digits.js';
import { grown } from './snowflake-slots.js';

const FIRST_CAPACITY = 16;

/**
 * A list of snowflakes kept as digits in typed arrays: listed ids put no string on the JS heap (why:
 * docs/architecture.md#per-user-state-off-the-js-heap). Starts small, for many short lists.
 */
export class SnowflakeList implements Iterable<Snowflake> {
  private highs = new Float64Array(FIRST_CAPACITY);
  private lows = new Float64Array(FIRST_CAPACITY);
  private lengths = new Uint8Array(FIRST_CAPACITY);
  private count = 0;
  /** The snowflake last split, kept here so splitting allocates nothing. */
  private readonly digits: SnowflakeDigits = { high: 0, low: 0, length: 0 };

  get length(): number {
    return this.count;
  }

  /** Lists `id` last; false, and nothing listed, when it is not 1–20 digits. */
  push(id: Snowflake): boolean {
    if (!splitSnowflake(id, this.digits)) return false;
    if (this.count === this.lengths.length) this.resize(this.count * 2);
    this.highs[this.count] = this.digits.high;
    this.lows[this.count] = this.digits.low;
    this.lengths[this.count] = this.digits.length;
    this.count++;
    return true;
  }

  at(index: number): Snowflake | undefined {
    if (index < 0 || index >= this.count) return undefined;
    return joinSnowflake(
      this.highs[index] as number,
      this.lows[index] as number,
      this.lengths[index] as number,
    );
  }

  *[Symbol.iterator](): Iterator<Snowflake> {
    for (let index = 0; index < this.count; index++) yield this.at(index) as Snowflake;
  }

  /** Keeps, in order, only the ids `keep` is true for; a list left much shorter gives back its room. */
  retain(keep: (id: Snowflake) => boolean): void {
    let kept = 0;
    for (let index = 0; index < this.count; index++) {
      if (!keep(this.at(index) as Snowflake)) continue;
      this.highs[kept] = this.highs[index] as number;
      this.lows[kept] = this.lows[index] as number;
      this.lengths[kept] = this.lengths[index] as number;
      kept++;
    }
    this.count = kept;
    let capacity = this.lengths.length;
    while (capacity > FIRST_CAPACITY && kept <= capacity / 4) capacity /= 2;
    if (capacity < this.lengths.length) this.resize(capacity);
  }

  private resize(capacity: number): void {
    this.highs = resized(this.highs, capacity);
    this.lows = resized(this.lows, capacity);
    this.lengths = resized(this.lengths, capacity);
  }
}

function resized<T extends Float64Array | Uint8Array>(array: T, length: number): T {
  return length > array.length ? grown(array, length) : (array.slice(0, length) as T);
}
