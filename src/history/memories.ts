import { grown, NO_SLOT, SnowflakeSlots } from '../collections/snowflake-slots.js';
import { type HistoryMemory, memoryOf } from '../model/history.js';
import type { DiscordStatus, Snowflake } from '../presence/model.js';

/** A memory's status as a number: none, then each status. */
const STATUSES: readonly (DiscordStatus | null)[] = [null, 'online', 'idle', 'dnd', 'offline'];
/** Per slot: 0 when nothing is held. */
const NOTHING = 0;
/** Per slot: the memory has a play, held in `playing`. */
const PLAYING = 255;

/**
 * What the history rules remember, per user, for a million users: most remember a status alone, which is
 * a byte per user in a typed array (its status and whether it was seen live); those who played something
 * keep their last play, an object, in a map by slot. A user who plays nothing is no object on the JS heap
 * (why: docs/architecture.md#per-user-state-off-the-js-heap).
 */
export class HistoryMemories {
  private readonly slots = new SnowflakeSlots();
  private codes = new Uint8Array(this.slots.capacity);
  private readonly playing = new Map<number, HistoryMemory>();
  /** Ids that are no snowflake, which the registry never hands on: kept apart, should one come. */
  private readonly others = new Map<string, HistoryMemory>();

  get size(): number {
    return this.slots.size + this.others.size;
  }

  get(userId: Snowflake): HistoryMemory | undefined {
    const slot = this.slots.slotOf(userId);
    if (slot === NO_SLOT) return this.others.get(userId);
    return this.memoryAt(slot);
  }

  set(userId: Snowflake, memory: HistoryMemory): void {
    const slot = this.slots.add(userId);
    if (slot === NO_SLOT) {
      this.others.set(userId, memory);
      return;
    }
    if (slot >= this.codes.length) this.codes = grown(this.codes, this.slots.capacity);
    if (memory.play === null) {
      const status = STATUSES.indexOf(memory.status);
      if (status < 0) throw new RangeError(`no such status: ${memory.status}`);
      this.codes[slot] = 1 + status * 2 + (memory.live ? 1 : 0);
      this.playing.delete(slot);
    } else {
      this.codes[slot] = PLAYING;
      this.playing.set(slot, memory);
    }
  }

  delete(userId: Snowflake): void {
    const slot = this.slots.remove(userId);
    if (slot === NO_SLOT) {
      this.others.delete(userId);
      return;
    }
    this.codes[slot] = NOTHING;
    this.playing.delete(slot);
  }

  /** Every user's memory. */
  *entries(): Iterable<[Snowflake, HistoryMemory]> {
    for (let slot = 0; slot < this.slots.end; slot++) {
      if (this.slots.inUse(slot)) yield [this.slots.idOf(slot), this.memoryAt(slot)];
    }
    yield* this.others;
  }

  private memoryAt(slot: number): HistoryMemory {
    const code = this.codes[slot] as number;
    if (code === PLAYING) return this.playing.get(slot) as HistoryMemory;
    const status = STATUSES[(code - 1) >> 1] as DiscordStatus | null;
    return memoryOf(status, null, ((code - 1) & 1) === 1);
  }
}
