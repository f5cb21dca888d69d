import type { DiscordUser, Freshness, Kv, Presence, Profile, RawPresence, Snowflake } from '../model.js';
import { activitiesFrom } from './activities.js';
import { activeOnFrom } from './client-status.js';
import { customStatusFrom } from './custom-status.js';
import { DEFAULT_MUSIC_APPS, type MusicApps } from './music-apps.js';
import { nowPlayingFrom } from './now-playing.js';
import { profileFields } from './profile.js';
import { statusFrom } from './raw.js';
import { spotifyFrom } from './spotify.js';
import { userWithImageUrls } from './user-images.js';
import { type YouTubeMusicMatcher, youtubeMusicFrom } from './youtube-music.js';

/** What normalizing needs besides the presence itself. */
export interface NormalizeOptions {
  /** `DISCORD_CDN_URL`: application assets, banners. */
  cdnUrl: string;
  youtubeMusic: YouTubeMusicMatcher;
  /** The other services' players; every default application unless told. */
  musicApps?: MusicApps;
}

export interface PresenceInput {
  user: DiscordUser;
  raw: RawPresence;
  profile: Profile | null;
  freshness: Freshness;
  kv: Kv;
}

/**
 * Every field of the presence normalizing makes: all but the user, the freshness and the KV, in the order
 * of `Presence`.
 */
export type PresenceFields = Omit<Presence, 'discord_user' | keyof Freshness | 'kv'>;

/**
 * The presence object of the API, composed from one builder per field. Fields are written in the order of
 * `Presence` in model.ts, so the JSON of equal presences is byte-equal.
 */
export function buildPresence(input: PresenceInput, options: NormalizeOptions): Presence {
  const { user, raw, profile, freshness, kv } = input;
  return {
    discord_user: userWithImageUrls(user, options.cdnUrl),
    ...presenceFields({ userId: user?.id, raw, profile }, options),
    observed_at: freshness.observed_at,
    stale: freshness.stale,
    kv,
  };
}

/**
 * The fields between `discord_user` and the freshness. Apart, because the registry serializes the parts
 * apart: it holds each user and each KV as the JSON text inside their presence, not as objects (see
 * registry.ts), and writes the freshness it keeps itself.
 */
export function presenceFields(
  input: Omit<PresenceInput, 'user' | 'freshness' | 'kv'> & { userId: Snowflake },
  options: NormalizeOptions,
): PresenceFields {
  const { userId, raw, profile } = input;
  const activities = activitiesFrom(raw?.activities, options.cdnUrl);
  const spotify = spotifyFrom(activities);
  const youtubeMusic = youtubeMusicFrom(activities, options.youtubeMusic, options.cdnUrl);
  const nowPlaying = nowPlayingFrom(activities, {
    spotify,
    youtubeMusic,
    youtubeMusicMatcher: options.youtubeMusic,
    apps: options.musicApps ?? DEFAULT_MUSIC_APPS,
    cdnUrl: options.cdnUrl,
  });
  const activeOn = activeOnFrom(raw?.client_status);
  const profileData = profileFields(userId, profile, options.cdnUrl);
  return {
    discord_status: statusFrom(raw?.status),
    active_on_discord_desktop: activeOn.active_on_discord_desktop,
    active_on_discord_web: activeOn.active_on_discord_web,
    active_on_discord_mobile: activeOn.active_on_discord_mobile,
    active_on_discord_embedded: activeOn.active_on_discord_embedded,
    active_on_discord_vr: activeOn.active_on_discord_vr,
    custom_status: customStatusFrom(activities),
    listening_to_spotify: spotify !== null,
    spotify,
    listening_to_youtube_music: youtubeMusic !== null,
    youtube_music: youtubeMusic,
    listening_to_music: nowPlaying !== null,
    now_playing: nowPlaying,
    activities,
    banner: profileData.banner,
    banner_url: profileData.banner_url,
    accent_color: profileData.accent_color,
    member_since: profileData.member_since,
  };
}
