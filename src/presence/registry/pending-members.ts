import { grown, NO_SLOT } from '../../collections/snowflake-slots.js';

/**
 * Pending members: members from a member listing (or taken back after a restart) who are monitored and
 * served already, but whose presence is not rendered yet (see `PresenceRegistry`). Their slots in the
 * order they came, how many wait, and which were taken back, so their announcement says so.
 */
export class PendingMembers {
  /** From `head` on, in the order they came; some rendered, or let go, since. */
  private slots: number[] = [];
  private head = 0;
  private waiting = 0;
  /** By slot, 1 for a member taken back after a restart. */
  private restored = new Uint8Array(0);
  /** Those waiting for no pending member to be left (`whenNone`). */
  private waiters: Array<() => void> = [];

  /** Pending members not rendered yet. */
  get count(): number {
    return this.waiting;
  }

  /** The slot's member is pending from now on; `restored`: taken back after a restart. */
  add(slot: number, restored: boolean): void {
    if (restored || slot < this.restored.length) {
      if (slot >= this.restored.length) {
        this.restored = grown(this.restored, Math.max(slot + 1, this.restored.length * 2, 1024));
      }
      this.restored[slot] = restored ? 1 : 0;
    }
    this.slots.push(slot);
    this.waiting++;
  }

  /** The slot's member was rendered; returns whether they were taken back after a restart. */
  rendered(slot: number): boolean {
    const restored = this.restored[slot] === 1;
    if (restored) this.restored[slot] = 0;
    this.waiting--;
    if (this.waiting === 0) for (const resolve of this.waiters.splice(0)) resolve();
    return restored;
  }

  /**
   * The next slot in the order they came, NO_SLOT when none is left: rendered or let go since, it may hold
   * no pending member (or another one, also further on).
   */
  next(): number {
    if (this.head === this.slots.length) return NO_SLOT;
    const slot = this.slots[this.head++] as number;
    if (this.head === this.slots.length) {
      this.slots = [];
      this.head = 0;
    }
    return slot;
  }

  /** Resolves once no pending member is left. */
  whenNone(): Promise<void> {
    if (this.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
