import { grown, NO_SLOT } from '../../collections/snowflake-slots.js';
import type {
  DiscordUser,
  Freshness,
  Kv,
  PresenceSummary,
  Profile,
  RawPresence,
  Snowflake,
} from '../model.js';
import { isGuildCopy } from '../normalize/guild-copy.js';
import { DEFAULT_MUSIC_APPS } from '../normalize/music-apps.js';
import { type NormalizeOptions, type PresenceFields, presenceFields } from '../normalize/presence.js';
import { OFFLINE_PRESENCE, statusFrom } from '../normalize/raw.js';
import { mergeUser } from '../normalize/user.js';
import { userWithImageUrls, withoutImageUrls } from '../normalize/user-images.js';
import { applyPrivacy, hiddenBy, type PrivacySettings } from '../privacy.js';
import { isSnowflake } from '../snowflake.js';
import { activitySketch } from './activity-sketch.js';
import { GuildMemberships } from './guild-memberships.js';
import { type HeldPresence, HeldPresences } from './held-presences.js';
import { applyDelta, applyDeltaToBytes, type KvDelta } from './kv-delta.js';
import { QuietFields } from './quiet-fields.js';
import {
  assembleBody,
  fieldsJsonIn,
  LARGE_BODY_BYTES,
  type PresenceParts,
  PresenceSnapshot,
  sameBody,
  userJsonIn,
} from './snapshot.js';

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
      /** Announced after being listed: the registry's `onListed` listeners heard of the user then. */
      listed?: true;
      /**
       * Taken back from what a previous process saved (`restore`), as it held them: not a change seen now,
       * so `at` is when Discord last reported it, and what records changes (history) has it already.
       */
      restored?: true;
    }
  | { kind: 'updated'; userId: Snowflake; previous: PresenceSnapshot; current: PresenceSnapshot; at: number }
  | { kind: 'unmonitored'; userId: Snowflake; previous: PresenceSnapshot; at: number };

export type PresenceListener = (change: PresenceChange) => void;

/** What a REST read writes of a presence: its body and the body's digest, as they are held. */
export interface HeldBody {
  /** `PresenceSnapshot.body`. */
  body: string | Buffer;
  /** `PresenceSnapshot.digest` as base64url text. */
  digest: string;
}

/** What a reader (REST, socket) needs: the current snapshot of a monitored user. */
export interface PresenceView {
  get(userId: Snowflake): PresenceSnapshot | undefined;
  /** The current body of a monitored user, without a snapshot made for it. */
  body(userId: Snowflake): HeldBody | undefined;
  readonly size: number;
}

/** A view that also says when it changes and lists everyone: what the socket gateway reads. */
export interface PresenceSource extends PresenceView {
  onChange(listener: PresenceListener): () => void;
  snapshots(): Iterable<[Snowflake, PresenceSnapshot]>;
  /** Listed members not rendered yet: each is announced as monitored once it is. None when absent. */
  readonly unsettled?: number;
  /** Resolves once no listed member waits to be rendered. */
  settled?(): Promise<void>;
}

/** The KV of every user who has none. */
const NO_KV_JSON = '{}';

/** What a presence is built from besides the user. */
interface Sources {
  raw: RawPresence;
  profile: Profile | null;
  freshness: Freshness;
  kvJson: string | Buffer;
}

/**
 * What a presence is rendered again for: a user merged, a raw presence or a KV that changed (the ones
 * held otherwise), and whether Discord reported it: a change it reported is observed then.
 */
interface Update {
  merged?: Merged | null;
  raw?: RawPresence | null;
  kvJson?: string | Buffer;
  reported?: boolean;
}

/** A partial user merged into the held one. */
interface Merged {
  user: DiscordUser;
  changed: boolean;
}

/**
 * What the presence of a user whose settings hide anything was rendered from: its body holds less than
 * that, so the next version is made from these, not read back from the body.
 */
interface Unfiltered {
  /** With its images' URLs, as a body holds a user. */
  user: DiscordUser;
  raw: RawPresence;
  kvJson: string | Buffer;
}

/** A rendered presence: the object for the listeners (all but the KV), and its envelope. */
interface Rendered {
  presence: PresenceSummary;
  /** What `body` was assembled from. */
  parts: PresenceParts;
  body: string | Buffer;
  userLength: number;
  kvAt: number;
  /** Set when privacy settings hid anything. */
  unfiltered?: Unfiltered;
}

