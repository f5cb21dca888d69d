import { isGuildCopy } from './guild-copy.js';
import { applyDelta, applyDeltaToBytes, type KvDelta } from './kv-delta.js';
import type { DiscordUser, Kv, PresenceSummary, Profile, RawPresence, Snowflake } from './model.js';
import { type NormalizeOptions, presenceFields } from './presence.js';
import { OFFLINE_PRESENCE } from './raw.js';
import { assembleBody, LARGE_BODY_BYTES, PresenceSnapshot, sameBody, userJsonIn } from './snapshot.js';
import { isSnowflake } from './snowflake.js';
import { mergeUser } from './user.js';
import { userWithImageUrls, withoutImageUrls } from './user-images.js';

/**
 * `monitored`: the user now shares a guild with the bot; `updated`: the normalized presence changed;
 * `unmonitored`: the last shared guild is gone. `at`: when it was seen (epoch ms), the one moment history
 * and everything that reports it use.
 */
export type PresenceChange =
  | { kind: 'monitored'; userId: Snowflake; current: PresenceSnapshot; at: number }
  | { kind: 'updated'; userId: Snowflake; previous: PresenceSnapshot; current: PresenceSnapshot; at: number }
  | { kind: 'unmonitored'; userId: Snowflake; previous: PresenceSnapshot; at: number };

export type PresenceListener = (change: PresenceChange) => void;

/** What a reader (REST, socket) needs: the current snapshot of a monitored user. */
export interface PresenceView {
  get(userId: Snowflake): PresenceSnapshot | undefined;
  readonly size: number;
}

/** A view that also says when it changes and lists everyone: what the socket gateway reads. */
export interface PresenceSource extends PresenceView {
  onChange(listener: PresenceListener): () => void;
  snapshots(): Iterable<[Snowflake, PresenceSnapshot]>;
}

/** The KV of every user who has none. */
const NO_KV_JSON = '{}';

/**
 * What the registry holds per user. A class, not an object literal: a million entries built by spreading
 * a literal each got a hidden class of their own (about 300 bytes apiece), where instances of a class
 * share one.
 *
 * The user is held only as the JSON text at the start of the snapshot's presence: as an object, with its
 * strings, it was about 220 bytes a user beside the text that holds it already. Presence updates name the
 * user by id alone, so reading it back (a JSON.parse of its few hundred bytes) is needed only to merge a
 * user object that says more, and to hand the changed presence to the listeners. The KV likewise is held
 * only as its JSON in the body, and goes into the next body as it is when something else changes.
 */
class Entry {
  /** The store's revision of the KV: an older KV arriving late is ignored. */
  kvRevision = 0;
  profile: Profile | null = null;

  constructor(
    /** The length of the user's JSON in the snapshot's body (`userJsonIn`). */
    public userLength: number,
    public raw: RawPresence,
    /** The guilds shared with the bot: most users share one, which needs no set. */
    public guilds: Snowflake | Set<Snowflake>,
    public snapshot: PresenceSnapshot,
  ) {}
}

/** What a presence is built from besides the user. */
type Sources = Pick<Entry, 'raw' | 'profile'> & { kvJson: string | Buffer };

/** A partial user merged into the held one. */
interface Merged {
  user: DiscordUser;
  changed: boolean;
}

/** A rendered presence: the object for the listeners (all but the KV), and its envelope. */
interface Rendered {
  presence: PresenceSummary;
  body: string | Buffer;
  userLength: number;
  kvAt: number;
}

/**
 * One presence per user across every guild the user shares with the bot. Fed with what the gateway says
 * (members, presences, removals) in domain terms; emits a change only when the normalized view changes,
 * so per-guild copies of one update emit nothing.
 */
export class PresenceRegistry implements PresenceSource {
  private readonly entries = new Map<Snowflake, Entry>();
  private readonly guildMembers = new Map<Snowflake, Set<Snowflake>>();
  /** Guilds being re-listed after (re)connecting: the members seen so far in the new listing. */
  private readonly syncing = new Map<Snowflake, Set<Snowflake>>();
  private readonly listeners = new Set<PresenceListener>();

  private readonly now: () => number;

