import { grown } from '../../collections/snowflake-slots.js';
import type { Snowflake } from '../model.js';

/** A slot in no guild. */
const NONE = -1;
/** A slot in more than one guild: its guilds are in a set. */
const MANY = -2;

/**
 * Which guilds each slot's user shares with the bot. Most share one, held as a number in a typed array;
 * the few in several have a set. Listing a guild's members goes over every slot, which only a guild
 * going away or a re-listing ending needs.
 */
export class GuildMemberships {
  private guildOf = new Int32Array(0);
  private readonly several = new Map<number, Set<number>>();
  private readonly numbers = new Map<Snowflake, number>();
  /** By guild number, its id. */
  private readonly names: Snowflake[] = [];
  private readonly counts = new Map<Snowflake, number>();
  /** By guild number, 1 while the guild is lost (`setLost`). */
  private lost = new Uint8Array(0);

  /** The guilds with members. */
  guildIds(): Snowflake[] {
    return [...this.counts.keys()];
  }

  count(guildId: Snowflake): number {
    return this.counts.get(guildId) ?? 0;
  }

  /** Adds the slot to the guild; false when it was in it. */
  join(slot: number, guildId: Snowflake): boolean {
    if (slot >= this.guildOf.length) {
      const from = this.guildOf.length;
      this.guildOf = grown(this.guildOf, Math.max(slot + 1, from * 2, 1024));
      this.guildOf.fill(NONE, from);
    }
    const guild = this.numberOf(guildId);
    const held = this.guildOf[slot] as number;
    if (held === guild) return false;
    if (held === NONE) this.guildOf[slot] = guild;
    else if (held === MANY) {
      const set = this.several.get(slot) as Set<number>;
      if (set.has(guild)) return false;
      set.add(guild);
    } else {
      this.guildOf[slot] = MANY;
      this.several.set(slot, new Set([held, guild]));
    }
    this.counts.set(guildId, this.count(guildId) + 1);
    return true;
  }

  /** Takes the slot out of the guild; false when it was not in it. */
  leave(slot: number, guildId: Snowflake): boolean {
    const guild = this.numbers.get(guildId);
    if (guild === undefined || !this.has(slot, guild)) return false;
    const held = this.guildOf[slot] as number;
    if (held === MANY) {
      const set = this.several.get(slot) as Set<number>;
      set.delete(guild);
      if (set.size === 1) {
        this.several.delete(slot);
        this.guildOf[slot] = set.values().next().value as number;
      }
    } else this.guildOf[slot] = NONE;
    const count = this.count(guildId) - 1;
    if (count === 0) this.counts.delete(guildId);
    else this.counts.set(guildId, count);
    return true;
  }

  /** The guilds the slot is in. */
  guildsOf(slot: number): Snowflake[] {
    const held = slot < this.guildOf.length ? (this.guildOf[slot] as number) : NONE;
    if (held === NONE) return [];
    if (held !== MANY) return [this.names[held] as Snowflake];
    return [...(this.several.get(slot) as Set<number>)].map((guild) => this.names[guild] as Snowflake);
  }

  /** Whether the slot is in any guild. */
  inAny(slot: number): boolean {
    return slot < this.guildOf.length && this.guildOf[slot] !== NONE;
  }

  /** The slots in the guild, below `end`. */
  slotsIn(guildId: Snowflake, end: number): number[] {
    const guild = this.numbers.get(guildId);
    const slots: number[] = [];
    if (guild === undefined || !this.counts.has(guildId)) return slots;
    for (let slot = 0; slot < Math.min(end, this.guildOf.length); slot++) {
      if (this.has(slot, guild)) slots.push(slot);
    }
    return slots;
  }

  /** The slots in any of the guilds, below `end`, in one pass over them all. */
  slotsInAny(guildIds: readonly Snowflake[], end: number): number[] {
    const guilds = new Set<number>();
    for (const guildId of guildIds) {
      const guild = this.numbers.get(guildId);
      if (guild !== undefined && this.counts.has(guildId)) guilds.add(guild);
    }
    const slots: number[] = [];
    if (guilds.size === 0) return slots;
    for (let slot = 0; slot < Math.min(end, this.guildOf.length); slot++) {
      const held = this.guildOf[slot] as number;
      if (held === NONE) continue;
      if (held === MANY) {
        for (const guild of this.several.get(slot) as Set<number>) {
          if (guilds.has(guild)) {
            slots.push(slot);
            break;
          }
        }
      } else if (guilds.has(held)) slots.push(slot);
    }
    return slots;
  }

  /**
   * Whether the guild is lost: its shard's session ended and no new one has sent the guild yet, so nothing
   * is heard through it.
   */
  setLost(guildId: Snowflake, lost: boolean): void {
    const guild = this.numberOf(guildId);
    if (guild >= this.lost.length)
      this.lost = grown(this.lost, Math.max(guild + 1, this.lost.length * 2, 16));
    this.lost[guild] = lost ? 1 : 0;
  }

  /** Whether the slot is in some guild, and every guild it is in is lost. */
  onlyInLost(slot: number): boolean {
    const held = slot < this.guildOf.length ? (this.guildOf[slot] as number) : NONE;
    if (held === NONE) return false;
    if (held !== MANY) return this.lost[held] === 1;
    for (const guild of this.several.get(slot) as Set<number>) if (this.lost[guild] !== 1) return false;
    return true;
  }

  private has(slot: number, guild: number): boolean {
    const held = this.guildOf[slot];
    return held === guild || (held === MANY && (this.several.get(slot) as Set<number>).has(guild));
  }

  private numberOf(guildId: Snowflake): number {
    let guild = this.numbers.get(guildId);
    if (guild === undefined) {
      guild = this.numbers.size;
      this.numbers.set(guildId, guild);
      this.names.push(guildId);
    }
    return guild;
  }
}