/** A listed member held unrendered: when listed (or last reported), the user and presence. */
type ListedText = [number, DiscordUser, RawPresence];
const RESTORED_CHANGE = { restored: true } as const;

/**
 * A monitored user as saved across a restart of the process (see `PresenceRegistry.saved`): the guilds
 * they are seen through, whether they are stale, and what their presence is rendered from as a listed
 * member's is, so that taking them back parses nothing.
 */
export interface SavedPresence {
  userId: Snowflake;
  guildIds: Snowflake[];
  stale: boolean;
  /** `[observed_at, user, raw presence]` as JSON. */
  text: string;
}

/** What rendering needs besides the presence: how to normalize, and whose settings hide what. */
export interface RegistryOptions extends NormalizeOptions {
  now?: () => number;
  /** The user's privacy settings; undefined for one who set none. */
  privacy?: (userId: Snowflake) => PrivacySettings | undefined;
}

/**
 * One presence per user across every guild the user shares with the bot. Fed with what the gateway says
 * (members, presences, removals) in domain terms; emits a change only when the normalized view changes,
 * so per-guild copies of one update emit nothing.
 *
 * Each user is held as the text of their presence and a few numbers (held-presences.ts). The user is
 * read back from that text only to merge a user object that says more, and the raw presence only when
 * an update must be compared with it or something else about the user changed: its status and platforms
 * are held as numbers, its activities are the presence's own. The KV likewise is held only as its JSON in
 * the body, and goes into the next body as it is when something else changes.
 *
 * A member first seen in a member listing (`memberListed`) is held as the payload it came in until it is
 * rendered: when anything asks for it or about it, or when `settleListed` gets to it. A listing of a large
 * guild is then served as soon as it has been taken in, rather than once every member in it has been
 * rendered and announced; its `monitored` changes follow, each with the moment it was listed.
 *
 * Each presence says how current it is (`Freshness`): `observed_at`, the moment Discord last reported a
 * change of what it shows, and `stale`, set while every guild the user is seen through is lost (its
 * shard's session ended, `guildsLost`) until Discord reports the user's presence again. The users a lost
 * shard makes stale are rendered as they are read or by `settleStale`, a batch at a time, like listed
 * members.
 */
export class PresenceRegistry implements PresenceSource {
  private readonly held = new HeldPresences();
  private readonly memberships = new GuildMemberships();
  /** Guilds being re-listed after (re)connecting: the members seen so far in the new listing. */
  private readonly syncing = new Map<Snowflake, Set<Snowflake>>();
  private readonly listeners = new Set<PresenceListener>();
  private readonly listedListeners = new Set<(userId: Snowflake) => void>();
  /** By slot, `activitySketch` of the held presence's activities: most changes are told without parsing them. */
  private sketches = new Int32Array(0);
  /** By slot, for users whose settings hide anything: what their presence was rendered from. */
  private readonly unfiltered = new Map<number, Unfiltered>();
  /** Slots of listed members in the order they were listed, from `listedHead` on; some rendered since. */
  private listedSlots: number[] = [];
  private listedHead = 0;
  private listedCount = 0;
  /** Those waiting for no listed member to be left unrendered (`settled`). */
  private settledWaiters: Array<() => void> = [];
  /**
   * By slot, 1 for a user made stale whose body does not say so yet: a byte a slot rather than a set, as a
   * lost shard may make most users stale at once. `staleWaiting` of them, none below `staleCursor`.
   */
  private staleUnrendered = new Uint8Array(0);
  /** By slot, 1 for a listed member taken back after a restart (`restore`), not rendered yet. */
  private restoredUnrendered = new Uint8Array(0);
  private staleUnrenderedCount = 0;
  private staleCursor = 0;

  private readonly quiet: QuietFields;
  private readonly now: () => number;

  constructor(private readonly options: RegistryOptions) {
    this.now = options.now ?? Date.now;
    this.quiet = new QuietFields(options);
  }

  /** Monitored users, listed ones not rendered yet included. */
  get size(): number {
    return this.held.size;
  }

  /** Listed members not rendered yet. */
  get unsettled(): number {
    return this.listedCount;
  }

  /** Users whose presence is stale (see the class), rendered so or not yet. */
  get staleCount(): number {
    return this.held.staleCount;
  }

