import { NO_SLOT } from '../../collections/snowflake-slots.js';
import type { DiscordUser, Kv, Profile, RawPresence, Snowflake } from '../model.js';
import { OFFLINE_PRESENCE } from '../normalize/raw.js';
import { withoutImageUrls } from '../normalize/user-images.js';
import { isSnowflake } from '../snowflake.js';
import { GuildMemberships } from './guild-memberships.js';
import { GuildSyncs } from './guild-syncs.js';
import { applyDelta, applyDeltaToBytes, type KvDelta } from './kv-delta.js';
import { PendingMembers } from './pending-members.js';
import {
  observedAt,
  PresenceRenderer,
  type Rendered,
  type RenderOptions,
  rowOf,
  snapshotOf,
} from './presence-renderer.js';
import { type Merged, PresenceSources } from './presence-sources.js';
import { PresenceTable } from './presence-table.js';
import { LARGE_BODY_BYTES, type PresenceSnapshot, sameBody } from './snapshot.js';
import { StaleBacklog } from './stale-backlog.js';

/**
 * `monitored`: the user now shares a guild with the bot; `updated`: the normalized presence changed;
 * `unmonitored`: the last shared guild is gone. `at`: when it was seen (epoch ms), the one moment history
 * and everything that reports it use.
 */
export type PresenceChange =
  | {
      kind: 'monitored';
      userId: Snowflake;
      current: PresenceSnapshot;
      at: number;
      /** Announced as a pending member got rendered: the registry's `onPending` listeners heard of them. */
      wasPending?: true;
      /**
       * Taken back from what a previous process saved (`restore`), as it kept them: not a change seen now,
       * so `at` is when Discord last reported it, and what records changes (history) has it already.
       */
      restored?: true;
    }
  | { kind: 'updated'; userId: Snowflake; previous: PresenceSnapshot; current: PresenceSnapshot; at: number }
  | { kind: 'unmonitored'; userId: Snowflake; previous: PresenceSnapshot; at: number };

export type PresenceListener = (change: PresenceChange) => void;

/** What a REST read writes of a presence: its body and the body's digest, as they are kept. */
export interface PresenceBody {
  /** `PresenceSnapshot.body`. */
  body: string | Buffer;
  /** `PresenceSnapshot.digest` as base64url text. */
  digest: string;
}

/** What a reader (REST, socket) needs: the current snapshot of a monitored user. */
export interface PresenceView {
  get(userId: Snowflake): PresenceSnapshot | undefined;
  /** The current body of a monitored user, without a snapshot made for it. */
  body(userId: Snowflake): PresenceBody | undefined;
  readonly size: number;
}

/** A view that also says when it changes and lists everyone: what the socket gateway reads. */
export interface PresenceSource extends PresenceView {
  onChange(listener: PresenceListener): () => void;
  snapshots(): Iterable<[Snowflake, PresenceSnapshot]>;
  /** Pending members (not rendered yet): each is announced as monitored once it is. None when absent. */
  readonly pendingCount?: number;
  /** Resolves once no pending member waits to be rendered. */
  allRendered?(): Promise<void>;
}

/**
 * What a pending member is kept as until rendered: when listed (or last reported), the user and the raw
 * presence. Saved across a restart as its JSON (`SavedPresence.text`).
 */
type PendingText = [number, DiscordUser, RawPresence];
const RESTORED_CHANGE = { restored: true } as const;

/**
 * A monitored user as saved across a restart of the process (see `PresenceRegistry.saved`): the guilds
 * they are seen through, whether they are stale, and what their presence is rendered from as a pending
 * member's is, so that taking them back parses nothing.
 */
export interface SavedPresence {
  userId: Snowflake;
  guildIds: Snowflake[];
  stale: boolean;
  /** `[observed_at, user, raw presence]` as JSON. */
  text: string;
}

/** What rendering needs besides the presence (see `RenderOptions`), and the clock. */
export interface RegistryOptions extends RenderOptions {
  now?: () => number;
}

/**
 * What the presence of a user is rendered again for: a user merged, a raw presence or a KV that changed
 * (the current ones otherwise), and whether Discord reported it: a change it reported is observed then.
 */
interface Update {
  merged?: Merged | null;
  raw?: RawPresence | null;
  kvJson?: string | Buffer;
  reported?: boolean;
}

