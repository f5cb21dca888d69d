import type { Snowflake } from '../presence/model.js';
import type { SseChunk } from './wire.js';

/** Changes the ring remembers at most: markers cost a slot each, events their bytes too. */
export const REPLAY_CHANGES = 65_536;
/** Bytes of remembered events at most; the oldest go first. */
export const REPLAY_BYTES = 16 * 1024 * 1024;
/**
 * Changes of its users one reconnect may be sent again at most; past it the stream starts afresh, one
 * presence per id, so a reconnect costs about as much whatever id it comes back with.
 */
export const REPLAY_PER_RECONNECT = 1_024;

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
 *
 * Numbers are consecutive, so a change's slot is its number modulo the ring's size; each change also
 * says how far back its user's previous one is, and each user's newest is indexed, so what a stream
 * missed is found by walking its users' own changes, never the changes of everybody else.
 */
export class ReplayRing {
  private readonly users: (Snowflake | undefined)[];
  private readonly events: (SseChunk | null)[];
  /** For each change, how many changes back its user's previous one is; 0: none before it. */
  private readonly back: Uint32Array;
  /** Each user's newest change held: at most one entry per change held. */
  private readonly newestOf = new Map<Snowflake, number>();
  private newest = 0;
  /** The oldest change still held; newest + 1 while none is. */
  private oldest = 1;
  private bytes = 0;

  constructor(
    private readonly maxChanges = REPLAY_CHANGES,
    private readonly maxBytes = REPLAY_BYTES,
    private readonly perReconnect = REPLAY_PER_RECONNECT,
  ) {
    this.users = new Array(maxChanges);
    this.events = new Array(maxChanges).fill(null);
    this.back = new Uint32Array(maxChanges);
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
    const previous = this.newestOf.get(userId);
    this.back[slot] = previous === undefined ? 0 : seq - previous;
    this.newestOf.set(userId, seq);
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

  /**
   * What a stream of `ids` missed after change `seq`; null when the ring does not reach back to it, or
   * when its users changed more than `perReconnect` times since.
   */
  since(seq: number, ids: ReadonlySet<Snowflake>): Missed | null {
    if (!this.reaches(seq)) return null;
    const found: number[] = [];
    /** Users sent afresh, each with their first change nobody streamed, to order them by it. */
    const fresh: [number, Snowflake][] = [];
    let walked = 0;
    for (const userId of ids) {
      const from = found.length;
      let unstreamed = 0;
      // A previous change older than the ring's oldest is never reached: `seq` is at least oldest - 1.
      for (let at = this.newestOf.get(userId) ?? 0; at > seq; ) {
        if (++walked > this.perReconnect) return null;
        const slot = at % this.maxChanges;
        if (this.events[slot] === null) unstreamed = at;
        else found.push(at);
        const back = this.back[slot] as number;
        if (back === 0) break;
        at -= back;
      }
      if (unstreamed === 0) continue;
      // A user sent afresh is sent as they are now: their older events would only take them back.
      found.length = from;
      fresh.push([unstreamed, userId]);
    }
    found.sort((a, b) => a - b);
    fresh.sort((a, b) => a[0] - b[0]);
    return {
      events: found.map((at) => {
        const slot = at % this.maxChanges;
        return [this.users[slot] as Snowflake, this.events[slot] as SseChunk];
      }),
      fresh: fresh.map(([, userId]) => userId),
    };
  }

  private drop(): void {
    const slot = this.oldest % this.maxChanges;
    const userId = this.users[slot];
    if (userId !== undefined && this.newestOf.get(userId) === this.oldest) this.newestOf.delete(userId);
    this.bytes -= this.events[slot]?.bytes ?? 0;
    this.users[slot] = undefined;
    this.events[slot] = null;
    this.oldest++;
  }
}
