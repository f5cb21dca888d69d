import { ActivityType, type GatewayActivity } from 'discord-api-types/v10';
import type { DiscordUser, MusicSource, Profile, RawPresence, Snowflake } from './model.js';
import { APP_SOURCES, type MusicApps } from './normalize/music-apps.js';
import { musicSourceOf } from './normalize/now-playing.js';
import { OFFLINE_PRESENCE } from './normalize/raw.js';
import { isSpotifyActivity } from './normalize/spotify.js';
import { isYouTubeMusicActivity, type YouTubeMusicMatcher } from './normalize/youtube-music.js';
import { isSnowflake } from './snowflake.js';

/** Activity types by the names a user gives them, in Discord's order. */
export const ACTIVITY_TYPE_NAMES = [
  'playing',
  'streaming',
  'listening',
  'watching',
  'custom',
  'competing',
] as const;
export type ActivityTypeName = (typeof ACTIVITY_TYPE_NAMES)[number];

const ACTIVITY_TYPES: Readonly<Record<ActivityTypeName, ActivityType>> = {
  playing: ActivityType.Playing,
  streaming: ActivityType.Streaming,
  listening: ActivityType.Listening,
  watching: ActivityType.Watching,
  custom: ActivityType.Custom,
  competing: ActivityType.Competing,
};

/** Music services a user can hide by name: every `now_playing.source` but the catch-all. */
export const HIDEABLE_MUSIC_SOURCES: readonly Exclude<MusicSource, 'other'>[] = [
  'spotify',
  'youtube_music',
  ...APP_SOURCES,
];
export type HideableMusicSource = (typeof HIDEABLE_MUSIC_SOURCES)[number];

/** Application ids one user may hide. */
export const MAX_HIDDEN_APPLICATIONS = 50;

/** `paused_until` of a pause that lasts until undone: the last moment a JavaScript `Date` can hold. */
export const PAUSED_UNTIL_UNDONE = 8_640_000_000_000_000;

export type Visibility = 'public' | 'private';

/** What one user lets the world see of them. Every consumer applies it through `applyPrivacy`. */
export interface PrivacySettings {
  hide_activity_types: ActivityTypeName[];
  hide_application_ids: Snowflake[];
  hide_music_sources: HideableMusicSource[];
  hide_custom_status: boolean;
  hide_platforms: boolean;
  hide_profile: boolean;
  hide_kv: boolean;
  record_history: boolean;
  show_last_seen: boolean;
  visibility: Visibility;
  allow_agents: boolean;
  /** Epoch ms; null when not paused. */
  paused_until: number | null;
  /** The user asked to be monitored: what counts on an instance that monitors only those who did. */
  opted_in: boolean;
}

/** Some settings, as a user changes them: what they name replaces what was kept. */
export type PrivacyPatch = Partial<PrivacySettings>;

export const DEFAULT_PRIVACY: Readonly<PrivacySettings> = Object.freeze({
  hide_activity_types: [],
  hide_application_ids: [],
  hide_music_sources: [],
  hide_custom_status: false,
  hide_platforms: false,
  hide_profile: false,
  hide_kv: false,
  record_history: true,
  show_last_seen: true,
  visibility: 'public',
  allow_agents: false,
  paused_until: null,
  opted_in: false,
});

export const PRIVACY_FIELDS = Object.keys(DEFAULT_PRIVACY) as (keyof PrivacySettings)[];

/** A patch refused: the field it names and why, for the `invalid_privacy_setting` answer. */
export interface PrivacyRefusal {
  field: string;
  message: string;
}

/**
 * A patch as a client sent it, checked field by field: every field must be a setting and every value one
 * it takes. Lists are kept without repeats, in the order given.
 */
export function parsePrivacyPatch(input: unknown): PrivacyPatch | PrivacyRefusal {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { field: '', message: 'the body must be a JSON object of settings' };
  }
  const patch: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    const checked = checkedValue(field, value);
    if (checked instanceof Refusal) return { field, message: checked.message };
    patch[field] = checked;
  }
  return patch as PrivacyPatch;
}