/**
 * One presence per user across every guild the user shares with the bot. Fed with what the gateway says
 * (members, presences, removals) in domain terms; emits a change only when the normalized view changes,
 * so per-guild copies of one update emit nothing.
 *
 * It puts together: who is monitored and through which guilds (guild-memberships.ts, guild-syncs.ts);
 * each user's presence as its rendered text and a few numbers (presence-table.ts), rendered by
 * presence-renderer.ts and rendered again from what is kept (presence-sources.ts); and what waits to be
 * rendered (pending-members.ts, stale-backlog.ts).
 *
 * A member first seen in a member listing (`memberListed`) is a pending member: monitored and served,
 * kept as the payload it came in until it is rendered, when anything asks for it or about it, or when
 * `renderPending` gets to it. A listing of a large guild is then served as soon as it has been taken in,
 * rather than once every member in it has been rendered and announced; its `monitored` changes follow,
 * each with the moment it was listed.
 *
 * Each presence says how current it is (`Freshness`): `observed_at`, the moment Discord last reported a
 * change of what it shows, and `stale`, set while every guild the user is seen through is lost (its
 * shard's session ended, `guildsLost`) until Discord reports the user's presence again. The users a lost
 * shard makes stale are rendered as they are read or by `renderStale`, a batch at a time, like pending
 * members.
 */
export class PresenceRegistry implements PresenceSource {
  private readonly table = new PresenceTable();
  private readonly memberships = new GuildMemberships();
  private readonly syncs = new GuildSyncs();
  private readonly sources = new PresenceSources(this.table);
  private readonly pending = new PendingMembers();
  private readonly staleBacklog = new StaleBacklog();
  private readonly listeners = new Set<PresenceListener>();
  private readonly pendingListeners = new Set<(userId: Snowflake) => void>();
  private readonly renderer: PresenceRenderer;
  private readonly now: () => number;

  constructor(options: RegistryOptions) {
    this.now = options.now ?? Date.now;
    this.renderer = new PresenceRenderer(options, this.now);
  }

  /** Monitored users, pending ones included. */
  get size(): number {
    return this.table.size;
  }

  /** Pending members: monitored, not rendered yet. */
  get pendingCount(): number {
    return this.pending.count;
  }

  /** Users whose presence is stale (see the class), rendered so or not yet. */
  get staleCount(): number {
    return this.table.staleCount;
  }

  /** Stale users whose presence does not say so yet: `renderStale` renders them. */
  get staleWaiting(): number {
    return this.staleBacklog.size;
  }

  /** Resolves once no pending member is left. */
  allRendered(): Promise<void> {
    return this.pending.whenNone();
  }

  get(userId: Snowflake): PresenceSnapshot | undefined {
    const slot = this.table.slotOf(userId);
    if (slot === NO_SLOT) return undefined;
    this.catchUp(slot);
    return this.table.snapshot(slot);
  }

  body(userId: Snowflake): PresenceBody | undefined {
    const slot = this.table.slotOf(userId);
    if (slot === NO_SLOT) return undefined;
    this.catchUp(slot);
    return { body: this.table.body(slot), digest: this.table.digestText(slot) };
  }

  *snapshots(): Iterable<[Snowflake, PresenceSnapshot]> {
    for (let slot = 0; slot < this.table.end; slot++) {
      if (!this.table.inUse(slot)) continue;
      this.catchUp(slot);
      yield [this.table.idOf(slot), this.table.snapshot(slot)];
    }
  }

  /** Every monitored user's id, rendering none of them (see `isPending`). */
  *userIds(): Iterable<Snowflake> {
    for (let slot = 0; slot < this.table.end; slot++) {
      if (this.table.inUse(slot)) yield this.table.idOf(slot);
    }
  }

  /**
   * Every monitored user as `restore` takes them back, rendering none: what a restarted process that
   * resumes its Discord sessions starts from, since nothing it kept is sent again.
   */
  *saved(): Iterable<SavedPresence> {
    for (let slot = 0; slot < this.table.end; slot++) {
      if (!this.table.inUse(slot)) continue;
      const userId = this.table.idOf(slot);
      const guildIds = this.memberships.guildsOf(slot);
      const stale = this.table.stale(slot);
      if (this.table.isPending(slot)) {
        yield { userId, guildIds, stale, text: this.table.pendingText(slot) };
        continue;
      }
      const snapshot = this.table.snapshot(slot);
      const pending: PendingText = [
        this.table.observedAt(slot),
        withoutImageUrls(this.sources.user(slot, snapshot)),
        this.sources.raw(slot, snapshot),
      ];
      yield { userId, guildIds, stale, text: JSON.stringify(pending) };
    }
  }

