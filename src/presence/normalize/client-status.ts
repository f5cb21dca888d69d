import { PresenceUpdateStatus } from 'discord-api-types/v10';
import type { DiscordStatus } from '../model.js';
import { field } from './values.js';

export interface ActiveOn {
  active_on_discord_desktop: boolean;
  active_on_discord_web: boolean;
  active_on_discord_mobile: boolean;
  active_on_discord_embedded: boolean;
  active_on_discord_vr: boolean;
}

/** The platforms `client_status` may name, in the order of the presence object's fields. */
export const CLIENT_PLATFORMS = ['desktop', 'web', 'mobile', 'embedded', 'vr'] as const;
export type ClientPlatform = (typeof CLIENT_PLATFORMS)[number];

/** The statuses a platform can be active with; Discord leaves out a platform rather than say offline. */
export const ACTIVE_STATUSES: ReadonlySet<unknown> = new Set<DiscordStatus>([
  PresenceUpdateStatus.Online,
  PresenceUpdateStatus.Idle,
  PresenceUpdateStatus.DoNotDisturb,
]);

/**
 * `active_on_discord_*`: one boolean per platform, true when `client_status` has an (active) status for
 * it. Discord leaves out the platforms a user is not on, so a missing key is false.
 */
export function activeOnFrom(clientStatus: unknown): ActiveOn {
  return {
    active_on_discord_desktop: activeOn(clientStatus, 'desktop'),
    active_on_discord_web: activeOn(clientStatus, 'web'),
    active_on_discord_mobile: activeOn(clientStatus, 'mobile'),
    active_on_discord_embedded: activeOn(clientStatus, 'embedded'),
    active_on_discord_vr: activeOn(clientStatus, 'vr'),
  };
}

function activeOn(clientStatus: unknown, platform: ClientPlatform): boolean {
  return ACTIVE_STATUSES.has(field(clientStatus, platform));
}
