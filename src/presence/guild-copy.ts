import type { GatewayActivity } from 'discord-api-types/v10';
import type { RawPresence } from './model.js';

/**
 * Discord sends one PRESENCE_UPDATE per guild the user shares with the bot, and the copies differ in
 * activity timestamps and `created_at` by up to a few hundred ms (a few seconds under load). Within this
 * tolerance an update is a copy of the presence we already hold, not a change; a real seek moves the
 * start by more, and a new track or replay moves it by the length of a song.
 */
export const GUILD_COPY_TOLERANCE_MS = 3_000;

/** True when `incoming` says nothing that `current` does not, apart from per-guild timing jitter. */
export function isGuildCopy(current: RawPresence, incoming: RawPresence): boolean {
  if (current.status !== incoming.status) return false;
  if (!sameClientStatus(current, incoming)) return false;
  if (current.activities.length !== incoming.activities.length) return false;
  return current.activities.every((activity, index) =>
    sameActivity(activity, incoming.activities[index] as GatewayActivity),
  );
}

function sameClientStatus(a: RawPresence, b: RawPresence): boolean {
  const aKeys = Object.keys(a.client_status) as (keyof RawPresence['client_status'])[];
  if (aKeys.length !== Object.keys(b.client_status).length) return false;
  return aKeys.every((key) => a.client_status[key] === b.client_status[key]);
}

function sameActivity(a: GatewayActivity, b: GatewayActivity): boolean {
  return (
    near(a.created_at, b.created_at) &&
    near(a.timestamps?.start, b.timestamps?.start) &&
    near(a.timestamps?.end, b.timestamps?.end) &&
    sameJson(a, b, COMPARED_APART) &&
    sameJson(a.assets, b.assets, RESOLVED)
  );
}

function near(a: number | undefined, b: number | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Math.abs(a - b) <= GUILD_COPY_TOLERANCE_MS;
}

/** Compared by `near` (the timing), or by their own rule (the assets). */
const COMPARED_APART: ReadonlySet<string> = new Set(['created_at', 'timestamps', 'assets']);
/**
 * The held activities carry their images' URLs (activities.ts), a copy from Discord does not: the URLs
 * follow from the keys, which are compared.
 */
const RESOLVED: ReadonlySet<string> = new Set(['large_image_url', 'small_image_url']);
const NOTHING: ReadonlySet<string> = new Set();

/**
 * Equal as JSON (same keys in the same order, same values), leaving out `skip` at this level: what
 * comparing the two JSON texts would say, without writing them. Activities come from JSON.parse, so they
 * hold nothing but JSON values.
 */
function sameJson(a: unknown, b: unknown, skip: ReadonlySet<string> = NOTHING): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, index) => sameJson(item, other[index]));
  }
  const aKeys = Object.keys(a).filter((key) => !skip.has(key));
  const bKeys = Object.keys(b).filter((key) => !skip.has(key));
  if (aKeys.length !== bKeys.length) return false;
  const aRecord = a as Record<string, unknown>;
  const bRecord = b as Record<string, unknown>;
  return aKeys.every((key, index) => key === bKeys[index] && sameJson(aRecord[key], bRecord[key]));
}
