import type { Snowflake } from './snowflake-digits.js';
import { NO_SLOT, SnowflakeSlots } from './snowflake-slots.js';

const FIRST_CAPACITY = 1024;

/**
 * Snowflakes waiting their turn, each once, oldest first, as a Set keeps them: slots in typed arrays (a
 * SnowflakeSlots numbers them, a ring holds the slots in arrival order), so queued ids put no string on
 * the JS heap (why: docs/architecture.md#per-user-state-off-the-js-heap).
 */
export class SnowflakeQueue {
  private slots = new SnowflakeSlots();
  /** The slots of the queued ids in arrival order, from `head`; each slot there once, as its id is held. */
  private ring = new Int32Array(FIRST_CAPACITY);
  private head = 0;

  get size(): number {
    return this.slots.size;
  }

  has(id: Snowflake): boolean {
    return this.slots.slotOf(id) !== NO_SLOT;
  }

  /** Queues `id` last; false when it was queued already, or is not 1–20 digits. */
  add(id: Snowflake): boolean {
    const size = this.slots.size;
    const slot = this.slots.add(id);
    if (this.slots.size === size) return false;
    if (size === this.ring.length) this.grow();
    this.ring[(this.head + size) & (this.ring.length - 1)] = slot;
    return true;
  }

  /** Takes the oldest id out of the queue. */
  shift(): Snowflake | undefined {
    if (this.slots.size === 0) return undefined;
    const slot = this.ring[this.head] as number;
    this.head = (this.head + 1) & (this.ring.length - 1);
    const id = this.slots.idOf(slot);
    // Its slot goes back only once out of the ring: an id added next may take it, and is queued anew.
    this.slots.release(slot);
    // A queue drained lets its arrays go: a large guild's arrival does not hold its size in memory for good.
    if (this.slots.size === 0 && this.ring.length > FIRST_CAPACITY) this.reset();
    return id;
  }

  /** Empties the queue, keeping its room for what comes next. */
  clear(): void {
    const mask = this.ring.length - 1;
    for (let left = this.slots.size; left > 0; left--) {
      this.slots.release(this.ring[this.head] as number);
      this.head = (this.head + 1) & mask;
    }
    this.head = 0;
  }

  private reset(): void {
    this.slots = new SnowflakeSlots();
    this.ring = new Int32Array(FIRST_CAPACITY);
    this.head = 0;
  }

  /** Twice the room, the queued slots moved to its start in order. */
  private grow(): void {
    const ring = new Int32Array(this.ring.length * 2);
    ring.set(this.ring.subarray(this.head));
    ring.set(this.ring.subarray(0, this.head), this.ring.length - this.head);
    this.ring = ring;
    this.head = 0;
  }
}
