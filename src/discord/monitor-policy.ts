import type { MonitorMode } from '../config.js';
import type { Snowflake } from '../presence/model.js';

export interface MonitorPolicySettings {
  mode: MonitorMode;
  /** With `opt-in`: members holding this role are monitored; null: no role opts anyone in. */
  roleId: string | null;
  /** Only these guilds count; null: every guild. */
  guildIds: readonly Snowflake[] | null;
  /** Only these users are monitored; null: anyone the mode lets in. */
  allowedUserIds: readonly Snowflake[] | null;
  /** With `opt-in`: whether the user asked to be monitored (`?start`, a key, their settings). */
  optedIn: (userId: Snowflake) => boolean;
}

/**
 * Who is monitored, decided where Discord's payloads come in: a guild that does not count and a member who
 * is not monitored are dropped there, before anything is stored, served, recorded or sent on. With every
 * setting at its default, everyone the bot sees is.
 */
export class MonitorPolicy {
  private readonly guilds: ReadonlySet<Snowflake> | null;
  private readonly allowed: ReadonlySet<Snowflake> | null;
  /**
   * Members seen holding the opt-in role, and in which guilds, as their latest member payload of each
   * said: a role belongs to one guild, and a member of another says nothing of it.
   */
  private readonly roleHolders = new Map<Snowflake, Set<Snowflake>>();

  constructor(private readonly settings: MonitorPolicySettings) {
    this.guilds = settings.guildIds === null ? null : new Set(settings.guildIds);
    this.allowed = settings.allowedUserIds === null ? null : new Set(settings.allowedUserIds);
  }

  /** Whether everyone is monitored, so nothing needs asking per member. */
  get monitorsEveryone(): boolean {
    return this.settings.mode === 'all' && this.guilds === null && this.allowed === null;
  }

  /** Whether the user may be served at all (ALLOWED_USER_IDS): the bot answers no one else. */
  serves(userId: Snowflake): boolean {
    return this.allowed === null || this.allowed.has(userId);
  }

  /** Whether members of the guild may be monitored at all. */
  countsGuild(guildId: Snowflake): boolean {
    return this.guilds === null || this.guilds.has(guildId);
  }

  /**
   * Whether the user is monitored. `roles`: the member's roles in `guildId` when the payload carries them
   * (member listings, joins and member updates do; presence updates do not, and the latest roles seen hold).
   */
  monitors(
    userId: Snowflake,
    member?: { guildId: Snowflake; roles: readonly Snowflake[] | undefined },
  ): boolean {
    const { roleId } = this.settings;
    if (roleId !== null && member?.roles !== undefined)
      this.noteRoles(userId, member.guildId, member.roles, roleId);
    if (this.allowed !== null && !this.allowed.has(userId)) return false;
    if (this.settings.mode === 'all') return true;
    return this.roleHolders.has(userId) || this.settings.optedIn(userId);
  }

  /** Who holds the opt-in role, and in which guilds: saved across a restart, as no listing repeats it. */
  roleHolderEntries(): Array<[Snowflake, Snowflake[]]> {
    return [...this.roleHolders].map(([userId, guilds]) => [userId, [...guilds]]);
  }

  /** Takes back what `roleHolderEntries` gave a previous process, in the guilds taken back with it. */
  restoreRoleHolders(
    entries: ReadonlyArray<readonly [Snowflake, readonly Snowflake[]]>,
    guilds: ReadonlySet<Snowflake>,
  ): void {
    if (this.settings.roleId === null) return;
    for (const [userId, guildIds] of entries) {
      const kept = guildIds.filter((guildId) => guilds.has(guildId));
      if (kept.length > 0) this.roleHolders.set(userId, new Set(kept));
    }
  }

  /** The member left the guild: the role they held there no longer counts. */
  memberLeft(userId: Snowflake, guildId: Snowflake): void {
    const guilds = this.roleHolders.get(userId);
    if (guilds?.delete(guildId) && guilds.size === 0) this.roleHolders.delete(userId);
  }

  /** After a guild's listing: the role holders there who are no longer members are let go of. */
  keepRoleHoldersIn(guildId: Snowflake, isMember: (userId: Snowflake) => boolean): void {
    for (const [userId, guilds] of [...this.roleHolders]) {
      if (guilds.has(guildId) && !isMember(userId)) this.memberLeft(userId, guildId);
    }
  }

  /** The bot left the guild: no role held there counts. */
  guildLeft(guildId: Snowflake): void {
    for (const userId of [...this.roleHolders.keys()]) this.memberLeft(userId, guildId);
  }

  private noteRoles(
    userId: Snowflake,
    guildId: Snowflake,
    roles: readonly Snowflake[],
    roleId: Snowflake,
  ): void {
    const guilds = this.roleHolders.get(userId);
    if (roles.includes(roleId)) {
      if (guilds) guilds.add(guildId);
      else this.roleHolders.set(userId, new Set([guildId]));
    } else if (guilds?.delete(guildId) && guilds.size === 0) {
      this.roleHolders.delete(userId);
    }
  }
}
