import type {
  APIUser,
  GatewayActivity,
  GatewayPresenceClientStatus,
  PresenceUpdateReceiveStatus,
} from 'discord-api-types/v10';

import type { Snowflake } from '../collections/snowflake-digits.js';

export type { Snowflake };

/**
 * `online` · `idle` · `dnd` · `offline`. The string values of Discord's enum rather than the enum itself, so
 * JSON payloads and literals in tests type-check as they are; the enum members are assignable to it.
 */
export type DiscordStatus = `${PresenceUpdateReceiveStatus}`;

/**
 * The user object as the gateway gives it. Presence payloads may carry only `id`,
 * so everything we know about a user is the merge of every partial we have seen.
 * `flags` and `public_flags` are bitfields: any OR of UserFlags (768 is 256 | 512), not one member.
 */
export type DiscordUser = Partial<Omit<APIUser, 'flags' | 'public_flags'>> &
  Pick<APIUser, 'id'> & {
    flags?: number;
    public_flags?: number;
    /** The display name's font, effect and colours (Discord's typings do not have it yet). */
    display_name_styles?: DisplayNameStyles | null;
  };

export interface DisplayNameStyles {
  font_id: number;
  effect_id: number;
  /** RGB integers. */
  colors: readonly number[];
}

/**
 * `client_status`: the platforms the user is active on. Discord's typings lag behind the platforms it
 * reports; `embedded` is one it sends.
 */
export type ClientStatus = { [Platform in keyof GatewayPresenceClientStatus | 'embedded']?: DiscordStatus };

/** What the gateway tells us about one user's presence, merged across guilds. */
export interface RawPresence {
  status: DiscordStatus;
  activities: GatewayActivity[];
  client_status: ClientStatus;
}

/** From `GET /users/:id`: the fields the gateway never sends. */
export interface Profile {
  banner: string | null;
  accent_color: number | null;
}

export interface Timestamps {
  start: number | null;
  end: number | null;
}

export interface Spotify {
  track_id: string | null;
  timestamps: Timestamps;
  album: string | null;
  album_art_url: string | null;
  artist: string | null;
  song: string | null;
}

/** Lanyard's Spotify shape, plus a link to the track (YouTube Music has no other public track URL). */
export interface YouTubeMusic extends Spotify {
  url: string | null;
}

export type MusicSource =
  | 'spotify'
  | 'youtube_music'
  | 'apple_music'
  | 'tidal'
  | 'deezer'
  | 'soundcloud'
  | 'amazon_music'
  | 'other';

export interface NowPlaying {
  source: MusicSource;
  song: string | null;
  artist: string | null;
  album: string | null;
  album_art_url: string | null;
  track_id: string | null;
  track_url: string | null;
  timestamps: Timestamps;
  duration_ms: number | null;
}

export interface CustomStatusEmoji {
  name: string;
  id: string | null;
  animated: boolean;
}

export interface CustomStatus {
  text: string | null;
  emoji: CustomStatusEmoji | null;
}

export type Kv = Record<string, string>;

/**
 * One write: keys to set and keys to delete, applied together or not at all. As asked for, its values are
 * unknown until `changeRejection` has checked them.
 */
export interface KvChange<Value = string> {
  set: ReadonlyMap<string, Value>;
  delete: readonly string[];
}

/** What the store checks a write against, atomically with it. */
export interface KvLimits {
  maxKeys: number;
  maxBytes: number;
}

/** The stored KV and its revision, which grows with every accepted write. */
export interface KvState {
  kv: Kv;
  revision: number;
}

/** The presence object of the API contract: Lanyard's shape plus Presently's additions. */
export interface Presence {
  discord_user: DiscordUser;
  discord_status: DiscordStatus;
  active_on_discord_desktop: boolean;
  active_on_discord_web: boolean;
  active_on_discord_mobile: boolean;
  active_on_discord_embedded: boolean;
  active_on_discord_vr: boolean;
  custom_status: CustomStatus | null;
  listening_to_spotify: boolean;
  spotify: Spotify | null;
  listening_to_youtube_music: boolean;
  youtube_music: YouTubeMusic | null;
  /** Any music plays: `now_playing` is not null. */
  listening_to_music: boolean;
  now_playing: NowPlaying | null;
  activities: GatewayActivity[];
  banner: string | null;
  banner_url: string | null;
  accent_color: number | null;
  /** Null when the user hides their profile. */
  member_since: number | null;
  /** What the user's privacy settings hide (see privacy.ts); absent when they hide nothing. */
  privacy?: PresencePrivacy;
  /** When Discord last reported a change of what this presence shows (epoch ms); see docs/api.md. */
  observed_at: number;
  /** True while no shard that sees the user has a live session, until Discord reports the user again. */
  stale: boolean;
  kv: Kv;
}

/** How current a presence is: its last two fields before `kv`, set by the registry rather than normalized. */
export type Freshness = Pick<Presence, 'observed_at' | 'stale'>;

export interface PresencePrivacy {
  hidden: string[];
}

/** The presence without its `kv`: what a card, an avatar link or a history rule reads of it. */
export type PresenceSummary = Omit<Presence, 'kv'>;
