import { ARENA_ROOM_INTS, BodyArena } from '../../collections/body-arena.js';
import { grown, NO_SLOT, SnowflakeSlots } from '../../collections/snowflake-slots.js';
import type { ClientStatus, DiscordStatus, Profile, Snowflake } from '../model.js';
import { CLIENT_PLATFORMS } from '../normalize/client-status.js';
import { PresenceSnapshot } from './snapshot.js';

const STATUSES: readonly DiscordStatus[] = ['offline', 'online', 'idle', 'dnd'];
/** Bits of one platform's status in a client status code: none, or one of STATUSES. */
const PLATFORM_BITS = 3;
const PLATFORM_MASK = (1 << PLATFORM_BITS) - 1;
/**
 * The snapshots of the latest changes, by slot: the readers of a change (fan-out, then the reads that
 * follow it) share one snapshot and what they keep for it. A snapshot made for a read is not kept: kept,
 * each would outlive the young generation, to be copied by every collection while it stays.
 */
const SNAPSHOT_CACHE_SIZE = 16 * 1024;

/** A body of LARGE_BODY_BYTES or more, kept as its bytes, and its digest. */
interface LargeBody {
  body: Buffer;
  digest: Buffer;
}

/** What the table keeps of a rendered presence besides its snapshot. */
export interface PresenceRow {
  body: string | Buffer;
  userLength: number;
  kvAt: number;
  status: DiscordStatus;
  clientStatus: ClientStatus;
  /** The presence's `observed_at`. */
  observedAt: number;
}

/**
 * What the registry keeps per monitored user, in columns of typed arrays by slot and bodies in an
 * arena: for a million users, a few hundred objects on the JS heap rather than millions (why:
 * docs/architecture.md#per-user-state-off-the-js-heap). Rare things (a profile with a banner, a body
 * of LARGE_BODY_BYTES or more) are in maps by slot.
 *
 * A snapshot is made from the columns when read, unless it is one of the latest changes'; a REST read
 * takes the body and its digest as they are kept, with no snapshot (`body`, `digestText`).
 */
export class PresenceTable {
  private readonly slots = new SnowflakeSlots(ARENA_ROOM_INTS);
  private readonly arena = new BodyArena(this.slots);
  /** Large bodies: UTF-8 bytes, shared with their snapshots as they are, and their digests. */
  private readonly large = new Map<number, LargeBody>();
  private readonly profiles = new Map<number, Profile>();
  private versions = new Float64Array(0);
  private kvRevisions = new Float64Array(0);
  private userLengths = new Int32Array(0);
  private kvAts = new Int32Array(0);
  private statuses = new Uint8Array(0);
  private clientStatuses = new Uint16Array(0);
  private observedAts = new Float64Array(0);
  /** 1 for a stale user: what their next rendering writes, kept apart from the body for pending slots too. */
  private stales = new Uint8Array(0);
  private staleUsers = 0;
  private readonly cachedSlots = new Int32Array(SNAPSHOT_CACHE_SIZE).fill(NO_SLOT);
  private readonly cached: (PresenceSnapshot | undefined)[] = new Array(SNAPSHOT_CACHE_SIZE).fill(undefined);

  get size(): number {
    return this.slots.size;
  }

  /** Users whose `stale` is set. */
  get staleCount(): number {
    return this.staleUsers;
  }

  /** Every slot in use is below this. */
  get end(): number {
    return this.slots.end;
  }

  slotOf(userId: Snowflake): number {
    return this.slots.slotOf(userId);
  }

  inUse(slot: number): boolean {
    return this.slots.inUse(slot);
  }

  idOf(slot: number): Snowflake {
    return this.slots.idOf(slot);
  }

  /** A slot for a user not in the table, with `row` as their first version. */
  add(userId: Snowflake, row: PresenceRow, snapshot: PresenceSnapshot): number {
    const slot = this.slots.add(userId);
    if (slot >= this.versions.length) this.reserve(this.slots.capacity);
    this.kvRevisions[slot] = 0;
    this.profiles.delete(slot);
    this.store(slot, row, 1, snapshot);
    return slot;
  }