  constructor(private readonly options: NormalizeOptions & { now?: () => number }) {
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  get(userId: Snowflake): PresenceSnapshot | undefined {
    return this.entries.get(userId)?.snapshot;
  }

  *snapshots(): Iterable<[Snowflake, PresenceSnapshot]> {
    for (const [userId, entry] of this.entries) yield [userId, entry.snapshot];
  }

  /** The store revision of the KV inside the user's presence; 0 before any. */
  kvRevisionOf(userId: Snowflake): number {
    return this.entries.get(userId)?.kvRevision ?? 0;
  }

  isMonitored(userId: Snowflake): boolean {
    return this.entries.has(userId);
  }

  /** The guilds the bot knows members of. */
  guildIds(): Snowflake[] {
    return [...this.guildMembers.keys()];
  }

  memberCount(guildId: Snowflake): number {
    return this.guildMembers.get(guildId)?.size ?? 0;
  }

  onChange(listener: PresenceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * A member of `guildId` was seen, with their presence when the payload carried one. `raw` undefined
   * keeps what we know (or offline for a user we did not know).
   */
  memberSeen(guildId: Snowflake, user: DiscordUser, raw?: RawPresence): void {
    if (!hasUserId(user)) return;
    this.syncing.get(guildId)?.add(user.id);
    let members = this.guildMembers.get(guildId);
    if (!members) {
      members = new Set();
      this.guildMembers.set(guildId, members);
    }
    members.add(user.id);

    const entry = this.entries.get(user.id);
    if (!entry) {
      const known = mergeUser(undefined, user);
      const sources: Sources = { raw: raw ?? OFFLINE_PRESENCE, profile: null, kvJson: NO_KV_JSON };
      const rendered = this.render(user.id, known, null, sources);
      const snapshot = snapshotOfRendered(rendered, 1);
      const held = heldAs(sources.raw, rendered.presence);
      this.entries.set(user.id, new Entry(rendered.userLength, held, guildId, snapshot));
      this.emit({ kind: 'monitored', userId: user.id, current: snapshot, at: this.now() });
      snapshot.release();
      return;
    }
    entry.guilds = withGuild(entry.guilds, guildId);
    const merged = this.merged(entry, user);
    const presenceChanged = raw !== undefined && raw !== entry.raw && !isGuildCopy(entry.raw, raw);
    if (!merged?.changed && !presenceChanged) return;
    if (presenceChanged) entry.raw = raw;
    this.refresh(user.id, entry, merged);
  }

  /** A user object from outside any guild context (USER_UPDATE, member updates): merged if monitored. */
  userUpdated(user: DiscordUser): void {
    if (!hasUserId(user)) return;
    const entry = this.entries.get(user.id);
    if (!entry) return;
    const merged = this.merged(entry, user);
    if (merged?.changed) this.refresh(user.id, entry, merged);
  }

  profileFetched(userId: Snowflake, profile: Profile): void {
    const entry = this.entries.get(userId);
    if (!entry) return;
    // Most users set neither: such a profile renders as none at all, and holding none costs nothing.
    entry.profile = profile.banner === null && profile.accent_color === null ? null : profile;
    this.refresh(userId, entry, null);
  }

  /** The user's whole KV as of `revision`, as the store holds it; ignored for users not monitored. */
  kvLoaded(userId: Snowflake, kv: Kv, revision: number): void {
    const entry = this.entries.get(userId);
    if (!entry || revision <= entry.kvRevision) return;
    entry.kvRevision = revision;
    this.refresh(userId, entry, null, JSON.stringify(kv));
  }

  /**
   * An accepted write's change at `revision`, applied to the KV held. False when it cannot be: the KV held
   * is not the revision before it (a change missed, or the KV not loaded yet), and must be loaded again.
   */
  kvChanged(userId: Snowflake, delta: KvDelta, revision: number): boolean {
    const entry = this.entries.get(userId);
    if (!entry || revision <= entry.kvRevision) return true;
    if (entry.kvRevision === 0 || revision !== entry.kvRevision + 1) return false;
    const held = entry.snapshot.kvJson();
    entry.kvRevision = revision;
    this.refresh(
      userId,
      entry,
      null,
      typeof held === 'string' ? applyDelta(held, delta) : smallAsText(applyDeltaToBytes(held, delta)),
    );
    return true;
  }

  memberRemoved(guildId: Snowflake, userId: Snowflake): void {
    const members = this.guildMembers.get(guildId);
    if (!members?.delete(userId)) return;
    if (members.size === 0) this.guildMembers.delete(guildId);
    this.leaveGuild(userId, guildId);
  }

  /** The bot left the guild or it became unavailable: its members are no longer seen through it. */
  guildRemoved(guildId: Snowflake): void {
    const members = this.guildMembers.get(guildId);
    this.syncing.delete(guildId);
    if (!members) return;
    this.guildMembers.delete(guildId);
    for (const userId of members) this.leaveGuild(userId, guildId);
  }

  /**
   * The guild's full member list is about to be delivered again (a new session). Members not seen
   * before `endGuildSync` left while we were not looking.
   */
  beginGuildSync(guildId: Snowflake): void {
    this.syncing.set(guildId, new Set());
  }

  endGuildSync(guildId: Snowflake): void {
    const seen = this.syncing.get(guildId);
    if (!seen) return;
    this.syncing.delete(guildId);
    const members = this.guildMembers.get(guildId);
    if (!members) return;
    for (const userId of [...members]) {
      if (!seen.has(userId)) this.memberRemoved(guildId, userId);
    }
  }

  private leaveGuild(userId: Snowflake, guildId: Snowflake): void {
    const entry = this.entries.get(userId);
    if (!entry) return;
    const left = withoutGuild(entry.guilds, guildId);
    if (left !== null) {
      entry.guilds = left;
      return;
    }
    this.entries.delete(userId);
    this.emit({ kind: 'unmonitored', userId, previous: entry.snapshot, at: this.now() });
  }

  /**
   * The user merged with a partial user object; null when the partial names only the id, so nothing was
   * read back (a merge that changes nothing still hands over the user it read, for `refresh` to reuse).
   */
  private merged(entry: Entry, partial: DiscordUser): Merged | null {
    if (namesOnlyId(partial)) return null;
    // The held user carries its images' URLs, which no payload from Discord has: they would make every
    // full user object look like a change.
    const known = withoutImageUrls(userOf(entry));
    const user = mergeUser(known, partial);
    return { user, changed: user !== known };
  }

  /**
   * Renders the entry again, with the user of `merged` when there is one, else the one held as text, and
   * the KV of `kvJson` when it changed, else the one held as text.
   */
  private refresh(userId: Snowflake, entry: Entry, merged: Merged | null, kvJson?: string | Buffer): void {
    const previous = entry.snapshot;
    const userJson = merged?.changed ? null : userJsonIn(previous.body, entry.userLength);
    const user = merged?.user ?? (JSON.parse(userJson as string) as DiscordUser);
    const sources = { raw: entry.raw, profile: entry.profile, kvJson: kvJson ?? previous.kvJson() };
    const rendered = this.render(userId, user, userJson, sources);
    entry.raw = heldAs(entry.raw, rendered.presence);
    if (sameBody(rendered.body, previous.body)) return;
    const next = snapshotOfRendered(rendered, previous.version + 1);
    entry.snapshot = next;
    entry.userLength = rendered.userLength;
    this.emit({ kind: 'updated', userId, previous, current: next, at: this.now() });
    next.release();
  }

  /** `userJson`: the user's JSON when it is held already, so it is not serialized again. */
  private render(userId: Snowflake, user: DiscordUser, userJson: string | null, sources: Sources): Rendered {
    const fields = presenceFields({ userId, raw: sources.raw, profile: sources.profile }, this.options);
    const shown = userJson === null ? userWithImageUrls(user, this.options.cdnUrl) : user;
    const { body, userLength, kvAt } = assembleBody({
      userJson: userJson ?? JSON.stringify(shown),
      fieldsJson: JSON.stringify(fields),
      kvJson: sources.kvJson,
    });
    return { presence: { discord_user: shown, ...fields }, body, userLength, kvAt };
  }

  private emit(change: PresenceChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

/** The held user, read back from the text of their presence. */
function userOf(entry: Entry): DiscordUser {
  return JSON.parse(userJsonIn(entry.snapshot.body, entry.userLength)) as DiscordUser;
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

/**
 * The raw presence as the registry keeps it: with the rendered presence's activities, which are the raw
 * ones normalized (equal as JSON, snowflakes as strings), and which nothing else holds once the snapshot
 * is released: a user's activities are held once, as objects, besides the bytes.
 * Both uses of `raw` see no difference: normalizing them again gives the same presence, and a guild copy
 * compared with them is still a copy (one that differs only in what normalizing changes is re-rendered
 * and found equal).
 */
function heldAs(raw: RawPresence, presence: PresenceSummary): RawPresence {
  if (raw.activities === presence.activities) return raw;
  return { status: raw.status, client_status: raw.client_status, activities: presence.activities };
}

function withGuild(guilds: Snowflake | Set<Snowflake>, guildId: Snowflake): Snowflake | Set<Snowflake> {
  if (typeof guilds !== 'string') return guilds.add(guildId);
  return guilds === guildId ? guilds : new Set([guilds, guildId]);
}

/** What is left after `guildId`; null when no guild is. */
function withoutGuild(
  guilds: Snowflake | Set<Snowflake>,
  guildId: Snowflake,
): Snowflake | Set<Snowflake> | null {
  if (typeof guilds === 'string') return guilds === guildId ? null : guilds;
  guilds.delete(guildId);
  if (guilds.size > 1) return guilds;
  const [only] = guilds;
  return only ?? null;
}