  /**
   * Takes back a user `saved` gave, as a pending member (see the class) whose presence says when Discord
   * reported it; a user monitored already is left as they are.
   */
  restore(saved: SavedPresence): void {
    const { userId, guildIds, text } = saved;
    if (!isSnowflake(userId) || guildIds.length === 0 || this.table.slotOf(userId) !== NO_SLOT) return;
    let slot: number;
    if (text.length >= LARGE_BODY_BYTES) {
      const [observed, user, raw] = JSON.parse(text) as PendingText;
      if (user?.id !== userId) return;
      this.firstSeen(guildIds[0] as Snowflake, user, raw, observed, true);
      slot = this.table.slotOf(userId);
    } else {
      slot = this.table.addPending(userId, text);
      this.pending.add(slot, true);
    }
    for (const guildId of guildIds) this.memberships.join(slot, guildId);
    if (saved.stale) this.markStale(slot);
    if (this.table.isPending(slot)) for (const listener of this.pendingListeners) listener(userId);
  }

  /** Whether the user is a pending member, not rendered yet: announced as monitored once they are. */
  isPending(userId: Snowflake): boolean {
    const slot = this.table.slotOf(userId);
    return slot !== NO_SLOT && this.table.isPending(slot);
  }

  /** The store revision of the KV inside the user's presence; 0 before any. */
  kvRevisionOf(userId: Snowflake): number {
    const slot = this.table.slotOf(userId);
    return slot === NO_SLOT ? 0 : this.table.kvRevision(slot);
  }

  /** Whether the user is monitored as a member of the guild. */
  isMemberOf(guildId: Snowflake, userId: Snowflake): boolean {
    const slot = this.table.slotOf(userId);
    return slot !== NO_SLOT && this.memberships.guildsOf(slot).includes(guildId);
  }

  isMonitored(userId: Snowflake): boolean {
    return this.table.slotOf(userId) !== NO_SLOT;
  }

  /** The guilds the bot knows members of. */
  guildIds(): Snowflake[] {
    return this.memberships.guildIds();
  }

  memberCount(guildId: Snowflake): number {
    return this.memberships.count(guildId);
  }