  /**
   * A slot for a user not in the table whose presence is not rendered yet (a pending member): `text` is
   * what it will be rendered from, kept where the body will be, as UTF-8 (which is what `isPending` asks
   * of the arena). Version 0 until `update` stores the first body.
   */
  addPending(userId: Snowflake, text: string): number {
    const slot = this.slots.add(userId);
    if (slot >= this.versions.length) this.reserve(this.slots.capacity);
    this.kvRevisions[slot] = 0;
    this.profiles.delete(slot);
    this.large.delete(slot);
    this.arena.writeUtf8(slot, text);
    this.versions[slot] = 0;
    return slot;
  }

  /**
   * Whether the slot in use holds the text of `addPending` rather than a body: asked before every read, so
   * answered from the arena's record, which the read goes on to use, rather than from another column.
   */
  isPending(slot: number): boolean {
    return this.arena.holdsUtf8(slot);
  }

  /** The text a pending slot will be rendered from. */
  pendingText(slot: number): string {
    return this.arena.utf8Text(slot);
  }

  /** Lets the user go; their slot may be another's from now on. */
  remove(userId: Snowflake): void {
    const slot = this.slots.slotOf(userId);
    if (slot === NO_SLOT) return;
    this.setStale(slot, false);
    // Before the slot goes: the arena's record of its text is in the slot's room, cleared as it goes.
    this.arena.free(slot);
    this.slots.remove(userId);
    this.large.delete(slot);
    this.profiles.delete(slot);
    this.forgetSnapshot(slot);
  }

  /** The slot's presence replaced by the next version, `snapshot` (a pending slot's first). */
  update(slot: number, row: PresenceRow, snapshot: PresenceSnapshot): void {
    this.store(slot, row, (this.versions[slot] as number) + 1, snapshot);
  }

  /** Keeps the platforms' statuses of a presence whose body stayed the same. */
  keepClientStatus(slot: number, clientStatus: ClientStatus): void {
    this.clientStatuses[slot] = clientStatusCode(clientStatus);
  }

  snapshot(slot: number): PresenceSnapshot {
    const at = slot & (SNAPSHOT_CACHE_SIZE - 1);
    if (this.cachedSlots[at] === slot) return this.cached[at] as PresenceSnapshot;
    const large = this.arena.holds(slot) ? undefined : this.large.get(slot);
    return new PresenceSnapshot(
      null,
      large ? large.body : this.arena.text(slot),
      this.versions[slot] as number,
      STATUSES[this.statuses[slot] as number] as DiscordStatus,
      this.kvAts[slot] as number,
      large ? large.digest : this.arena.digest(slot),
    );
  }

  /**
   * The slot's body: the one its latest change's snapshot holds while that is kept (no copy), else as
   * stored.
   */
  body(slot: number): string | Buffer {
    const at = slot & (SNAPSHOT_CACHE_SIZE - 1);
    if (this.cachedSlots[at] === slot) return (this.cached[at] as PresenceSnapshot).body;
    return this.stored(slot);
  }

  /**
   * The slot's digest (`PresenceSnapshot.digest`) as base64url text: made when the body was stored, so a
   * read, however many there are of a change, never hashes.
   */
  digestText(slot: number): string {
    if (this.arena.holds(slot)) return this.arena.digestText(slot);
    const { digest } = this.large.get(slot) as LargeBody;
    return digest.toString('base64url');
  }

  userLength(slot: number): number {
    return this.userLengths[slot] as number;
  }

  status(slot: number): DiscordStatus {
    return STATUSES[this.statuses[slot] as number] as DiscordStatus;
  }