export function isPrivacyRefusal(value: PrivacyPatch | PrivacyRefusal): value is PrivacyRefusal {
  return (
    typeof (value as PrivacyRefusal).message === 'string' &&
    typeof (value as PrivacyRefusal).field === 'string'
  );
}

class Refusal {
  constructor(readonly message: string) {}
}

function checkedValue(field: string, value: unknown): unknown {
  switch (field as keyof PrivacySettings) {
    case 'hide_activity_types':
      return listOf(value, (item) => (ACTIVITY_TYPE_NAMES as readonly unknown[]).includes(item), {
        what: `one of ${ACTIVITY_TYPE_NAMES.join(', ')}`,
        max: ACTIVITY_TYPE_NAMES.length,
      });
    case 'hide_music_sources':
      return listOf(value, (item) => (HIDEABLE_MUSIC_SOURCES as readonly unknown[]).includes(item), {
        what: `one of ${HIDEABLE_MUSIC_SOURCES.join(', ')}`,
        max: HIDEABLE_MUSIC_SOURCES.length,
      });
    case 'hide_application_ids':
      return listOf(value, (item) => typeof item === 'string' && isSnowflake(item), {
        what: 'an application id (a snowflake, as a string)',
        max: MAX_HIDDEN_APPLICATIONS,
      });
    case 'hide_custom_status':
    case 'hide_platforms':
    case 'hide_profile':
    case 'hide_kv':
    case 'record_history':
    case 'show_last_seen':
    case 'allow_agents':
    case 'opted_in':
      return typeof value === 'boolean' ? value : new Refusal('must be true or false');
    case 'visibility':
      return value === 'public' || value === 'private' ? value : new Refusal('must be "public" or "private"');
    case 'paused_until':
      return value === null || (Number.isSafeInteger(value) && (value as number) >= 0)
        ? value === null || (value as number) <= PAUSED_UNTIL_UNDONE
          ? value
          : new Refusal(`must be at most ${PAUSED_UNTIL_UNDONE} (paused until undone)`)
        : new Refusal('must be a time in epoch milliseconds, or null');
    default:
      return new Refusal(`is not a privacy setting (settings: ${PRIVACY_FIELDS.join(', ')})`);
  }
}

function listOf(
  value: unknown,
  accepts: (item: unknown) => boolean,
  rules: { what: string; max: number },
): unknown[] | Refusal {
  if (!Array.isArray(value)) return new Refusal(`must be a list, each ${rules.what}`);
  const kept = [...new Set(value)];
  const wrong = kept.find((item) => !accepts(item));
  if (wrong !== undefined) return new Refusal(`${JSON.stringify(wrong)} is not ${rules.what}`);
  if (kept.length > rules.max) return new Refusal(`may hold at most ${rules.max}`);
  return kept;
}

/** Stored settings (a patch or several merged) with every field the user never set at its default. */
export function withDefaults(stored: PrivacyPatch | undefined): PrivacySettings {
  return { ...DEFAULT_PRIVACY, ...stored };
}

/** Whether a pause is in force at `now`. */
export function isPaused(settings: PrivacySettings, now: number): boolean {
  return settings.paused_until !== null && settings.paused_until > now;
}

/** Whether the user's presence changes are kept in their history at `now`. */
export function recordsHistory(settings: PrivacySettings | undefined, now: number): boolean {
  return settings === undefined || (settings.record_history && !isPaused(settings, now));
}

/**
 * What the settings hide at `now`, as a presence names it in `privacy.hidden`: the settings themselves,
 * never what the user is doing, so the list says nothing of whether anything hidden is going on. Hidden
 * applications are counted in, not named: their ids would tell what the user hides.
 */
export function hiddenBy(settings: PrivacySettings, now: number): string[] {
  const hidden: string[] = [];
  if (isPaused(settings, now)) hidden.push('paused');
  for (const type of settings.hide_activity_types) hidden.push(`activities:${type}`);
  for (const source of settings.hide_music_sources) hidden.push(`activities:${source}`);
  if (settings.hide_application_ids.length > 0) hidden.push('applications');
  if (settings.hide_custom_status) hidden.push('custom_status');
  if (settings.hide_platforms) hidden.push('platforms');
  if (settings.hide_profile) hidden.push('profile');
  if (settings.hide_kv) hidden.push('kv');
  return hidden;
}