  /** Stale users whose presence does not say so yet: `settleStale` renders them. */
  get staleWaiting(): number {
    return this.staleUnrenderedCount;
  }

  settled(): Promise<void> {
    if (this.listedCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  get(userId: Snowflake): PresenceSnapshot | undefined {
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT) return undefined;
    this.settle(slot);
    return this.held.snapshot(slot);
  }

  body(userId: Snowflake): HeldBody | undefined {
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT) return undefined;
    this.settle(slot);
    return { body: this.held.body(slot), digest: this.held.digestText(slot) };
  }

  *snapshots(): Iterable<[Snowflake, PresenceSnapshot]> {
    for (let slot = 0; slot < this.held.end; slot++) {
      if (!this.held.inUse(slot)) continue;
      this.settle(slot);
      yield [this.held.idOf(slot), this.held.snapshot(slot)];
    }
  }

  /** Every monitored user's id, rendering none of them (see `isListed`). */
  *userIds(): Iterable<Snowflake> {
    for (let slot = 0; slot < this.held.end; slot++) {
      if (this.held.inUse(slot)) yield this.held.idOf(slot);
    }
  }

  /**
   * Every monitored user as `restore` takes them back, rendering none: what a restarted process that
   * resumes its Discord sessions starts from, since nothing it held is sent again.
   */
  *saved(): Iterable<SavedPresence> {
    for (let slot = 0; slot < this.held.end; slot++) {
      if (!this.held.inUse(slot)) continue;
      const userId = this.held.idOf(slot);
      const guildIds = this.memberships.guildsOf(slot);
      const stale = this.held.stale(slot);
      if (this.held.isListed(slot)) {
        yield { userId, guildIds, stale, text: this.held.listedText(slot) };
        continue;
      }
      const snapshot = this.held.snapshot(slot);
      const user =
        this.unfiltered.get(slot)?.user ??
        (JSON.parse(userJsonIn(snapshot.body, this.held.userLength(slot))) as DiscordUser);
      const listed: ListedText = [
        this.held.observedAt(slot),
        withoutImageUrls(user),
        this.heldRaw(slot, snapshot),
      ];
      yield { userId, guildIds, stale, text: JSON.stringify(listed) };
    }
  }

  /**
   * Takes back a user `saved` gave, as a listed member (see the class) whose presence says when Discord
   * reported it; a user monitored already is left as they are.
   */
  restore(saved: SavedPresence): void {
    const { userId, guildIds, text } = saved;
    if (!isSnowflake(userId) || guildIds.length === 0 || this.held.slotOf(userId) !== NO_SLOT) return;
    let slot: number;
    if (text.length >= LARGE_BODY_BYTES) {
      const [observedAt, user, raw] = JSON.parse(text) as ListedText;
      if (user?.id !== userId) return;
      this.firstSeen(guildIds[0] as Snowflake, user, raw, observedAt, true);
      slot = this.held.slotOf(userId);
    } else {
      slot = this.held.addListed(userId, text);
      if (slot >= this.restoredUnrendered.length) {
        const length = Math.max(slot + 1, this.restoredUnrendered.length * 2, 1024);
        this.restoredUnrendered = grown(this.restoredUnrendered, length);
      }
      this.restoredUnrendered[slot] = 1;
      this.listedSlots.push(slot);
      this.listedCount++;
    }
    for (const guildId of guildIds) this.memberships.join(slot, guildId);
    if (saved.stale) this.markStale(slot);
    if (this.held.isListed(slot)) for (const listener of this.listedListeners) listener(userId);
  }

  /** Whether the user is a listed member not rendered yet: announced as monitored once they are. */
  isListed(userId: Snowflake): boolean {
    const slot = this.held.slotOf(userId);
    return slot !== NO_SLOT && this.held.isListed(slot);
  }

  /** The store revision of the KV inside the user's presence; 0 before any. */
  kvRevisionOf(userId: Snowflake): number {
    const slot = this.held.slotOf(userId);
    return slot === NO_SLOT ? 0 : this.held.kvRevision(slot);
  }

  /** Whether the user is monitored as a member of the guild. */
  isMemberOf(guildId: Snowflake, userId: Snowflake): boolean {
    const slot = this.held.slotOf(userId);
    return slot !== NO_SLOT && this.memberships.guildsOf(slot).includes(guildId);
  }

