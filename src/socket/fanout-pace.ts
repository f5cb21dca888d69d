import type { Snowflake } from '../presence/model.js';
import type { PresenceSource } from '../presence/registry/registry.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';

/** A presence longer than this is large: after it goes out, its user's next update waits a while. */
export const PACED_FROM_BYTES = 64 * 1024;
/** How fast one large presence's updates may follow each other, in its bytes a second. */
export const DEFAULT_PACED_BYTES_PER_SECOND = 256 * 1024;

/**
 * Paces the fan-out of large presences. A presence of a megabyte sent to a hundred subscribers is a hundred
 * megabytes: a member rewriting a KV at the cap every second would have this process and every subscriber
 * carry that every second, and everyone else's updates wait behind it. After a large presence goes out,
 * its user's next update waits until its bytes at `bytesPerSecond` have passed; the changes in between
 * collapse into one update carrying the presence as it is then. Small presences are never held.
 */
export class FanOutPacer {
  private readonly cooling = new Map<Snowflake, { timer: NodeJS.Timeout; pending: boolean }>();

  constructor(
    private readonly send: (userId: Snowflake, snapshot: PresenceSnapshot) => void,
    /** The presence as it is now; undefined once the user is no longer monitored. */
    private readonly current: (userId: Snowflake) => PresenceSnapshot | undefined,
    /** 0: nothing is held. */
    private readonly bytesPerSecond = DEFAULT_PACED_BYTES_PER_SECOND,
  ) {}

  /** The user's presence changed to `snapshot`: sent now, or once their pause is over. */
  changed(userId: Snowflake, snapshot: PresenceSnapshot): void {
    const cooling = this.cooling.get(userId);
    if (cooling) cooling.pending = true;
    else this.deliver(userId, snapshot);
  }

  /** The user is no longer monitored: nothing waits to be sent for them. */
  forget(userId: Snowflake): void {
    clearTimeout(this.cooling.get(userId)?.timer);
    this.cooling.delete(userId);
  }

  /** Users whose next update is being held. */
  get held(): number {
    return this.cooling.size;
  }

  close(): void {
    for (const { timer } of this.cooling.values()) clearTimeout(timer);
    this.cooling.clear();
  }

  private deliver(userId: Snowflake, snapshot: PresenceSnapshot): void {
    this.send(userId, snapshot);
    const bytes = snapshot.body.length;
    if (bytes <= PACED_FROM_BYTES || this.bytesPerSecond === 0) return;
    const state = {
      pending: false,
      timer: setTimeout(
        () => {
          this.cooling.delete(userId);
          const now = state.pending ? this.current(userId) : undefined;
          if (now) this.deliver(userId, now);
        },
        (bytes / this.bytesPerSecond) * 1000,
      ),
    };
    state.timer.unref();
    this.cooling.set(userId, state);
  }
}

/**
 * Every change of `source`, paced, into `send` (the socket gateway's fan-out, the event streams'); a user
 * no longer monitored has nothing waiting. Returns what stops it.
 */
export function paceChanges(
  source: PresenceSource,
  send: (userId: Snowflake, snapshot: PresenceSnapshot) => void,
  bytesPerSecond?: number,
): () => void {
  const pacer = new FanOutPacer(send, (userId) => source.get(userId), bytesPerSecond);
  const unsubscribe = source.onChange((change) => {
    if (change.kind === 'unmonitored') pacer.forget(change.userId);
    else pacer.changed(change.userId, change.current);
  });
  return () => {
    unsubscribe();
    pacer.close();
  };
}
