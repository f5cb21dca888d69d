import { MAX_ACCENT_COLOR } from '../../presence/normalize/profile.js';
import { MAX_TIMESTAMP_MS } from '../../presence/normalize/values.js';
import { SNOWFLAKE_PATTERN } from '../../presence/snowflake.js';

/**
 * The presence object of the API contract (docs/api.md, `GET /v1/users/:id`) as JSON Schema (draft-07, what
 * Fastify's Ajv speaks), so response schemas and the OpenAPI description can reuse it. Tests validate
 * every presence the service builds against it.
 *
 * Timestamps are integers, epoch ms, that every JSON parser reads exactly: 0 ≤ t ≤ 2^53 − 1 (a larger
 * number is printed as `1e+21` and is no integer to a client).
 */

const nullableString = { type: ['string', 'null'] } as const;
const snowflake = { type: 'string', pattern: SNOWFLAKE_PATTERN } as const;
export const epochMs = { type: 'integer', minimum: 0, maximum: MAX_TIMESTAMP_MS } as const;
export const nullableEpochMs = { type: ['integer', 'null'], minimum: 0, maximum: MAX_TIMESTAMP_MS } as const;

const timestamps = {
  type: 'object',
  properties: { start: nullableEpochMs, end: nullableEpochMs },
  required: ['start', 'end'],
  additionalProperties: false,
} as const;

const musicProperties = {
  track_id: nullableString,
  timestamps,
  album: nullableString,
  album_art_url: nullableString,
  artist: nullableString,
  song: nullableString,
} as const;

export const spotifySchema = {
  type: 'object',
  properties: musicProperties,
  required: Object.keys(musicProperties),
  additionalProperties: false,
} as const;

export const youtubeMusicSchema = {
  type: 'object',
  properties: { ...musicProperties, url: nullableString },
  required: [...Object.keys(musicProperties), 'url'],
  additionalProperties: false,
} as const;

const nowPlayingProperties = {
  source: {
    enum: [
      'spotify',
      'youtube_music',
      'apple_music',
      'tidal',
      'deezer',
      'soundcloud',
      'amazon_music',
      'other',
    ],
  },
  song: nullableString,
  artist: nullableString,
  album: nullableString,
  album_art_url: nullableString,
  track_id: nullableString,
  track_url: nullableString,
  timestamps,
  duration_ms: { type: ['integer', 'null'], minimum: 1 },
} as const;

export const nowPlayingSchema = {
  type: 'object',
  properties: nowPlayingProperties,
  required: Object.keys(nowPlayingProperties),
  additionalProperties: false,
} as const;

export const customStatusSchema = {
  type: 'object',
  properties: {
    text: nullableString,
    emoji: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 1 },
            id: { type: ['string', 'null'] },
            animated: { type: 'boolean' },
          },
          required: ['name', 'id', 'animated'],
          additionalProperties: false,
        },
      ],
    },
  },
  required: ['text', 'emoji'],
  additionalProperties: false,
} as const;

/** These properties when the value is an object; anything else is Discord's to send. */
function whenObject<P extends Record<string, object>>(properties: P) {
  return { anyOf: [{ not: { type: 'object' } }, { type: 'object', properties }] } as const;
}

/**
 * Discord's activity object, passed through: what the contract guarantees of it (a name and a type,
 * snowflakes as strings, timestamps as epoch-ms integers); any other field is Discord's, as sent.
 */
export const activitySchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    type: { type: 'integer' },
    // null as Discord sent it: no application.
    application_id: { type: ['string', 'null'] },
    created_at: epochMs,
    timestamps: whenObject({ start: epochMs, end: epochMs }),
    emoji: whenObject({ id: { type: ['string', 'null'] } }),
    assets: whenObjectWith({ large_image_url: nullableString, small_image_url: nullableString }),
  },
  required: ['name', 'type'],
} as const;

/** When the value is an object, these properties, each present; anything else is Discord's to send. */
function whenObjectWith<P extends Record<string, object>>(properties: P) {
  return {
    anyOf: [{ not: { type: 'object' } }, { type: 'object', properties, required: Object.keys(properties) }],
  } as const;
}

/** An object Discord may send on a user, with the URL of its image beside it. */
const withUrl = (url: string) => whenObjectWith({ [url]: nullableString });

/**
 * Discord's user object as the gateway gives it (merged from partials): at least its id; its server tag,
 * avatar decoration and nameplate, when Discord sent them, with their images' URLs.
 */
export const discordUserSchema = {
  type: 'object',
  properties: {
    id: snowflake,
    primary_guild: withUrl('badge_url'),
    avatar_decoration_data: withUrl('asset_url'),
    collectibles: whenObject({ nameplate: withUrl('asset_url') }),
  },
  required: ['id'],
} as const;

export const discordStatusSchema = { enum: ['online', 'idle', 'dnd', 'offline'] } as const;

const activeOn = { type: 'boolean' } as const;

const presenceProperties = {
  discord_user: discordUserSchema,
  discord_status: discordStatusSchema,
  active_on_discord_desktop: activeOn,
  active_on_discord_web: activeOn,
  active_on_discord_mobile: activeOn,
  active_on_discord_embedded: activeOn,
  active_on_discord_vr: activeOn,
  custom_status: { anyOf: [{ type: 'null' }, customStatusSchema] },
  listening_to_spotify: { type: 'boolean' },
  spotify: { anyOf: [{ type: 'null' }, spotifySchema] },
  listening_to_youtube_music: { type: 'boolean' },
  youtube_music: { anyOf: [{ type: 'null' }, youtubeMusicSchema] },
  listening_to_music: { type: 'boolean' },
  now_playing: { anyOf: [{ type: 'null' }, nowPlayingSchema] },
  activities: { type: 'array', items: activitySchema },
  banner: nullableString,
  banner_url: nullableString,
  accent_color: { type: ['integer', 'null'], minimum: 0, maximum: MAX_ACCENT_COLOR },
  member_since: {
    ...nullableEpochMs,
    description: "the account's creation; null when the profile is hidden",
  },
  privacy: {
    type: 'object',
    description:
      "What the user's privacy settings hide (docs/privacy.md); absent when they hide nothing. Lanyard's clients ignore it.",
    properties: {
      hidden: {
        type: 'array',
        items: { type: 'string' },
        examples: [['custom_status', 'activities:spotify']],
      },
    },
    required: ['hidden'],
    additionalProperties: false,
  },
  observed_at: {
    ...epochMs,
    description:
      'when Discord last reported a change of what this presence shows (a presence update, a member listing), or confirmed a stale one; not moved by the per-server copies of one update',
  },
  stale: {
    type: 'boolean',
    description:
      'true while every server the user is seen through is on a gateway shard that lost its Discord session, until Discord reports the user again (normally the listing that follows the new session): what the presence shows may be out of date since `observed_at`. A resumed session never makes it true.',
  },
  kv: { type: 'object', additionalProperties: { type: 'string' } },
} as const;

/** The presence object: every field present but `privacy`, in this order, nothing else. */
export const presenceSchema = {
  $id: 'presence',
  type: 'object',
  properties: presenceProperties,
  required: Object.keys(presenceProperties).filter((field) => field !== 'privacy'),
  additionalProperties: false,
} as const;
