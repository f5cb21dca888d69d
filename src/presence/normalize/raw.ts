import { type GatewayActivity, PresenceUpdateStatus } from 'discord-api-types/v10';
import type { ClientStatus, DiscordStatus, RawPresence } from '../model.js';
import { ACTIVE_STATUSES, CLIENT_PLATFORMS } from './client-status.js';
import { arrayOf, field, isRecord } from './values.js';

/** A user we know nothing more about: offline, doing nothing, on no platform. */
export const OFFLINE_PRESENCE: RawPresence = Object.freeze({
  status: PresenceUpdateStatus.Offline,
  activities: Object.freeze([]) as unknown as GatewayActivity[],
  client_status: Object.freeze({}),
}) as RawPresence;

const STATUSES: ReadonlySet<unknown> = new Set<DiscordStatus>([
  PresenceUpdateStatus.Online,
  PresenceUpdateStatus.Idle,
  PresenceUpdateStatus.DoNotDisturb,
  PresenceUpdateStatus.Offline,
]);

/**
 * The parts of a PRESENCE_UPDATE (or of a member listing's `presences[]` entry) that make a presence,
 * read defensively. Never throws, whatever `payload` is:
 *
 * | field           | kept                                         | otherwise                    |
 * |-----------------|----------------------------------------------|------------------------------|
 * | `status`        | online · idle · dnd · offline                | offline (also "invisible")   |
 * | `activities`    | objects with a string `name`, integer `type` | dropped; [] if not an array  |
 * | `client_status` | the five platforms, with an active status    | dropped; {} if not an object |
 *
 * Activities are kept as the same objects (normalizing them is `activitiesFrom`'s job).
 */
export function rawPresenceFrom(payload: unknown): RawPresence {
  try {
    return {
      status: statusFrom(field(payload, 'status')),
      activities: arrayOf(field(payload, 'activities')).filter(isActivity),
      client_status: clientStatusFrom(field(payload, 'client_status')),
    };
  } catch {
    // Only an object built in-process can get here (a throwing getter or proxy); JSON cannot.
    return { status: PresenceUpdateStatus.Offline, activities: [], client_status: {} };
  }
}

/** A status Discord reports, or offline for anything else ("invisible" is shown as offline). */
export function statusFrom(value: unknown): DiscordStatus {
  return STATUSES.has(value) ? (value as DiscordStatus) : PresenceUpdateStatus.Offline;
}

function isActivity(value: unknown): value is GatewayActivity {
  return isRecord(value) && typeof value.name === 'string' && Number.isInteger(value.type);
}

function clientStatusFrom(value: unknown): ClientStatus {
  const clientStatus: ClientStatus = {};
  if (!isRecord(value)) return clientStatus;
  for (const platform of CLIENT_PLATFORMS) {
    const status = value[platform];
    if (ACTIVE_STATUSES.has(status)) clientStatus[platform] = status as DiscordStatus;
  }
  return clientStatus;
}
