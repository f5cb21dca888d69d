import type { Logger } from 'pino';
import type { PresenceRegistry } from '../presence/registry/registry.js';

/**
 * Pending members rendered per turn of the event loop: as many as a member chunk brings, so a read or a
 * gateway frame waits no longer behind a batch than it did behind a chunk rendered as it came, and what
 * the announcements start (history look-ups) goes to the store in batches of that size.
 */
export const RENDER_BATCH = 1_000;
/** The longest rendering waits for listings under way, should one never end. */
export const MAX_RENDER_PAUSE_MS = 30_000;

export interface PendingRendererOptions {
  /** Whether a member listing is under way: rendering waits for it, as its chunks keep coming. */
  listing?: () => boolean;
  batch?: number;
  maxPauseMs?: number;
  now?: () => number;
}

/**
 * Renders the pending members, whom a listing brought in but the registry keeps unrendered
 * (`memberListed`), once the listings under way have ended, a batch per turn: their `monitored` changes
 * (history, subscribers) follow in the background while reads are answered, and a large guild's chunks
 * are taken in first. Users a lost session made stale (`guildsLost`) are rendered the same way, before
 * them and without waiting: their change is news to every subscriber.
 */
export class PendingRenderer {
  private scheduled: NodeJS.Immediate | null = null;
  private wake: NodeJS.Timeout | null = null;
  /** When rendering began to wait for a listing. */
  private pausedSince: number | null = null;
  private stopped = false;
  private readonly now: () => number;

  constructor(
    private readonly registry: Pick<
      PresenceRegistry,
      'renderPending' | 'pendingCount' | 'renderStale' | 'staleWaiting'
    >,
    private readonly logger: Logger,
    private readonly options: PendingRendererOptions = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Members were listed, a listing ended, or users were made stale: rendering goes on until none waits. */
  kick(): void {
    if (this.scheduled !== null || this.stopped) return;
    if (this.registry.staleWaiting > 0 || this.pendingMayRender()) this.scheduled = setImmediate(this.run);
  }

  /** Whether pending members wait and no listing holds them back (waking the renderer when one stops to). */
  private pendingMayRender(): boolean {
    if (this.registry.pendingCount === 0) {
      this.pausedSince = null;
      this.clearWake();
      return false;
    }
    if (this.options.listing?.()) {
      this.pausedSince ??= this.now();
      const left = this.pausedSince + (this.options.maxPauseMs ?? MAX_RENDER_PAUSE_MS) - this.now();
      if (left > 0) {
        this.wake ??= setTimeout(() => {
          this.wake = null;
          this.kick();
        }, left).unref();
        return false;
      }
    } else {
      this.pausedSince = null;
    }
    this.clearWake();
    return true;
  }

  /** Shutdown: what waits stays unrendered. */
  stop(): void {
    this.stopped = true;
    if (this.scheduled !== null) clearImmediate(this.scheduled);
    this.scheduled = null;
    this.clearWake();
  }

  private clearWake(): void {
    if (this.wake !== null) clearTimeout(this.wake);
    this.wake = null;
  }

  /** One batch: of stale users while any wait, else of pending members. */
  private readonly run = (): void => {
    this.scheduled = null;
    const batch = this.options.batch ?? RENDER_BATCH;
    const stale = this.registry.staleWaiting > 0;
    try {
      if (stale) this.registry.renderStale(batch);
      else if (this.pendingMayRender()) this.registry.renderPending(batch);
    } catch (error) {
      // A listener's failure: every listener heard of the user, who stays rendered; the rest go on.
      this.logger.error(
        { err: error },
        stale ? 'failed to announce a stale presence' : 'failed to announce a pending member',
      );
    }
    this.kick();
  };
}
