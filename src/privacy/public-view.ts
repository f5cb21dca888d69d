import type { Snowflake } from '../presence/model.js';
import { hiddenBy } from '../presence/privacy.js';
import type {
  PresenceBody,
  PresenceChange,
  PresenceListener,
  PresenceSource,
} from '../presence/registry/registry.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import type { PrivacyDirectory } from './directory.js';

/**
 * What anyone without a user's key may read: every presence of `source` but those of users whose
 * `visibility` is `private`, who are absent from it exactly as a user nobody monitors is. REST, bulk
 * reads, the card, the avatar links, the socket and the event streams all read through it, so a private
 * user is told apart from an unknown one by none of them. A user turning private is announced to its
 * listeners as no longer monitored at once; one turning public is shown, and announced as monitored, only
 * once the presence held was rendered under their new settings (on an API node that is when the ingest
 * node's new version arrives), so what they hid in the same change is never shown meanwhile.
 */
export class PublicView implements PresenceSource {
  private readonly hidden = new Set<Snowflake>();
  /** Hidden users turned public, waiting for a presence rendered under their new settings. */
  private readonly turningPublic = new Set<Snowflake>();
  private readonly listeners = new Set<PresenceListener>();
  private readonly stop: Array<() => void> = [];

  constructor(
    private readonly source: PresenceSource,
    private readonly directory: PrivacyDirectory,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Takes in the directory as loaded and starts following it: called before anything else listens to
   * the directory, so a user turning private is gone from here before their next presence is announced.
   */
  start(privateIds: Iterable<Snowflake>): void {
    for (const userId of privateIds) this.hidden.add(userId);
    this.stop.push(
      this.directory.onChange((userId) => this.visibilityMayHaveChanged(userId)),
      this.source.onChange((change) => {
        if (!this.hidden.has(change.userId)) this.emit(change);
        else if (change.kind !== 'unmonitored' && this.turningPublic.has(change.userId)) {
          this.showIfCurrent(change.userId, change.current);
        }
      }),
    );
  }

  close(): void {
    for (const stop of this.stop.splice(0)) stop();
  }

  get size(): number {
    // The count of monitored users is public (metrics, the landing page): private users are in it as
    // any monitored user is, which tells nobody who they are.
    return this.source.size;
  }

  get pendingCount(): number | undefined {
    return this.source.pendingCount;
  }

  allRendered(): Promise<void> {
    return this.source.allRendered?.() ?? Promise.resolve();
  }

  /** Whether the user's presence is kept from anyone but them. */
  isPrivate(userId: Snowflake): boolean {
    return this.hidden.size > 0 && this.hidden.has(userId);
  }

  get(userId: Snowflake): PresenceSnapshot | undefined {
    return this.isPrivate(userId) ? undefined : this.source.get(userId);
  }

  body(userId: Snowflake): PresenceBody | undefined {
    return this.isPrivate(userId) ? undefined : this.source.body(userId);
  }

  *snapshots(): Iterable<[Snowflake, PresenceSnapshot]> {
    for (const entry of this.source.snapshots()) {
      if (!this.isPrivate(entry[0])) yield entry;
    }
  }

  onChange(listener: PresenceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private visibilityMayHaveChanged(userId: Snowflake): void {
    const isPrivate = this.directory.of(userId)?.visibility === 'private';
    if (isPrivate) {
      this.turningPublic.delete(userId);
      if (this.hidden.has(userId)) return;
      this.hidden.add(userId);
      const snapshot = this.source.get(userId);
      if (snapshot) this.emit({ kind: 'unmonitored', userId, previous: snapshot, at: this.now() });
      return;
    }
    if (!this.hidden.has(userId)) return;
    const snapshot = this.source.get(userId);
    if (snapshot === undefined) {
      this.hidden.delete(userId);
      return;
    }
    this.turningPublic.add(userId);
    // The registry renders the user again right after this: their presence is looked at once it has.
    queueMicrotask(() => {
      const current = this.source.get(userId);
      if (current === undefined) {
        this.turningPublic.delete(userId);
        this.hidden.delete(userId);
      } else if (this.turningPublic.has(userId)) this.showIfCurrent(userId, current);
    });
  }

  /** Shows a user turning public once `snapshot` hides what their settings hide now. */
  private showIfCurrent(userId: Snowflake, snapshot: PresenceSnapshot): void {
    const settings = this.directory.of(userId);
    const hides = settings === undefined ? [] : hiddenBy(settings, this.now());
    const shown = snapshot.summary().privacy?.hidden ?? [];
    if (shown.length !== hides.length || shown.some((entry, i) => entry !== hides[i])) return;
    this.turningPublic.delete(userId);
    this.hidden.delete(userId);
    this.emit({ kind: 'monitored', userId, current: snapshot, at: this.now() });
  }

  private emit(change: PresenceChange): void {
    for (const listener of this.listeners) listener(change);
  }
}
