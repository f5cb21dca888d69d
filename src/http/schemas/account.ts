import { TRACKED_TRACKS_PER_USER } from '../../model/history.js';
import { historySchema, nowPlayingWith } from './history.js';
import { epochMs, nullableEpochMs } from './presence.js';
import { privacySettingsSchema } from './privacy.js';
import { readTokenListSchema } from './read-tokens.js';
import { webhookListSchema } from './webhooks.js';

/** What `GET /v1/users/@me/export` answers, as JSON Schema for the OpenAPI document. */

const snowflake = { type: 'string', pattern: '^[0-9]{1,20}$' } as const;

export const accountExportSchema = {
  type: 'object',
  properties: {
    user_id: snowflake,
    exported_at: epochMs,
    api_key: {
      type: ['object', 'null'],
      description: 'the live key, never its hash: when it was made (null where the store keeps no time)',
      properties: { created_at: nullableEpochMs },
      required: ['created_at'],
      additionalProperties: false,
    },
    read_tokens: readTokenListSchema.properties.read_tokens,
    history_erased_at: { ...nullableEpochMs, description: 'when the history was last erased; null if never' },
    privacy: privacySettingsSchema,
    profile: {
      type: ['object', 'null'],
      description: 'the banner and accent colour fetched from Discord, and when',
      properties: {
        banner: { type: ['string', 'null'] },
        accent_color: { type: ['integer', 'null'] },
        fetched_at: epochMs,
      },
      required: ['banner', 'accent_color', 'fetched_at'],
      additionalProperties: false,
    },
    presence: {
      description: 'the presence as the owner reads it (`@me`); null while not monitored',
      anyOf: [{ $ref: 'presence#' }, { type: 'null' }],
    },
    webhooks: { ...webhookListSchema.properties.webhooks, description: 'without their secrets' },
    kv: { type: 'object', additionalProperties: { type: 'string' } },
    status_history: historySchema.properties.status_history,
    track_history: historySchema.properties.track_history,
    play_counts: {
      type: 'array',
      description: 'every track counted, most played first, then most recently played',
      maxItems: TRACKED_TRACKS_PER_USER,
      items: nowPlayingWith({
        last_played: epochMs,
        play_count: { type: 'integer', minimum: 1 },
        plays_by_day: {
          type: 'object',
          description: 'its plays of each recent UTC day (`YYYY-MM-DD`), as kept for top tracks by period',
          propertyNames: { pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' },
          additionalProperties: { type: 'integer', minimum: 1 },
        },
      }),
    },
    stats: {
      type: 'object',
      description: 'as kept: when last seen, and the plays counted on one UTC day',
      properties: {
        last_seen: nullableEpochMs,
        plays_day: { type: ['string', 'null'], description: 'the UTC day (`YYYY-MM-DD`) `plays` counts' },
        plays: { type: 'integer', minimum: 0 },
      },
      required: ['last_seen', 'plays_day', 'plays'],
      additionalProperties: false,
    },
  },
  required: [
    'user_id',
    'exported_at',
    'api_key',
    'read_tokens',
    'history_erased_at',
    'privacy',
    'profile',
    'presence',
    'webhooks',
    'kv',
    'status_history',
    'track_history',
    'play_counts',
    'stats',
  ],
  additionalProperties: false,
} as const;