  onChange(listener: PresenceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Each pending member, as they come: what is stored of them can be read meanwhile. Their `monitored`
   * change follows when they are rendered, marked `wasPending`.
   */
  onPending(listener: (userId: Snowflake) => void): () => void {
    this.pendingListeners.add(listener);
    return () => this.pendingListeners.delete(listener);
  }

  /**
   * A member of `guildId` was seen, with their presence when the payload carried one. `raw` undefined
   * keeps what we know (or offline for a user we did not know).
   */
  memberSeen(guildId: Snowflake, user: DiscordUser, raw?: RawPresence): void {
    if (!hasUserId(user)) return;
    this.syncs.saw(guildId, user.id);
    const slot = this.table.slotOf(user.id);
    if (slot === NO_SLOT) {
      this.firstSeen(guildId, user, raw ?? OFFLINE_PRESENCE);
      return;
    }
    this.catchUp(slot);
    this.memberships.join(slot, guildId);
    const previous = this.table.snapshot(slot);
    const merged = this.sources.merged(slot, previous, user);
    const presenceChanged = raw !== undefined && !this.sources.isCurrent(slot, previous, raw);
    // Discord reporting a stale user's presence, changed or not, makes it current again.
    const confirmed = raw !== undefined && this.table.stale(slot);
    if (!merged?.changed && !presenceChanged && !confirmed) return;
    if (confirmed) this.table.setStale(slot, false);
    this.refresh(user.id, slot, previous, { merged, raw: presenceChanged ? raw : null, reported: true });
  }

  /**
   * A member of `guildId` in a member listing, as `memberSeen` takes them. One not monitored yet is kept
   * as given, a pending member, and rendered later (see the class); `renderPending` renders those waiting.
   */
  memberListed(guildId: Snowflake, user: DiscordUser, raw: RawPresence): void {
    if (!hasUserId(user)) return;
    if (this.table.slotOf(user.id) !== NO_SLOT) {
      this.memberSeen(guildId, user, raw);
      return;
    }
    const text = JSON.stringify([this.now(), user, raw]);
    if (text.length >= LARGE_BODY_BYTES) {
      this.memberSeen(guildId, user, raw);
      return;
    }
    this.syncs.saw(guildId, user.id);
    const slot = this.table.addPending(user.id, text);
    this.memberships.join(slot, guildId);
    this.pending.add(slot, false);
    for (const listener of this.pendingListeners) listener(user.id);
  }

  /**
   * Renders up to `max` of the pending members, in the order they came, and announces each as monitored.
   * Returns how many still wait.
   */
  renderPending(max: number): number {
    let rendered = 0;
    while (rendered < max) {
      const slot = this.pending.next();
      if (slot === NO_SLOT) break;
      if (!this.table.inUse(slot) || !this.table.isPending(slot)) continue;
      this.renderPendingMember(slot);
      rendered++;
    }
    return this.pending.count;
  }

  /**
   * Renders up to `max` of the stale users whose presence does not say so yet, in the order of their
   * slots, and announces each change. Returns how many still wait.
   */
  renderStale(max: number): number {
    let rendered = 0;
    while (rendered < max) {
      const slot = this.staleBacklog.next();
      if (slot === NO_SLOT) break;
      this.renderStaleUser(slot);
      rendered++;
    }
    return this.staleBacklog.size;
  }

  /**
   * The shard of these guilds lost its Discord session (invalidated, or not resumable): nothing is heard
   * through them until a new session sends each again (`beginGuildSync`). Their members seen through no
   * other guild become stale; each is rendered so when read, or by `renderStale`.
   */
  guildsLost(guildIds: readonly Snowflake[]): void {
    for (const guildId of guildIds) this.memberships.setLost(guildId, true);
    for (const slot of this.memberships.slotsInAny(guildIds, this.table.end)) {
      if (this.table.inUse(slot) && this.memberships.onlyInLost(slot)) this.markStale(slot);
    }
  }

  /**
   * The shard of these guilds, lost while disconnected, resumed its session: Discord replayed what it
   * sent meanwhile, so what is kept is current again. Their members seen through no guild still lost are
   * no longer stale.
   */
  guildsResumed(guildIds: readonly Snowflake[]): void {
    for (const guildId of guildIds) this.memberships.setLost(guildId, false);
    for (const slot of this.memberships.slotsInAny(guildIds, this.table.end)) {
      if (!this.table.inUse(slot) || !this.table.stale(slot) || this.memberships.onlyInLost(slot)) continue;
      this.table.setStale(slot, false);
      if (this.staleBacklog.remove(slot) || this.table.isPending(slot)) continue;
      this.refresh(this.table.idOf(slot), slot, this.table.snapshot(slot));
    }
  }

  /** A user object from outside any guild context (USER_UPDATE, member updates): merged if monitored. */
  userUpdated(user: DiscordUser): void {
    if (!hasUserId(user)) return;
    const slot = this.table.slotOf(user.id);
    if (slot === NO_SLOT) return;
    this.catchUp(slot);
    const previous = this.table.snapshot(slot);
    const merged = this.sources.merged(slot, previous, user);
    if (merged?.changed) this.refresh(user.id, slot, previous, { merged, reported: true });
  }

  profileFetched(userId: Snowflake, profile: Profile): void {
    const slot = this.table.slotOf(userId);
    if (slot === NO_SLOT) return;
    this.table.setProfile(slot, profile);
    // A pending member's first version is rendered with it: stored profiles come for a whole listing.
    if (this.table.isPending(slot)) return;
    this.refresh(userId, slot, this.table.snapshot(slot));
  }

  /** The user's whole KV as of `revision`, as the store holds it; ignored for users not monitored. */
  kvLoaded(userId: Snowflake, kv: Kv, revision: number): void {
    const slot = this.table.slotOf(userId);
    if (slot === NO_SLOT || revision <= this.table.kvRevision(slot)) return;
    this.catchUp(slot);
    this.table.setKvRevision(slot, revision);
    this.refresh(userId, slot, this.table.snapshot(slot), { kvJson: JSON.stringify(kv) });
  }

  /**
   * An accepted write's change at `revision`, applied to the KV kept. False when it cannot be: the KV kept
   * is not the revision before it (a change missed, or the KV not loaded yet), and must be loaded again.
   */
  kvChanged(userId: Snowflake, delta: KvDelta, revision: number): boolean {
    const slot = this.table.slotOf(userId);
    if (slot === NO_SLOT) return true;
    this.catchUp(slot);
    const kept = this.table.kvRevision(slot);
    if (revision <= kept) return true;
    // Kept at 0 is the KV before any write, `{}`, whether or not the store was read yet: the first write
    // applies to it, so its writer reads it back at once rather than after the KV is read again.
    if (revision !== kept + 1) return false;
    const previous = this.table.snapshot(slot);
    const kvJson = this.sources.kvJson(slot, previous);
    this.table.setKvRevision(slot, revision);
    this.refresh(userId, slot, previous, {
      kvJson:
        typeof kvJson === 'string'
          ? applyDelta(kvJson, delta)
          : smallAsText(applyDeltaToBytes(kvJson, delta)),
    });
    return true;
  }

  /**
   * The user's privacy settings changed, or what they show now did (a pause ended): the presence is
   * rendered again under them, and every listener hears of it as of any other change.
   */
  privacyChanged(userId: Snowflake): void {
    const slot = this.table.slotOf(userId);
    if (slot === NO_SLOT) return;
    if (this.table.isPending(slot)) {
      this.catchUp(slot);
      return;
    }
    this.refresh(userId, slot, this.table.snapshot(slot));
  }

  memberRemoved(guildId: Snowflake, userId: Snowflake): void {
    const slot = this.table.slotOf(userId);
    if (slot === NO_SLOT || !this.memberships.leave(slot, guildId)) return;
    // Those seen by a re-listing are then exactly its members still there (see `endGuildSync`).
    this.syncs.left(guildId, userId);
    if (this.memberships.inAny(slot)) {
      // Seen through lost guilds alone from now on.
      if (this.memberships.onlyInLost(slot)) this.markStale(slot);
      if (this.staleBacklog.has(slot)) this.renderStaleUser(slot);
      return;
    }
    // Announced, then let go: every listener hears of a user it is told has gone.
    this.catchUp(slot);
    this.unmonitor(userId, slot);
  }

  /** The user is to be monitored no more (they opted out): let go as if they had left every guild. */
  stopMonitoring(userId: Snowflake): void {
    for (const guildId of this.memberships.guildIds()) {
      if (!this.isMonitored(userId)) return;
      this.memberRemoved(guildId, userId);
    }
  }

  /** The bot left the guild or it became unavailable: its members are no longer seen through it. */
  guildRemoved(guildId: Snowflake): void {
    this.syncs.end(guildId);
    this.memberships.setLost(guildId, false);
    for (const slot of this.memberships.slotsIn(guildId, this.table.end)) {
      this.memberRemoved(guildId, this.table.idOf(slot));
    }
  }

  /**
   * The guild's full member list is about to be delivered again (a new session). Members not seen
   * before `endGuildSync` left while we were not looking.
   */
  beginGuildSync(guildId: Snowflake): void {
    // Heard through again; its members stay stale until it reports them.
    this.memberships.setLost(guildId, false);
    this.syncs.begin(guildId, this.memberships.count(guildId) > 0);
  }

  endGuildSync(guildId: Snowflake): void {
    const seen = this.syncs.end(guildId);
    if (!seen) return;
    // Everyone still a member was seen: nobody left, and no slot need be looked at.
    if (seen.size === this.memberships.count(guildId)) return;
    for (const slot of this.memberships.slotsIn(guildId, this.table.end)) {
      const userId = this.table.idOf(slot);
      if (!seen.has(userId)) this.memberRemoved(guildId, userId);
    }
  }

  private firstSeen(
    guildId: Snowflake,
    user: DiscordUser,
    raw: RawPresence,
    observed = this.now(),
    restored = false,
  ): void {
    const at = restored ? observed : this.now();
    const rendered = this.renderer.first(user, raw, { observed_at: observed, stale: false });
    const snapshot = snapshotOf(rendered, 1);
    const slot = this.table.add(user.id, rowOf(rendered, raw), snapshot);
    this.sources.keep(slot, rendered);
    this.memberships.join(slot, guildId);
    this.emit({
      kind: 'monitored',
      userId: user.id,
      current: snapshot,
      at,
      ...(restored ? RESTORED_CHANGE : {}),
    });
    snapshot.release();
  }

  /** Renders what the slot's body lags behind: a pending member's first version, or its `stale` set since. */
  private catchUp(slot: number): void {
    if (this.table.isPending(slot)) this.renderPendingMember(slot);
    else if (this.staleBacklog.has(slot)) this.renderStaleUser(slot);
  }

  /** The user is stale from now on; their body says so once rendered (see the class). */
  private markStale(slot: number): void {
    if (this.table.stale(slot)) return;
    this.table.setStale(slot, true);
    // A pending member's first version is rendered with it.
    if (this.table.isPending(slot)) return;
    this.staleBacklog.add(slot, this.table.end);
  }

  private renderStaleUser(slot: number): void {
    this.staleBacklog.remove(slot);
    this.refresh(this.table.idOf(slot), slot, this.table.snapshot(slot));
  }

  /** Renders a pending member's first version, announced with the moment they were listed. */
  private renderPendingMember(slot: number): void {
    const [at, user, raw] = JSON.parse(this.table.pendingText(slot)) as PendingText;
    const freshness = { observed_at: at, stale: this.table.stale(slot) };
    let shown = raw;
    let rendered: Rendered;
    try {
      rendered = this.renderer.first(user, raw, freshness, this.table.profile(slot));
    } catch {
      // Rendered at once, the member would have failed the chunk's handling and not been kept; kept
      // already, they are shown by their id alone, offline, rather than failing every read of them.
      shown = OFFLINE_PRESENCE;
      rendered = this.renderer.first({ id: user.id }, OFFLINE_PRESENCE, freshness);
    }
    const snapshot = snapshotOf(rendered, 1);
    this.table.update(slot, rowOf(rendered, shown), snapshot);
    const restored = this.pending.rendered(slot);
    this.sources.keep(slot, rendered);
    this.emit({
      kind: 'monitored',
      userId: user.id,
      current: snapshot,
      at,
      wasPending: true,
      ...(restored ? RESTORED_CHANGE : {}),
    });
    snapshot.release();
  }

  private unmonitor(userId: Snowflake, slot: number): void {
    const previous = this.table.snapshot(slot);
    this.table.remove(userId);
    this.sources.forget(slot);
    this.staleBacklog.remove(slot);
    this.emit({ kind: 'unmonitored', userId, previous, at: this.now() });
  }

  /**
   * Renders the user's presence again, with the user of `merged` when there is one, else the one kept as
   * text, `raw` when it changed, else the current one, the KV of `kvJson` when it changed, else the one
   * kept as text, and the freshness kept.
   */
  private refresh(userId: Snowflake, slot: number, previous: PresenceSnapshot, update: Update = {}): void {
    const { merged = null, raw = null, kvJson, reported = false } = update;
    const userJson = merged?.changed ? null : this.sources.userJson(slot, previous);
    const user = merged?.user ?? (JSON.parse(userJson as string) as DiscordUser);
    const from = {
      raw: raw ?? this.sources.raw(slot, previous),
      profile: this.table.profile(slot),
      freshness: { observed_at: this.table.observedAt(slot), stale: this.table.stale(slot) },
      kvJson: kvJson ?? this.sources.kvJson(slot, previous),
    };
    let rendered = this.renderer.render(userId, user, userJson, from);
    if (sameBody(rendered.body, previous.body)) {
      this.table.keepClientStatus(slot, from.raw.client_status);
      // What is hidden may have changed while what is shown did not: the next version is made from it.
      if (rendered.unfiltered) this.sources.keep(slot, rendered);
      return;
    }
    const at = this.now();
    // Found a change with the moment kept, so a copy that changes nothing shown stays no change.
    if (reported) rendered = observedAt(rendered, at);
    const next = snapshotOf(rendered, previous.version + 1);
    this.table.update(slot, rowOf(rendered, from.raw), next);
    this.sources.keep(slot, rendered);
    this.emit({ kind: 'updated', userId, previous, current: next, at });
    next.release();
  }

  /** Every listener hears the change, whichever fails; the first failure is thrown after them all. */
  private emit(change: PresenceChange): void {
    let failed = false;
    let failure: unknown;
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (error) {
        if (!failed) failure = error;
        failed = true;
      }
    }
    if (failed) throw failure;
  }
}

/** A KV's JSON bytes that have become small go back to text, to be kept in an ASCII body again. */
function smallAsText(kvJson: Buffer): string | Buffer {
  return kvJson.length < LARGE_BODY_BYTES ? kvJson.toString() : kvJson;
}

/**
 * A user object the registry can know someone by: payloads are Discord's JSON, and one without a user, or
 * with an id that is no snowflake, names nobody a client could ask for.
 */
function hasUserId(user: unknown): user is DiscordUser {
  const id = (user as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' && isSnowflake(id);
}
