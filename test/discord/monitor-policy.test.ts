import { describe, expect, it } from 'vitest';
import { MonitorPolicy } from '../../src/discord/monitor-policy.js';

/**
 * On an opt-in instance with MONITOR_ROLE_ID, holding the role in a guild monitors a member; what the
 * policy remembers of who holds it is saved across restarts, so it must let go of whoever is no longer
 * there to hold it.
 */

const ROLE = '900000000000000001';
const GUILD_A = '100000000000000001';
const GUILD_B = '100000000000000002';
const USER = '80351110224678912';

function policy(): MonitorPolicy {
  return new MonitorPolicy({
    mode: 'opt-in',
    roleId: ROLE,
    guildIds: null,
    allowedUserIds: null,
    optedIn: () => false,
  });
}

describe('who holds the opt-in role', () => {
  it('counts until the member leaves the guild, is not listed there again, or the bot leaves it', () => {
    const left = policy();
    expect(left.monitors(USER, { guildId: GUILD_A, roles: [ROLE] })).toBe(true);
    left.memberLeft(USER, GUILD_A);
    expect(left.monitors(USER)).toBe(false);

    const unlisted = policy();
    unlisted.monitors(USER, { guildId: GUILD_A, roles: [ROLE] });
    unlisted.keepRoleHoldersIn(GUILD_A, () => true);
    expect(unlisted.monitors(USER)).toBe(true);
    unlisted.keepRoleHoldersIn(GUILD_A, () => false);
    expect(unlisted.monitors(USER)).toBe(false);

    const gone = policy();
    gone.monitors(USER, { guildId: GUILD_A, roles: [ROLE] });
    gone.monitors(USER, { guildId: GUILD_B, roles: [ROLE] });
    gone.guildLeft(GUILD_A);
    expect(gone.monitors(USER)).toBe(true);
    gone.guildLeft(GUILD_B);
    expect(gone.monitors(USER)).toBe(false);
  });

  it('is taken back after a restart only in the guilds taken back with it', () => {
    const before = policy();
    before.monitors(USER, { guildId: GUILD_A, roles: [ROLE] });
    const after = policy();
    after.restoreRoleHolders(before.roleHolderEntries(), new Set([GUILD_B]));
    expect(after.monitors(USER)).toBe(false);
    after.restoreRoleHolders(before.roleHolderEntries(), new Set([GUILD_A]));
    expect(after.monitors(USER)).toBe(true);
    expect(after.roleHolderEntries()).toEqual([[USER, [GUILD_A]]]);
  });
});
