import type { GatewayActivity } from 'discord-api-types/v10';
import type { RawPresence } from '../model.js';
import { snowflakeString, timestampOrNull } from './values.js';

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

/**
 * `held` is normalized (activities.ts: timestamps in ms, ids as strings, image URLs added); `incoming` is
 * as Discord sent it, so the fields normalization changes are compared as normalized.
 */
function sameActivity(held: GatewayActivity, incoming: GatewayActivity): boolean {
  return (
    near(held.created_at, incoming.created_at) &&
    near(held.timestamps?.start, incoming.timestamps?.start) &&
    near(held.timestamps?.end, incoming.timestamps?.end) &&
    idOf(held.application_id) === idOf(incoming.application_id) &&
    sameJson(held, incoming, COMPARED_APART) &&
    sameJson(held.assets, incoming.assets, RESOLVED)
  );
}

function near(a: unknown, b: unknown): boolean {
  const x = timestampOrNull(a);
  const y = timestampOrNull(b);
  if (x === null || y === null) return x === y;
  return Math.abs(x - y) <= GUILD_COPY_TOLERANCE_MS;
}

function idOf(value: unknown): string | null {
  return value === undefined || value === null ? null : snowflakeString(value);
}

/** Compared by `near` (the timing), `idOf` (the application) or their own rule (the assets). */
const COMPARED_APART: ReadonlySet<string> = new Set(['created_at', 'timestamps', 'application_id', 'assets']);
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
