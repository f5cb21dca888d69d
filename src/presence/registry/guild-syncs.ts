import type { Snowflake } from '../model.js';

/**
 * Guilds being listed again after (re)connecting, and the members each new listing has shown so far:
 * once it ends, a member it did not show left while nobody was looking.
 */
export class GuildSyncs {
  private readonly seen = new Map<Snowflake, Set<Snowflake>>();

  /**
   * The guild's listing begins. With none of its members known, everyone still a member when it ends was
   * shown by it: a first listing of a large guild keeps no set of every id it lists.
   */
  begin(guildId: Snowflake, hasMembers: boolean): void {
    if (hasMembers) this.seen.set(guildId, new Set());
    else this.seen.delete(guildId);
  }

  /** The user was shown as a member of the guild. */
  saw(guildId: Snowflake, userId: Snowflake): void {
    this.seen.get(guildId)?.add(userId);
  }

  /** The user left the guild: those seen are then exactly its members still there. */
  left(guildId: Snowflake, userId: Snowflake): void {
    this.seen.get(guildId)?.delete(userId);
  }

  /** The guild's listing ended, or the guild is gone: the members it showed, undefined when none is kept. */
  end(guildId: Snowflake): Set<Snowflake> | undefined {
    const seen = this.seen.get(guildId);
    this.seen.delete(guildId);
    return seen;
  }
}
