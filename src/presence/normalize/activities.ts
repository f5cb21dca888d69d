import type { GatewayActivity } from 'discord-api-types/v10';
import { activityImageUrl } from './images.js';
import { arrayOf, isRecord, snowflakeString, timestampOrNull } from './values.js';

/** Fields that hold snowflakes, by where they are: the activity itself, and its `emoji`. */
export const ACTIVITY_SNOWFLAKE_FIELDS: readonly string[] = ['application_id'];
export const EMOJI_SNOWFLAKE_FIELDS: readonly string[] = ['id'];
/** Fields that hold epoch-ms timestamps: the activity's own, and those of its `timestamps`. */
export const ACTIVITY_TIMESTAMP_FIELDS: readonly string[] = ['created_at'];
export const TIMESTAMPS_FIELDS: readonly string[] = ['start', 'end'];

/** Nesting deeper than this is not an activity Discord sends; deeper parts are left out. */
export const MAX_ACTIVITY_DEPTH = 8;

/**
 * `activities`: Discord's activity objects passed through, with three guarantees.
 *
 * - Snowflakes (`application_id`, `emoji.id`) are strings. A number arriving there was already parsed as a
 *   double, so above 2^53 its low digits are gone before we see it; we still `String()` it, so clients
 *   comparing ids as strings keep working, and it is as exact as it can be. A value that cannot be an id
 *   (an object, a negative number) is left out; `emoji.id: null` (a unicode emoji) stays null.
 * - Timestamps (`created_at`, `timestamps.start`, `timestamps.end`) are integers, epoch ms, as the
 *   contract says of every timestamp: digit strings (some rich-presence clients send them) become numbers,
 *   and a value that cannot be one (negative, not a number, beyond 2^53) is left out.
 * - The copy is plain JSON: no `undefined` (JSON.stringify would drop it from objects but write `null` in
 *   arrays), no non-finite numbers, functions or other non-JSON values, so the object equals its JSON.
 * - `assets` gains `large_image_url` and `small_image_url`: the image keys resolved (images.ts), null
 *   when there is no image. Built, never fetched.
 *
 * Entries that are not objects are dropped.
 */
export function activitiesFrom(raw: unknown, cdnUrl: string): GatewayActivity[] {
  const activities: GatewayActivity[] = [];
  for (const entry of arrayOf(raw)) {
    if (!isRecord(entry)) continue;
    const activity = jsonRecord(entry, 1);
    withSnowflakes(activity, ACTIVITY_SNOWFLAKE_FIELDS);
    if (isRecord(activity.emoji)) withSnowflakes(activity.emoji, EMOJI_SNOWFLAKE_FIELDS);
    withTimestamps(activity, ACTIVITY_TIMESTAMP_FIELDS);
    if (isRecord(activity.timestamps)) withTimestamps(activity.timestamps, TIMESTAMPS_FIELDS);
    if (isRecord(activity.assets)) withImageUrls(activity.assets, activity.application_id, cdnUrl);
    activities.push(activity as unknown as GatewayActivity);
  }
  return activities;
}

function withImageUrls(assets: Record<string, unknown>, applicationId: unknown, cdnUrl: string): void {
  assets.large_image_url = activityImageUrl(assets.large_image, applicationId, cdnUrl);
  assets.small_image_url = activityImageUrl(assets.small_image, applicationId, cdnUrl);
}

function withSnowflakes(record: Record<string, unknown>, keys: readonly string[]): void {
  for (const key of keys) {
    if (!(key in record) || record[key] === null) continue;
    const id = snowflakeString(record[key]);
    if (id === null) delete record[key];
    else record[key] = id;
  }
}

function withTimestamps(record: Record<string, unknown>, keys: readonly string[]): void {
  for (const key of keys) {
    if (!(key in record)) continue;
    const ms = timestampOrNull(record[key]);
    if (ms === null) delete record[key];
    else record[key] = ms;
  }
}

/** A JSON copy of `value`; `undefined` when JSON.stringify would leave it out of an object. */
function jsonValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // JSON has no NaN, Infinity or -0: it writes null, null and 0.
      return Number.isFinite(value) ? value + 0 : null;
    case 'bigint':
      return value.toString();
    case 'object':
      if (value === null) return null;
      if (depth >= MAX_ACTIVITY_DEPTH) return undefined;
      if (Array.isArray(value)) return Array.from(value, (item) => jsonValue(item, depth + 1) ?? null);
      return jsonRecord(value as Record<string, unknown>, depth + 1);
    default:
      return undefined;
  }
}

function jsonRecord(value: Record<string, unknown>, depth: number): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = jsonValue(value[key], depth);
    if (item === undefined) continue;
    if (key === '__proto__') {
      // A plain assignment to "__proto__" (a key JSON.parse can produce) would set the prototype instead.
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    } else {
      copy[key] = item;
    }
  }
  return copy;
}