  clientStatus(slot: number): ClientStatus {
    const code = this.clientStatuses[slot] as number;
    const clientStatus: ClientStatus = {};
    CLIENT_PLATFORMS.forEach((platform, index) => {
      const status = (code >> (index * PLATFORM_BITS)) & PLATFORM_MASK;
      if (status !== 0) clientStatus[platform] = STATUSES[status - 1];
    });
    return clientStatus;
  }

  /** Whether the platforms' statuses are those kept, without building them. */
  sameClientStatus(slot: number, clientStatus: ClientStatus): boolean {
    return this.clientStatuses[slot] === clientStatusCode(clientStatus);
  }

  observedAt(slot: number): number {
    return this.observedAts[slot] as number;
  }

  stale(slot: number): boolean {
    return this.stales[slot] === 1;
  }

  setStale(slot: number, stale: boolean): void {
    if (this.stale(slot) === stale) return;
    this.stales[slot] = stale ? 1 : 0;
    this.staleUsers += stale ? 1 : -1;
  }

  kvRevision(slot: number): number {
    return this.kvRevisions[slot] as number;
  }

  setKvRevision(slot: number, revision: number): void {
    this.kvRevisions[slot] = revision;
  }

  profile(slot: number): Profile | null {
    return this.profiles.get(slot) ?? null;
  }

  /** Most users set neither banner nor accent: such a profile renders as none, and is kept as none. */
  setProfile(slot: number, profile: Profile): void {
    if (profile.banner === null && profile.accent_color === null) this.profiles.delete(slot);
    else this.profiles.set(slot, profile);
  }

  private store(slot: number, row: PresenceRow, version: number, snapshot: PresenceSnapshot): void {
    const { body } = row;
    // One digest per change: the snapshot its readers share takes the one stored.
    if (typeof body === 'string') {
      this.arena.write(slot, body);
      this.large.delete(slot);
      snapshot.knowDigest(this.arena.digest(slot));
    } else {
      this.arena.free(slot);
      this.large.set(slot, { body, digest: snapshot.digest() });
    }
    this.versions[slot] = version;
    this.userLengths[slot] = row.userLength;
    this.kvAts[slot] = row.kvAt;
    this.statuses[slot] = STATUSES.indexOf(row.status);
    this.clientStatuses[slot] = clientStatusCode(row.clientStatus);
    this.observedAts[slot] = row.observedAt;
    const at = slot & (SNAPSHOT_CACHE_SIZE - 1);
    this.cachedSlots[at] = slot;
    this.cached[at] = snapshot;
  }

  /** The slot's ASCII text out of the arena, or its large body's bytes. */
  private stored(slot: number): string | Buffer {
    return this.arena.holds(slot) ? this.arena.text(slot) : (this.large.get(slot) as LargeBody).body;
  }

  private forgetSnapshot(slot: number): void {
    const at = slot & (SNAPSHOT_CACHE_SIZE - 1);
    if (this.cachedSlots[at] !== slot) return;
    this.cachedSlots[at] = NO_SLOT;
    this.cached[at] = undefined;
  }

  private reserve(capacity: number): void {
    this.versions = grown(this.versions, capacity);
    this.kvRevisions = grown(this.kvRevisions, capacity);
    this.userLengths = grown(this.userLengths, capacity);
    this.kvAts = grown(this.kvAts, capacity);
    this.statuses = grown(this.statuses, capacity);
    this.clientStatuses = grown(this.clientStatuses, capacity);
    this.observedAts = grown(this.observedAts, capacity);
    this.stales = grown(this.stales, capacity);
  }
}

/** The platforms' statuses in one number: PLATFORM_BITS each, in CLIENT_PLATFORMS order. */
function clientStatusCode(clientStatus: ClientStatus): number {
  let code = 0;
  CLIENT_PLATFORMS.forEach((platform, index) => {
    const status = clientStatus[platform];
    if (status !== undefined) code |= (STATUSES.indexOf(status) + 1) << (index * PLATFORM_BITS);
  });
  return code;
}
