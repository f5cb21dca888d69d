import type { Snowflake } from '../presence/model.js';
import type { SseChunk } from './wire.js';

/** Changes the ring remembers at most: markers cost a slot each, events their bytes too. */
export const REPLAY_CHANGES = 65_536;
/** Bytes of remembered events at most; the oldest go first. */
export const REPLAY_BYTES = 16 * 1024 * 1024;

/** What a stream missed since an id: the events to send again, and the users to send afresh instead. */
export interface Missed {
  /** In the order they were sent, with whose presence each carries. */
  events: [Snowflake, SseChunk][];
  /** Users who changed while nobody streamed them: no event was made, their presence as it is now is sent. */
  fresh: Snowflake[];
}

/**
 * The changes of this process, numbered 1, 2, 3… in the order streams were sent them, the newest kept.
 * A change somebody streamed keeps its event; one nobody streamed keeps only whose it was (no event is made
 * for nobody), so a stream that comes back still learns that user changed. A stream that reconnects with
 * the number of the last event it had is sent what it missed, or told the ring no longer reaches back.
 */
export class ReplayRing {
  private readonly users: (Snowflake | undefined)[];
  private readonly events: (SseChunk | null)[];
  private newest = 0;
  /** The oldest change still held; newest + 1 while none is. */
  private oldest = 1;
  private bytes = 0;

  constructor(
    private readonly maxChanges = REPLAY_CHANGES,
    private readonly maxBytes = REPLAY_BYTES,
  ) {
    this.users = new Array(maxChanges);
    this.events = new Array(maxChanges).fill(null);
  }

  /** The number of the newest change; 0 before any. */
  get head(): number {
    return this.newest;
  }

  /** Numbers the user's change (`head` + 1) and remembers it, with its event (null: nobody streamed it). */
  push(userId: Snowflake, event: SseChunk | null): number {
    const seq = ++this.newest;
    if (seq - this.oldest >= this.maxChanges) this.drop();
    const slot = seq % this.maxChanges;
    this.users[slot] = userId;
    this.events[slot] = event;
    this.bytes += event?.bytes ?? 0;
    while (this.bytes > this.maxBytes && this.oldest < seq) this.drop();
    return seq;
  }

  /** The number `seq` is a change the ring can tell what came after: one of its own, not too old. */
  reaches(seq: number): boolean {
    return seq >= this.oldest - 1 && seq <= this.newest;
  }

  /** What a stream of `ids` missed after change `seq`; null when the ring does not reach back to it. */
  since(seq: number, ids: ReadonlySet<Snowflake>): Missed | null {
    if (!this.reaches(seq)) return null;
    const fresh = new Set<Snowflake>();
    const found: [Snowflake, SseChunk][] = [];
    for (let at = seq + 1; at <= this.newest; at++) {
      const slot = at % this.maxChanges;
      const userId = this.users[slot] as Snowflake;
      if (!ids.has(userId)) continue;
      const event = this.events[slot];
      if (event) found.push([userId, event]);
      else fresh.add(userId);
    }
    // A user sent afresh is sent as they are now: their older events would only take them back.
    return { events: found.filter(([userId]) => !fresh.has(userId)), fresh: [...fresh] };
  }

  private drop(): void {
    const slot = this.oldest % this.maxChanges;
    this.bytes -= this.events[slot]?.bytes ?? 0;
    this.users[slot] = undefined;
    this.events[slot] = null;
    this.oldest++;
  }
}
