import { grown, NO_SLOT } from '../../collections/snowflake-slots.js';

/**
 * Stale users whose body does not say so yet, by slot: a byte a slot rather than a set, as a lost shard
 * may make most users stale at once. They are rendered as they are read, or in the order of their slots
 * (`next`), a batch at a time.
 */
export class StaleBacklog {
  private waiting = new Uint8Array(0);
  private count = 0;
  /** No slot below it waits. */
  private cursor = 0;

  get size(): number {
    return this.count;
  }

  /** The slot's body is to say it is stale; `end`: every slot in use is below it. */
  add(slot: number, end: number): void {
    if (slot >= this.waiting.length) this.waiting = grown(this.waiting, Math.max(slot + 1, end));
    this.waiting[slot] = 1;
    this.count++;
    this.cursor = Math.min(this.cursor, slot);
  }

  has(slot: number): boolean {
    return this.count > 0 && this.waiting[slot] === 1;
  }

  /** The slot waits no more (rendered, or current again); false when it did not wait. */
  remove(slot: number): boolean {
    if (this.waiting[slot] !== 1) return false;
    this.waiting[slot] = 0;
    this.count--;
    if (this.count === 0) this.cursor = 0;
    return true;
  }

  /** The waiting slot after the last one given, NO_SLOT when none waits. */
  next(): number {
    while (this.count > 0 && this.cursor < this.waiting.length) {
      const slot = this.cursor++;
      if (this.waiting[slot] === 1) return slot;
    }
    return NO_SLOT;
  }
}
