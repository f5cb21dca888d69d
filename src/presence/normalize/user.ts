import type { DiscordUser } from '../model.js';
import { isRecord } from './values.js';

/**
 * What we know of a user after another partial user object. Presence payloads may carry only `id`, so the
 * known user is the merge of every partial seen:
 *
 * - a field the partial has (including `null`: an avatar removed, a display name cleared) replaces ours;
 * - a field it lacks, or has as `undefined`, keeps what we know;
 * - nested objects (`avatar_decoration_data`, `primary_guild`, …) are replaced whole, as Discord sends them.
 *
 * Returns `known` itself (===) when the partial changes nothing, so callers can skip work by identity.
 * A partial for another id replaces what we know.
 */
export function mergeUser(known: DiscordUser | undefined, partial: DiscordUser): DiscordUser {
  if (!isRecord(partial) || typeof partial.id !== 'string') return known ?? { id: '' };
  if (known === undefined || known.id !== partial.id) return withoutUndefined(partial);
  let merged: Record<string, unknown> | undefined;
  for (const key of Object.keys(partial)) {
    const value = (partial as Record<string, unknown>)[key];
    if (value === undefined || sameJson((known as Record<string, unknown>)[key], value)) continue;
    merged ??= { ...known };
    setOwn(merged, key, value);
  }
  return merged === undefined ? known : (merged as DiscordUser);
}

/**
 * The user without `undefined` fields. A user parsed from a payload has none, and is kept as it is: a
 * copy built field by field would hold most fields outside the object, costing a second allocation per
 * user. Nothing changes a user object once held (a merge makes a new one).
 */
function withoutUndefined(user: DiscordUser): DiscordUser {
  if (!hasUndefined(user as Record<string, unknown>)) return user;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(user)) {
    const value = (user as Record<string, unknown>)[key];
    if (value !== undefined) setOwn(copy, key, value);
  }
  return copy as DiscordUser;
}

/** Looked at in place: a member listing asks it of every member, and a list of their values each is garbage. */
function hasUndefined(record: Record<string, unknown>): boolean {
  for (const key in record) {
    if (Object.hasOwn(record, key) && record[key] === undefined) return true;
  }
  return false;
}

function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Deep equality of JSON-like values (what user objects are made of). */
function sameJson(a: unknown, b: unknown, depth = 0): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || depth > 16) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const aRecord = a as Record<string, unknown>;
  const bRecord = b as Record<string, unknown>;
  const aKeys = Object.keys(aRecord).filter((key) => aRecord[key] !== undefined);
  const bKeys = Object.keys(bRecord).filter((key) => bRecord[key] !== undefined);
  if (aKeys.length !== bKeys.length) return false;
  return aKeys.every((key) => Object.hasOwn(bRecord, key) && sameJson(aRecord[key], bRecord[key], depth + 1));
}
