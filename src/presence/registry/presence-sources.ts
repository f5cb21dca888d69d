import { grown } from '../../collections/snowflake-slots.js';
import type { DiscordUser, RawPresence } from '../model.js';
import { isGuildCopy } from '../normalize/guild-copy.js';
import type { PresenceFields } from '../normalize/presence.js';
import { statusFrom } from '../normalize/raw.js';
import { mergeUser } from '../normalize/user.js';
import { withoutImageUrls } from '../normalize/user-images.js';
import { activityFingerprint } from './activity-fingerprint.js';
import type { Rendered, Unfiltered } from './presence-renderer.js';
import type { PresenceTable } from './presence-table.js';
import { fieldsJsonIn, type PresenceSnapshot, userJsonIn } from './snapshot.js';

/** A partial user merged into the current one. */
export interface Merged {
  user: DiscordUser;
  changed: boolean;
}

/**
 * What each monitored user's current presence was rendered from, for its next version to be compared
 * with and made from: read back from the body the table keeps (only the part needed), or, for a user
 * whose settings hide anything, kept aside whole (see `Unfiltered`). The user is read back only to merge
 * a user object that says more, and the raw presence only when an update must be compared with it or
 * something else about the user changed: its status and platforms are kept as numbers, its activities
 * are the presence's own.
 */
export class PresenceSources {
  /** By slot, `activityFingerprint` of the current activities: most changes are told without parsing them. */
  private fingerprints = new Int32Array(0);
  /** By slot, for users whose settings hide anything: what their presence was rendered from. */
  private readonly unfiltered = new Map<number, Unfiltered>();

  constructor(private readonly table: PresenceTable) {}

  /** What the slot's presence, just rendered, was made from. */
  keep(slot: number, rendered: Rendered): void {
    if (slot >= this.fingerprints.length) {
      this.fingerprints = grown(this.fingerprints, Math.max(slot + 1, this.fingerprints.length * 2));
    }
    const { unfiltered } = rendered;
    this.fingerprints[slot] = activityFingerprint((unfiltered?.raw ?? rendered.presence).activities);
    if (unfiltered) this.unfiltered.set(slot, unfiltered);
    else this.unfiltered.delete(slot);
  }

  /** The slot's user is let go. */
  forget(slot: number): void {
    this.unfiltered.delete(slot);
  }

  /**
   * Whether `raw` says what the current presence does, apart from per-guild timing jitter (`isGuildCopy`).
   * The current raw presence is the status and platforms kept, and the presence's activities, which are
   * the raw ones normalized: normalizing them again gives the same presence, and a guild copy compared
   * with them is still a copy (one that differs only in what normalizing changes is rendered again and
   * found equal). Its activities are read back only when the rest and their fingerprint are the same.
   */
  isCurrent(slot: number, current: PresenceSnapshot, raw: RawPresence): boolean {
    if (statusFrom(raw.status) !== this.table.status(slot)) return false;
    if (!this.table.sameClientStatus(slot, raw.client_status)) return false;
    if (activityFingerprint(raw.activities) !== this.fingerprints[slot]) return false;
    return isGuildCopy(this.raw(slot, current), raw);
  }

  /** Of the presence's JSON only the fields between user and KV are parsed: the activities are there. */
  raw(slot: number, current: PresenceSnapshot): RawPresence {
    const kept = this.unfiltered.get(slot);
    if (kept) return kept.raw;
    const fieldsJson = fieldsJsonIn(current.body, this.table.userLength(slot), current.kvAt);
    return {
      status: this.table.status(slot),
      client_status: this.table.clientStatus(slot),
      activities: (JSON.parse(fieldsJson) as PresenceFields).activities,
    };
  }

  /** The user, with their images' URLs, as a body holds them. */
  user(slot: number, current: PresenceSnapshot): DiscordUser {
    return this.unfiltered.get(slot)?.user ?? (JSON.parse(this.bodyUserJson(slot, current)) as DiscordUser);
  }

  /** The user's JSON, with their images' URLs: out of the body, as it is there, unless hidden from it. */
  userJson(slot: number, current: PresenceSnapshot): string {
    const kept = this.unfiltered.get(slot);
    return kept ? JSON.stringify(kept.user) : this.bodyUserJson(slot, current);
  }

  /** The KV's JSON, as it goes into the next body. */
  kvJson(slot: number, current: PresenceSnapshot): string | Buffer {
    return this.unfiltered.get(slot)?.kvJson ?? current.kvJson();
  }

  /**
   * The user merged with a partial user object; null when the partial names only the id, so nothing was
   * read back (a merge that changes nothing still hands over the user it read, for a new rendering to
   * reuse).
   */
  merged(slot: number, current: PresenceSnapshot, partial: DiscordUser): Merged | null {
    if (namesOnlyId(partial)) return null;
    // The kept user carries its images' URLs, which no payload from Discord has: they would make every
    // full user object look like a change.
    const known = withoutImageUrls(this.user(slot, current));
    const user = mergeUser(known, partial);
    return { user, changed: user !== known };
  }

  private bodyUserJson(slot: number, current: PresenceSnapshot): string {
    return userJsonIn(current.body, this.table.userLength(slot));
  }
}

/** A partial user saying nothing but who it is, as presence updates do: nothing to merge. */
function namesOnlyId(user: DiscordUser): boolean {
  for (const key in user) {
    if (key !== 'id' && (user as Record<string, unknown>)[key] !== undefined) return false;
  }
  return true;
}