  isMonitored(userId: Snowflake): boolean {
    return this.held.slotOf(userId) !== NO_SLOT;
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
   * Each member held unrendered from a listing, as they are listed: what is stored of them can be read
   * meanwhile. Their `monitored` change follows when they are rendered, marked `listed`.
   */
  onListed(listener: (userId: Snowflake) => void): () => void {
    this.listedListeners.add(listener);
    return () => this.listedListeners.delete(listener);
  }

  /**
   * A member of `guildId` was seen, with their presence when the payload carried one. `raw` undefined
   * keeps what we know (or offline for a user we did not know).
   */
  memberSeen(guildId: Snowflake, user: DiscordUser, raw?: RawPresence): void {
    if (!hasUserId(user)) return;
    this.syncing.get(guildId)?.add(user.id);
    const slot = this.held.slotOf(user.id);
    if (slot === NO_SLOT) {
      this.firstSeen(guildId, user, raw ?? OFFLINE_PRESENCE);
      return;
    }
    this.settle(slot);
    this.memberships.join(slot, guildId);
    const previous = this.held.snapshot(slot);
    const merged = this.merged(slot, previous, user);
    const presenceChanged = raw !== undefined && !this.isHeld(slot, previous, raw);
    // Discord reporting a stale user's presence, changed or not, makes it current again.
    const confirmed = raw !== undefined && this.held.stale(slot);
    if (!merged?.changed && !presenceChanged && !confirmed) return;
    if (confirmed) this.held.setStale(slot, false);
    this.refresh(user.id, slot, previous, { merged, raw: presenceChanged ? raw : null, reported: true });
  }

  /**
   * A member of `guildId` in a member listing, as `memberSeen` takes them. One not monitored yet is held
   * as given and rendered later (see the class); `settleListed` renders those waiting.
   */
  memberListed(guildId: Snowflake, user: DiscordUser, raw: RawPresence): void {
    if (!hasUserId(user)) return;
    if (this.held.slotOf(user.id) !== NO_SLOT) {
      this.memberSeen(guildId, user, raw);
      return;
    }
    const listed = JSON.stringify([this.now(), user, raw]);
    if (listed.length >= LARGE_BODY_BYTES) {
      this.memberSeen(guildId, user, raw);
      return;
    }
    this.syncing.get(guildId)?.add(user.id);
    const slot = this.held.addListed(user.id, listed);
    this.memberships.join(slot, guildId);
    this.listedSlots.push(slot);
    this.listedCount++;
    for (const listener of this.listedListeners) listener(user.id);
  }

  /**
   * Renders up to `max` of the listed members waiting, in the order they were listed, and announces each
   * as monitored. Returns how many still wait.
   */
  settleListed(max: number): number {
    let settled = 0;
    while (settled < max && this.listedHead < this.listedSlots.length) {
      const slot = this.listedSlots[this.listedHead++] as number;
      // A slot rendered since, or let go and taken by another user, is no longer listed (or is again,
      // further on).
      if (!this.held.inUse(slot) || !this.held.isListed(slot)) continue;
      this.settle(slot);
      settled++;
    }
    if (this.listedHead === this.listedSlots.length) {
      this.listedSlots = [];
      this.listedHead = 0;
    }
    return this.listedCount;
  }

  /**
   * Renders up to `max` of the stale users whose presence does not say so yet, in the order of their
   * slots, and announces each change. Returns how many still wait.
   */
  settleStale(max: number): number {
    let settled = 0;
    while (settled < max && this.staleUnrenderedCount > 0 && this.staleCursor < this.staleUnrendered.length) {
      const slot = this.staleCursor++;
      if (this.staleUnrendered[slot] !== 1) continue;
      this.renderStale(slot);
      settled++;
    }
    if (this.staleUnrenderedCount === 0) this.staleCursor = 0;
    return this.staleUnrenderedCount;
  }

  /**
   * The shard of these guilds lost its Discord session (invalidated, or not resumable): nothing is heard
   * through them until a new session sends each again (`beginGuildSync`). Their members seen through no
   * other guild become stale; each is rendered so when read, or by `settleStale`.
   */
  guildsLost(guildIds: readonly Snowflake[]): void {
    for (const guildId of guildIds) this.memberships.setLost(guildId, true);
    for (const slot of this.memberships.slotsInAny(guildIds, this.held.end)) {
      if (this.held.inUse(slot) && this.memberships.onlyInLost(slot)) this.markStale(slot);
    }
  }

  /**
   * The shard of these guilds, lost while disconnected, resumed its session: Discord replayed what it
   * sent meanwhile, so what is held is current again. Their members seen through no guild still lost are
   * no longer stale.
   */
  guildsResumed(guildIds: readonly Snowflake[]): void {
    for (const guildId of guildIds) this.memberships.setLost(guildId, false);
    for (const slot of this.memberships.slotsInAny(guildIds, this.held.end)) {
      if (!this.held.inUse(slot) || !this.held.stale(slot) || this.memberships.onlyInLost(slot)) continue;
      this.held.setStale(slot, false);
      if (this.staleUnrendered[slot] === 1) this.forgetUnrendered(slot);
      else if (!this.held.isListed(slot)) this.refresh(this.held.idOf(slot), slot, this.held.snapshot(slot));
    }
  }

  /** A user object from outside any guild context (USER_UPDATE, member updates): merged if monitored. */
  userUpdated(user: DiscordUser): void {
    if (!hasUserId(user)) return;
    const slot = this.held.slotOf(user.id);
    if (slot === NO_SLOT) return;
    this.settle(slot);
    const previous = this.held.snapshot(slot);
    const merged = this.merged(slot, previous, user);
    if (merged?.changed) this.refresh(user.id, slot, previous, { merged, reported: true });
  }

  profileFetched(userId: Snowflake, profile: Profile): void {
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT) return;
    this.held.setProfile(slot, profile);
    // A listed member's first version is rendered with it: stored profiles come for a whole listing.
    if (this.held.isListed(slot)) return;
    this.refresh(userId, slot, this.held.snapshot(slot));
  }