/** What telling a music service's activity apart takes (see now-playing.ts). */
export interface PrivacyOptions {
  musicApps: MusicApps;
  youtubeMusic: YouTubeMusicMatcher;
}

/** What a presence is rendered from. */
export interface PrivacySources {
  user: DiscordUser;
  raw: RawPresence;
  profile: Profile | null;
}

/** The fields of `discord_user` that `hide_profile` leaves out. */
const PROFILE_USER_FIELDS = [
  'banner',
  'banner_color',
  'accent_color',
  'avatar_decoration_data',
  'collectibles',
  'primary_guild',
  'clan',
] as const;

/**
 * The sources of a presence with what the settings hide taken out, before anything is rendered from
 * them: a presence built from these has nothing hidden in any field derived from it (a hidden listening
 * app is no `now_playing`, no `spotify`, no `listening_to_*`).
 */
export function applyPrivacy(
  settings: PrivacySettings,
  now: number,
  sources: PrivacySources,
  options: PrivacyOptions,
): PrivacySources {
  const { user, raw, profile } = sources;
  const paused = isPaused(settings, now);
  const shownUser = settings.hide_profile ? withoutProfile(user) : user;
  const shownProfile = settings.hide_profile ? null : profile;
  if (paused) return { user: shownUser, raw: OFFLINE_PRESENCE, profile: shownProfile };
  const activities = raw.activities.filter((activity) => !hidesActivity(settings, activity, options));
  return {
    user: shownUser,
    raw: {
      status: raw.status,
      activities: activities.length === raw.activities.length ? raw.activities : activities,
      client_status: settings.hide_platforms ? {} : raw.client_status,
    },
    profile: shownProfile,
  };
}

function withoutProfile(user: DiscordUser): DiscordUser {
  const copy: Record<string, unknown> = { ...user };
  for (const field of PROFILE_USER_FIELDS) delete copy[field];
  return copy as DiscordUser;
}

function hidesActivity(
  settings: PrivacySettings,
  activity: GatewayActivity,
  options: PrivacyOptions,
): boolean {
  const typeName = ACTIVITY_TYPE_NAME_OF.get(activity.type);
  if (typeName !== undefined && settings.hide_activity_types.includes(typeName)) return true;
  if (activity.type === ActivityType.Custom) return settings.hide_custom_status;
  if (
    activity.application_id !== undefined &&
    settings.hide_application_ids.includes(activity.application_id)
  ) {
    return true;
  }
  if (settings.hide_music_sources.length === 0) return false;
  const source = musicSourceOfActivity(activity, options);
  return source !== null && (settings.hide_music_sources as readonly MusicSource[]).includes(source);
}

/** The music service an activity plays from, as `now_playing` tells them apart. */
function musicSourceOfActivity(activity: GatewayActivity, options: PrivacyOptions): MusicSource | null {
  if (isSpotifyActivity(activity)) return 'spotify';
  if (isYouTubeMusicActivity(activity, options.youtubeMusic)) return 'youtube_music';
  return musicSourceOf(activity, options.musicApps);
}

const ACTIVITY_TYPE_NAME_OF = new Map<number, ActivityTypeName>(
  ACTIVITY_TYPE_NAMES.map((name) => [ACTIVITY_TYPES[name], name]),
);

/**
 * The music sources whose past plays the settings hide from history and top tracks: `all` when listening
 * is hidden or a pause holds. A hidden application is matched by the service it plays, since past plays
 * keep no application id; one of no known service hides every play of `other`.
 */
export function hiddenMusicSources(
  settings: PrivacySettings,
  now: number,
  musicApps: MusicApps,
): 'all' | ReadonlySet<MusicSource> {
  if (settings.hide_activity_types.includes('listening') || isPaused(settings, now)) return 'all';
  const sources = new Set<MusicSource>(settings.hide_music_sources);
  for (const id of settings.hide_application_ids) sources.add(musicApps.byApplicationId.get(id) ?? 'other');
  return sources;
}
