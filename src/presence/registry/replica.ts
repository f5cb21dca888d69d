import type { DiscordStatus, Presence, Snowflake } from '../model.js';
import type { PresenceBody, PresenceChange, PresenceListener, PresenceSource } from './registry.js';
import { kvAtOf, type PresenceSnapshot, snapshotOfJson } from './snapshot.js';

/** A user's shared presence as an ingest node published it: `json` null once nobody monitors them. */
export interface PublishedPresence {
  userId: Snowflake;
  /** Grows with every publication of this user, so a late or repeated one is recognised. */
  version: number;
  /** The store revision of the KV inside `json`. */
  kvRevision: number;
  json: string | null;
  /**
   * The presence's `discord_status`, and where its KV's JSON starts in `json` (UTF-8 bytes), so neither
   * needs the JSON parsed; absent from what older nodes published.
   */
  status?: DiscordStatus;
  kvAt?: number;
  /** When the ingest node saw the change (epoch ms); absent from what older nodes published. */
  at?: number;
  /**
   * Set when the KV travels apart: `json` is then the presence without its KV's JSON, which is stored
   * under this tag, the same bytes for as long as the tag is the same.
   */
  kvTag?: string;
}

interface Entry {
  snapshot: PresenceSnapshot;
  kvRevision: number;
  kvTag: string | undefined;
}

/**
 * An API node's copy of the presences ingest nodes publish. Publications are applied in version order
 * per user: an older one than what is kept is dropped, so a replay or a late message never rolls a
 * presence back. Nothing here normalizes: the JSON is the one the ingest node built.
 */
export class PresenceReplica implements PresenceSource {
  private readonly entries = new Map<Snowflake, Entry>();
  private readonly listeners = new Set<PresenceListener>();

  get size(): number {
    return this.entries.size;
  }

  get(userId: Snowflake): PresenceSnapshot | undefined {
    return this.entries.get(userId)?.snapshot;
  }

  body(userId: Snowflake): PresenceBody | undefined {
    const snapshot = this.entries.get(userId)?.snapshot;
    return snapshot && { body: snapshot.body, digest: snapshot.digest().toString('base64url') };
  }

  *snapshots(): Iterable<[Snowflake, PresenceSnapshot]> {
    for (const [userId, entry] of this.entries) yield [userId, entry.snapshot];
  }

  onChange(listener: PresenceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The version kept for a user, 0 when none: a publication more than one ahead means one was missed. */
  versionOf(userId: Snowflake): number {
    return this.entries.get(userId)?.snapshot.version ?? 0;
  }

  kvRevisionOf(userId: Snowflake): number {
    return this.entries.get(userId)?.kvRevision ?? 0;
  }

  /** The KV's JSON kept for the user when it is the one of `kvTag`, to go into their next presence as is. */
  kvJsonOf(userId: Snowflake, kvTag: string): string | Buffer | undefined {
    const kept = this.entries.get(userId);
    return kept?.kvTag === kvTag ? kept.snapshot.kvJson() : undefined;
  }

  /**
   * Applies one publication, its KV's JSON put back in (`withKv`) if it travelled apart; true when it
   * changed what this replica serves.
   */
  apply(published: PublishedPresence): boolean {
    const kept = this.entries.get(published.userId);
    if (published.json !== null && kept && published.version <= kept.snapshot.version) return false;
    return this.replace(published, kept);
  }

  /**
   * Replaces everything with a full listing (start-up, or after the connection to the shared state was
   * lost): users missing from it are gone, the rest are taken as listed, so subscribers hear only what
   * really changed while this node was not listening.
   */
  resync(listing: Iterable<PublishedPresence>): void {
    const listed = new Set<Snowflake>();
    for (const published of listing) {
      listed.add(published.userId);
      const kept = this.entries.get(published.userId);
      // Not by version: a user removed and monitored again while we were away restarts at a lower one.
      if (kept?.snapshot.version === published.version && kept.snapshot.json === published.json) continue;
      this.replace(published, kept);
    }
    for (const [userId, kept] of [...this.entries]) {
      if (!listed.has(userId)) this.replace({ userId, version: 0, kvRevision: 0, json: null }, kept);
    }
  }

  private replace(published: PublishedPresence, kept: Entry | undefined): boolean {
    const { userId } = published;
    // A full listing says when nothing was seen: it is seen now.
    const at = published.at ?? Date.now();
    if (published.json === null) {
      if (!kept) return false;
      this.entries.delete(userId);
      this.emit({ kind: 'unmonitored', userId, previous: kept.snapshot, at });
      return true;
    }
    const current = snapshotOfPublished(published.json, published);
    this.entries.set(userId, { snapshot: current, kvRevision: published.kvRevision, kvTag: published.kvTag });
    this.emit(
      kept
        ? { kind: 'updated', userId, previous: kept.snapshot, current, at }
        : { kind: 'monitored', userId, current, at },
    );
    return true;
  }

  private emit(change: PresenceChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

/** A publication whose KV travelled apart, with the KV's JSON back in its place: the last field. */
export function withKv(published: PublishedPresence, kvJson: string | Buffer): PublishedPresence {
  if (published.json === null) return published;
  return { ...published, json: `${published.json.slice(0, -1)}${kvJson.toString()}}` };
}

/** The snapshot of a publication; one from an older node, which did not say its status or KV offset, is parsed. */
function snapshotOfPublished(json: string, published: PublishedPresence): PresenceSnapshot {
  const { version, status, kvAt } = published;
  if (status !== undefined && kvAt !== undefined) return snapshotOfJson(json, version, status, kvAt);
  const presence = JSON.parse(json) as Presence;
  return snapshotOfJson(json, version, presence.discord_status, kvAtOf(json, presence));
}