  /** The user's whole KV as of `revision`, as the store holds it; ignored for users not monitored. */
  kvLoaded(userId: Snowflake, kv: Kv, revision: number): void {
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT || revision <= this.held.kvRevision(slot)) return;
    this.settle(slot);
    this.held.setKvRevision(slot, revision);
    this.refresh(userId, slot, this.held.snapshot(slot), { kvJson: JSON.stringify(kv) });
  }

  /**
   * An accepted write's change at `revision`, applied to the KV held. False when it cannot be: the KV held
   * is not the revision before it (a change missed, or the KV not loaded yet), and must be loaded again.
   */
  kvChanged(userId: Snowflake, delta: KvDelta, revision: number): boolean {
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT) return true;
    this.settle(slot);
    const held = this.held.kvRevision(slot);
    if (revision <= held) return true;
    // Held at 0 is the KV before any write, `{}`, whether or not the store was read yet: the first write
    // applies to it, so its writer reads it back at once rather than after the KV is read again.
    if (revision !== held + 1) return false;
    const previous = this.held.snapshot(slot);
    const kvJson = this.unfiltered.get(slot)?.kvJson ?? previous.kvJson();
    this.held.setKvRevision(slot, revision);
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
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT) return;
    if (this.held.isListed(slot)) {
      this.settle(slot);
      return;
    }
    this.refresh(userId, slot, this.held.snapshot(slot));
  }

  memberRemoved(guildId: Snowflake, userId: Snowflake): void {
    const slot = this.held.slotOf(userId);
    if (slot === NO_SLOT || !this.memberships.leave(slot, guildId)) return;
    // Those seen by a re-listing are then exactly its members still there (see `endGuildSync`).
    this.syncing.get(guildId)?.delete(userId);
    if (this.memberships.inAny(slot)) {
      // Seen through lost guilds alone from now on.
      if (this.memberships.onlyInLost(slot)) this.markStale(slot);
      if (this.staleUnrendered[slot] === 1) this.renderStale(slot);
      return;
    }
    // Announced, then let go: every listener hears of a user it is told has gone.
    this.settle(slot);
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
    this.syncing.delete(guildId);
    this.memberships.setLost(guildId, false);
    for (const slot of this.memberships.slotsIn(guildId, this.held.end)) {
      this.memberRemoved(guildId, this.held.idOf(slot));
    }
  }

  /**
   * The guild's full member list is about to be delivered again (a new session). Members not seen
   * before `endGuildSync` left while we were not looking.
   */
  beginGuildSync(guildId: Snowflake): void {
    // Heard through again; its members stay stale until it reports them.
    this.memberships.setLost(guildId, false);
    // With none of its members known, everyone still a member when it ends was seen by it: a first
    // listing of a large guild keeps no set of every id it lists.
    if (this.memberships.count(guildId) === 0) this.syncing.delete(guildId);
    else this.syncing.set(guildId, new Set());
  }

  endGuildSync(guildId: Snowflake): void {
    const seen = this.syncing.get(guildId);
    if (!seen) return;
    this.syncing.delete(guildId);
    // Everyone still a member was seen: nobody left, and no slot need be looked at.
    if (seen.size === this.memberships.count(guildId)) return;
    for (const slot of this.memberships.slotsIn(guildId, this.held.end)) {
      const userId = this.held.idOf(slot);
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
    const rendered = this.renderFirst(user, raw, { observed_at: observed, stale: false });
    const snapshot = snapshotOfRendered(rendered, 1);
    const slot = this.held.add(user.id, heldOf(rendered, raw), snapshot);
    this.keepSources(slot, rendered);
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

  /** Renders what the slot's body lags behind: a listed member's first version, or its `stale` set since. */
  private settle(slot: number): void {
    if (this.held.isListed(slot)) this.renderListed(slot);
    else if (this.staleUnrenderedCount > 0 && this.staleUnrendered[slot] === 1) this.renderStale(slot);
  }

  /** The user is stale from now on; their body says so once rendered (see the class). */
  private markStale(slot: number): void {
    if (this.held.stale(slot)) return;
    this.held.setStale(slot, true);
    // A listed member's first version is rendered with it.
    if (this.held.isListed(slot)) return;
    if (slot >= this.staleUnrendered.length) {
      this.staleUnrendered = grown(this.staleUnrendered, Math.max(slot + 1, this.held.end));
    }
    this.staleUnrendered[slot] = 1;
    this.staleUnrenderedCount++;
    this.staleCursor = Math.min(this.staleCursor, slot);
  }

  private renderStale(slot: number): void {
    this.forgetUnrendered(slot);
    this.refresh(this.held.idOf(slot), slot, this.held.snapshot(slot));
  }

  private forgetUnrendered(slot: number): void {
    if (this.staleUnrendered[slot] !== 1) return;
    this.staleUnrendered[slot] = 0;
    this.staleUnrenderedCount--;
  }

  /** Renders a listed member's first version, announced with the moment they were listed. */
  private renderListed(slot: number): void {
    const [at, user, raw] = JSON.parse(this.held.listedText(slot)) as ListedText;
    const restored = this.restoredUnrendered[slot] === 1;
    if (restored) this.restoredUnrendered[slot] = 0;
    const freshness = { observed_at: at, stale: this.held.stale(slot) };
    let shown = raw;
    let rendered: Rendered;
    try {
      rendered = this.renderFirst(user, raw, freshness, this.held.profile(slot));
    } catch {
      // Rendered at once, the member would have failed the chunk's handling and not been held; held
      // already, they are shown by their id alone, offline, rather than failing every read of them.
      shown = OFFLINE_PRESENCE;
      rendered = this.renderFirst({ id: user.id }, OFFLINE_PRESENCE, freshness);
    }
    const snapshot = snapshotOfRendered(rendered, 1);
    this.held.update(slot, heldOf(rendered, shown), snapshot);
    this.listedCount--;
    if (this.listedCount === 0) for (const resolve of this.settledWaiters.splice(0)) resolve();
    this.keepSources(slot, rendered);
    this.emit({
      kind: 'monitored',
      userId: user.id,
      current: snapshot,
      at,
      listed: true,
      ...(restored ? RESTORED_CHANGE : {}),
    });
    snapshot.release();
  }

  private renderFirst(
    user: DiscordUser,
    raw: RawPresence,
    freshness: Freshness,
    profile: Profile | null = null,
  ): Rendered {
    return this.render(user.id, mergeUser(undefined, user), null, {
      raw,
      profile,
      freshness,
      kvJson: NO_KV_JSON,
    });
  }

  private unmonitor(userId: Snowflake, slot: number): void {
    const previous = this.held.snapshot(slot);
    this.held.remove(userId);
    this.unfiltered.delete(slot);
    this.forgetUnrendered(slot);
    if (slot < this.restoredUnrendered.length) this.restoredUnrendered[slot] = 0;
    this.emit({ kind: 'unmonitored', userId, previous, at: this.now() });
  }

  /**
   * Whether `raw` says what the presence held does, apart from per-guild timing jitter (`isGuildCopy`).
   * The held raw presence is the status and platforms kept, and the presence's activities, which are the
   * raw ones normalized: normalizing them again gives the same presence, and a guild copy compared with
   * them is still a copy (one that differs only in what normalizing changes is re-rendered and found
   * equal). Its activities are read back only when the rest and their sketch are the same.
   */
  private isHeld(slot: number, previous: PresenceSnapshot, raw: RawPresence): boolean {
    if (statusFrom(raw.status) !== this.held.status(slot)) return false;
    if (!this.held.sameClientStatus(slot, raw.client_status)) return false;
    if (activitySketch(raw.activities) !== this.sketches[slot]) return false;
    return isGuildCopy(this.heldRaw(slot, previous), raw);
  }

  /**
   * What the next version of the presence is compared with and made from: the sketch of its activities,
   * and for a presence with anything hidden, what it was made from (see `Unfiltered`).
   */
  private keepSources(slot: number, rendered: Rendered): void {
    if (slot >= this.sketches.length) {
      this.sketches = grown(this.sketches, Math.max(slot + 1, this.sketches.length * 2));
    }
    const { unfiltered } = rendered;
    this.sketches[slot] = activitySketch((unfiltered?.raw ?? rendered.presence).activities);
    if (unfiltered) this.unfiltered.set(slot, unfiltered);
    else this.unfiltered.delete(slot);
  }

  /** Of the presence's JSON only the fields between user and KV are parsed: the activities are there. */
  private heldRaw(slot: number, previous: PresenceSnapshot): RawPresence {
    const kept = this.unfiltered.get(slot);
    if (kept) return kept.raw;
    const fieldsJson = fieldsJsonIn(previous.body, this.held.userLength(slot), previous.kvAt);
    return {
      status: this.held.status(slot),
      client_status: this.held.clientStatus(slot),
      activities: (JSON.parse(fieldsJson) as PresenceFields).activities,
    };
  }

  /**
   * The user merged with a partial user object; null when the partial names only the id, so nothing was
   * read back (a merge that changes nothing still hands over the user it read, for `refresh` to reuse).
   */
  private merged(slot: number, previous: PresenceSnapshot, partial: DiscordUser): Merged | null {
    if (namesOnlyId(partial)) return null;
    // The held user carries its images' URLs, which no payload from Discord has: they would make every
    // full user object look like a change.
    const held =
      this.unfiltered.get(slot)?.user ??
      (JSON.parse(userJsonIn(previous.body, this.held.userLength(slot))) as DiscordUser);
    const known = withoutImageUrls(held);
    const user = mergeUser(known, partial);
    return { user, changed: user !== known };
  }

  /**
   * Renders the user's presence again, with the user of `merged` when there is one, else the one held as
   * text, `raw` when it changed, else the one held, the KV of `kvJson` when it changed, else the one held
   * as text, and the freshness held.
   */
  private refresh(userId: Snowflake, slot: number, previous: PresenceSnapshot, update: Update = {}): void {
    const { merged = null, raw = null, kvJson, reported = false } = update;
    const kept = this.unfiltered.get(slot);
    const userJson = merged?.changed
      ? null
      : kept
        ? JSON.stringify(kept.user)
        : userJsonIn(previous.body, this.held.userLength(slot));
    const user = merged?.user ?? (JSON.parse(userJson as string) as DiscordUser);
    const sources = {
      raw: raw ?? this.heldRaw(slot, previous),
      profile: this.held.profile(slot),
      freshness: { observed_at: this.held.observedAt(slot), stale: this.held.stale(slot) },
      kvJson: kvJson ?? kept?.kvJson ?? previous.kvJson(),
    };
    let rendered = this.render(userId, user, userJson, sources);
    if (sameBody(rendered.body, previous.body)) {
      this.held.keepClientStatus(slot, sources.raw.client_status);
      // What is hidden may have changed while what is shown did not: the next version is made from it.
      if (rendered.unfiltered) this.keepSources(slot, rendered);
      return;
    }
    const at = this.now();
    // Found a change with the moment held, so a copy that changes nothing shown stays no change.
    if (reported) rendered = observedAt(rendered, at);
    const next = snapshotOfRendered(rendered, previous.version + 1);
    this.held.update(slot, heldOf(rendered, sources.raw), next);
    this.keepSources(slot, rendered);
    this.emit({ kind: 'updated', userId, previous, current: next, at });
    next.release();
  }

  /** `userJson`: the user's JSON when it is held already, so it is not serialized again. */
  private render(userId: Snowflake, user: DiscordUser, userJson: string | null, sources: Sources): Rendered {
    const settings = this.options.privacy?.(userId);
    if (settings !== undefined) {
      const hidden = hiddenBy(settings, this.now());
      if (hidden.length > 0) return this.renderHiding(userId, user, userJson, sources, settings, hidden);
    }
    const { raw, profile } = sources;
    const quiet = this.quiet.of(userId, raw, profile);
    const fields = quiet?.fields ?? presenceFields({ userId, raw, profile }, this.options);
    const shown = userJson === null ? userWithImageUrls(user, this.options.cdnUrl) : user;
    const parts = {
      userJson: userJson ?? JSON.stringify(shown),
      fieldsJson: quiet?.json ?? JSON.stringify(fields),
      freshness: sources.freshness,
      kvJson: sources.kvJson,
    };
    return {
      presence: { discord_user: shown, ...fields, ...sources.freshness },
      parts,
      ...assembleBody(parts),
    };
  }

  /**
   * The presence with what the user's settings hide taken out of what it is made from, so that nothing
   * derived from a hidden field is left in it; `privacy.hidden` says what.
   */
  private renderHiding(
    userId: Snowflake,
    user: DiscordUser,
    userJson: string | null,
    sources: Sources,
    settings: PrivacySettings,
    hidden: string[],
  ): Rendered {
    const fullUser =
      userJson === null
        ? userWithImageUrls(user, this.options.cdnUrl)
        : (JSON.parse(userJson) as DiscordUser);
    const shown = applyPrivacy(
      settings,
      this.now(),
      { user: fullUser, raw: sources.raw, profile: sources.profile },
      { musicApps: this.options.musicApps ?? DEFAULT_MUSIC_APPS, youtubeMusic: this.options.youtubeMusic },
    );
    const fields: PresenceFields = {
      ...presenceFields({ userId, raw: shown.raw, profile: shown.profile }, this.options),
      privacy: { hidden },
    };
    if (settings.hide_profile) fields.member_since = null;
    const parts = {
      userJson: JSON.stringify(shown.user),
      fieldsJson: JSON.stringify(fields),
      freshness: sources.freshness,
      kvJson: settings.hide_kv ? NO_KV_JSON : sources.kvJson,
    };
    return {
      presence: { discord_user: shown.user, ...fields, ...sources.freshness },
      parts,
      ...assembleBody(parts),
      unfiltered: { user: fullUser, raw: sources.raw, kvJson: sources.kvJson },
    };
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

/** What is held of a rendered presence. */
function heldOf(rendered: Rendered, raw: RawPresence): HeldPresence {
  return {
    body: rendered.body,
    userLength: rendered.userLength,
    kvAt: rendered.kvAt,
    status: rendered.presence.discord_status,
    clientStatus: raw.client_status,
    observedAt: rendered.presence.observed_at,
  };
}

/** The rendered presence observed at `at`: assembled again from its parts, nothing else rendered again. */
function observedAt(rendered: Rendered, at: number): Rendered {
  const freshness = { observed_at: at, stale: rendered.parts.freshness.stale };
  const parts = { ...rendered.parts, freshness };
  return { ...rendered, presence: { ...rendered.presence, ...freshness }, parts, ...assembleBody(parts) };
}

/** A KV's JSON bytes that have become small go back to text, to be held in an ASCII body again. */
function smallAsText(kvJson: Buffer): string | Buffer {
  return kvJson.length < LARGE_BODY_BYTES ? kvJson.toString() : kvJson;
}

function snapshotOfRendered(rendered: Rendered, version: number): PresenceSnapshot {
  const { presence, body, kvAt } = rendered;
  return new PresenceSnapshot(presence, body, version, presence.discord_status, kvAt);
}

/** A partial user saying nothing but who it is, as presence updates do: nothing to merge. */
function namesOnlyId(user: DiscordUser): boolean {
  for (const key in user) {
    if (key !== 'id' && (user as Record<string, unknown>)[key] !== undefined) return false;
  }
  return true;
}

/**
 * A user object the registry can know someone by: payloads are Discord's JSON, and one without a user, or
 * with an id that is no snowflake, names nobody a client could ask for.
 */
function hasUserId(user: unknown): user is DiscordUser {
  const id = (user as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' && isSnowflake(id);
}
