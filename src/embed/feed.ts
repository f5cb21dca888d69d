import type { PresentlyEvents } from '../client/events.js';
import { PresentlyClient } from '../client/rest.js';
import type { Presence, PresenceUpdate, UserId } from '../client/types.js';

/**
 * The presences of every element of a page that reads one instance, kept live over one event stream (a
 * page of many elements would otherwise spend the few connections a browser opens to one host): first a
 * bulk read, which also says who is not there, then the stream of them all, reopened as elements come and
 * go. Where the stream cannot be had (refused, broken, or silent when it should have spoken: a filter or a
 * proxy in the way), the presences are read again every POLL_INTERVAL_MS until it speaks.
 */

/** What a watcher is told of its user. */
export type Reading =
  | { kind: 'presence'; presence: Presence }
  /** The instance answered without them: not monitored, or private (it does not say which). */
  | { kind: 'missing' }
  /** Nothing could be read yet. */
  | { kind: 'unreachable' };

export type Watcher = (reading: Reading) => void;

/** Ids one read asks for: no more than a bulk read takes. */
export const IDS_PER_READ = 50;
/** How often presences are read again while the stream cannot be had. */
export const POLL_INTERVAL_MS = 15_000;
/** A new stream that has sent nothing this long, while a watched user is there, is taken as blocked. */
export const STREAM_SILENCE_MS = 5_000;
/**
 * How often every presence is read again while the stream works: a stream says nothing of a user who went
 * private or stopped being monitored, and the element must stop showing them.
 */
export const RECHECK_INTERVAL_MS = 5 * 60_000;

interface Entry {
  watchers: Set<Watcher>;
  reading: Reading | null;
  /** Presences the stream brought: a read begun before the latest of them is older than it. */
  streamed: number;
  /** A read of this user has begun. */
  asked: boolean;
}

export class PresenceFeed {
  private readonly client: PresentlyClient;
  private readonly entries = new Map<UserId, Entry>();
  private stream: PresentlyEvents | null = null;
  /** The ids the stream was opened with, joined. */
  private streaming = '';
  /** The stream has sent a presence since it was opened, or since it last failed. */
  private heard = false;
  /** The stream has sent a presence at least once: nothing in the way buffers it. */
  private heardOnce = false;
  private recheck: ReturnType<typeof setInterval> | null = null;
  private scheduled = false;
  private silence: ReturnType<typeof setTimeout> | null = null;
  private poll: ReturnType<typeof setTimeout> | null = null;

  constructor(base: string) {
    this.client = new PresentlyClient({ baseUrl: base });
  }

  /** Tells `watcher` of `id`'s presence, now if it is known and on every change; returns the unwatch. */
  watch(id: UserId, watcher: Watcher): () => void {
    let entry = this.entries.get(id);
    if (!entry) {
      entry = { watchers: new Set(), reading: null, streamed: 0, asked: false };
      this.entries.set(id, entry);
    }
    const watched = entry;
    watched.watchers.add(watcher);
    if (watched.reading) watcher(watched.reading);
    this.schedule();
    return () => {
      watched.watchers.delete(watcher);
      if (watched.watchers.size === 0 && this.entries.get(id) === watched) this.entries.delete(id);
      this.schedule();
    };
  }

  /** Elements come in a burst (a page's markup, a move): the stream is opened once for all of them. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.sync();
    });
  }

  private sync(): void {
    const ids = [...this.entries.keys()];
    const unasked = ids.filter((id) => !this.entries.get(id)?.asked);
    if (unasked.length > 0) void this.read(unasked);
    const key = ids.join(',');
    if (key === this.streaming) return;
    this.streaming = key;
    this.stream?.close();
    this.stream = null;
    if (this.silence !== null) clearTimeout(this.silence);
    if (ids.length === 0) {
      this.stopPolling();
      if (this.recheck !== null) clearInterval(this.recheck);
      this.recheck = null;
      return;
    }
    this.heard = false;
    this.heardOnce = false;
    this.stream = this.client.events(ids, (presence) => this.streamed(presence), {
      onError: () => {
        this.heard = false;
        this.startPolling();
      },
      // Reopened after a failure, a stream that spoke before sends only what was missed: maybe nothing.
      onOpen: () => {
        if (!this.heardOnce) return;
        this.heard = true;
        this.stopPolling();
      },
    });
    this.recheck ??= setInterval(() => void this.read([...this.entries.keys()]), RECHECK_INTERVAL_MS);
    this.silence = setTimeout(() => {
      const present = [...this.entries.values()].some((entry) => entry.reading?.kind === 'presence');
      if (!this.heard && present) this.startPolling();
    }, STREAM_SILENCE_MS);
  }

  private streamed(presence: PresenceUpdate): void {
    this.heard = true;
    this.heardOnce = true;
    this.stopPolling();
    const entry = this.entries.get(presence.user_id);
    if (!entry) return;
    entry.streamed++;
    this.tell(entry, { kind: 'presence', presence });
  }

  /** Reads `ids` in bulk; what the stream brought meanwhile is newer and stays. */
  private async read(ids: UserId[]): Promise<void> {
    for (let from = 0; from < ids.length; from += IDS_PER_READ) {
      const batch = ids.slice(from, from + IDS_PER_READ);
      const asked = new Map<UserId, number>();
      for (const id of batch) {
        const entry = this.entries.get(id);
        if (!entry) continue;
        entry.asked = true;
        asked.set(id, entry.streamed);
      }
      let found: Map<UserId, Presence>;
      try {
        found = await this.client.presences([...asked.keys()]);
      } catch {
        for (const id of asked.keys()) {
          const entry = this.entries.get(id);
          if (entry && !entry.reading) this.tell(entry, { kind: 'unreachable' });
        }
        this.startPolling();
        continue;
      }
      for (const [id, streamed] of asked) {
        const entry = this.entries.get(id);
        if (!entry || entry.streamed !== streamed) continue;
        const presence = found.get(id);
        this.tell(entry, presence ? { kind: 'presence', presence } : { kind: 'missing' });
      }
    }
  }

  private startPolling(): void {
    if (this.poll !== null || this.entries.size === 0) return;
    const timer = setTimeout(async () => {
      await this.read([...this.entries.keys()]);
      // Stopped meanwhile (the stream spoke), or stopped and started again: that round is not this one's.
      if (this.poll !== timer) return;
      this.poll = null;
      if (!this.heard) this.startPolling();
    }, POLL_INTERVAL_MS);
    this.poll = timer;
  }

  private stopPolling(): void {
    if (this.poll !== null) clearTimeout(this.poll);
    this.poll = null;
  }

  private tell(entry: Entry, reading: Reading): void {
    entry.reading = reading;
    // A watcher may remove another (an element taken out by a listener): that one is told nothing more.
    for (const watcher of [...entry.watchers]) if (entry.watchers.has(watcher)) watcher(reading);
  }
}

const feeds = new Map<string, PresenceFeed>();

/** The page's feed of the instance at `base`. */
export function feedOf(base: string): PresenceFeed {
  let feed = feeds.get(base);
  if (!feed) {
    feed = new PresenceFeed(base);
    feeds.set(base, feed);
  }
  return feed;
}
