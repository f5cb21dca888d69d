import {
  ACTIVITY_TYPE_NAMES,
  DEFAULT_PRIVACY,
  HIDEABLE_MUSIC_SOURCES,
  MAX_HIDDEN_APPLICATIONS,
  PAUSED_UNTIL_UNDONE,
} from '../../presence/privacy.js';
import { SNOWFLAKE_PATTERN } from '../../presence/snowflake.js';

/** A user's privacy settings as JSON Schema, for the OpenAPI document (docs/privacy.md says what each does). */
const properties = {
  hide_activity_types: {
    type: 'array',
    items: { enum: [...ACTIVITY_TYPE_NAMES] },
    uniqueItems: true,
    description: 'activities of these types are left out (`custom` is the custom status)',
  },
  hide_application_ids: {
    type: 'array',
    items: { type: 'string', pattern: SNOWFLAKE_PATTERN },
    maxItems: MAX_HIDDEN_APPLICATIONS,
    uniqueItems: true,
    description: "activities of these applications are left out, and a player's from `now_playing`",
  },
  hide_music_sources: {
    type: 'array',
    items: { enum: [...HIDEABLE_MUSIC_SOURCES] },
    uniqueItems: true,
    description: 'these music services are left out of `activities`, `now_playing`, history and top tracks',
  },
  hide_custom_status: { type: 'boolean', description: '`custom_status` null, no custom activity' },
  hide_platforms: { type: 'boolean', description: 'every `active_on_discord_*` false' },
  hide_profile: {
    type: 'boolean',
    description:
      '`banner`, `banner_url`, `accent_color`, `member_since` null; no server tag, decoration or nameplate',
  },
  hide_kv: { type: 'boolean', description: '`kv` is `{}`' },
  record_history: { type: 'boolean', description: 'false: nothing new enters history, stats or top tracks' },
  show_last_seen: { type: 'boolean', description: 'false: `last_seen` in stats is null' },
  visibility: {
    enum: ['public', 'private'],
    description: 'private: everyone else is answered as for a user nobody monitors',
  },
  allow_agents: { type: 'boolean', description: 'whether AI agents may read the presence' },
  paused_until: {
    type: ['integer', 'null'],
    minimum: 0,
    maximum: PAUSED_UNTIL_UNDONE,
    description: `until when (epoch ms) the presence reads offline and nothing is recorded; ${PAUSED_UNTIL_UNDONE}: until undone`,
  },
  opted_in: {
    type: 'boolean',
    description: 'on an instance that monitors only those who ask (`MONITOR=opt-in`): whether you asked',
  },
} as const;

export const privacySettingsSchema = {
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
  examples: [{ ...DEFAULT_PRIVACY, hide_music_sources: ['spotify'], hide_custom_status: true }],
} as const;

/** A change: any of the settings. */
export const privacyPatchSchema = {
  type: 'object',
  properties,
  additionalProperties: false,
  examples: [{ hide_custom_status: true, visibility: 'private' }],
} as const;
