/**
 * What the API answers, as the client hands it over. Only types: the presence model is the server's own
 * (type-only imports, erased from the JavaScript), so the client and the server cannot drift apart.
 */
import type { ChangelogEntry } from '../changelog.js';
import type { Stats, StatusEntry, TopTrack, TrackEntry } from '../model/history.js';
import type { WebhookView } from '../model/webhook.js';
import type { Presence } from '../presence/model.js';

export type {
  CreatedWebhook,
  DeliveryRecord,
  DeliveryStatus,
  WebhookEvent,
} from '../model/webhook.js';
export type {
  CustomStatus,
  CustomStatusEmoji,
  DiscordStatus,
  DiscordUser,
  Kv,
  MusicSource,
  NowPlaying,
  Presence,
  Spotify,
  Timestamps,
  YouTubeMusic,
} from '../presence/model.js';
export type { ChangelogEntry, Stats, StatusEntry, TopTrack, TrackEntry, WebhookView };

/** `GET /v1/users/@me/webhooks`: your webhooks, oldest first, and how many you may have. */
export interface WebhookList {
  webhooks: WebhookView[];
  limit: number;
}

/** A Discord user id (a snowflake, as a string of digits). */
export type UserId = string;

/**
 * `GET /v1/users?ids=…`: each monitored user's presence by id, in the order asked; users who are not
 * monitored are left out.
 */
export type Presences = Map<UserId, Presence>;

/** `PRESENCE_UPDATE`: the full presence and whose it is. */
export type PresenceUpdate = Presence & { user_id: UserId };

/** `GET /v1/users/:id/history`: newest first, the 100 most recent of each. */
export interface History {
  status_history: StatusEntry[];
  track_history: TrackEntry[];
}

/** `GET /v1/version`. */
export interface VersionInfo {
  version: string;
  changelog: ChangelogEntry[];
}

/** The card's query options (`GET /v1/users/:id/card.svg`); see docs/cards.md for each one's rule. */
export interface CardOptions {
  theme?: 'dark' | 'light';
  /** Hex `rgb`, `rgba`, `rrggbb` or `rrggbbaa`, with or without `#`. */
  bg?: string;
  borderRadius?: number;
  hideProfile?: boolean;
  hideStatus?: boolean;
  hideTimestamp?: boolean;
  /** `whenNotUsed`: no panel when nothing plays. */
  hideActivity?: boolean | 'whenNotUsed';
  hideMusic?: boolean;
  hideTag?: boolean;
  hideDecoration?: boolean;
  /** Application ids whose activities the card passes over. */
  ignoreAppId?: readonly string[];
  /** The server tag's background, hex as `bg`. */
  clanBackgroundColor?: string;
  idleMessage?: string;
  animated?: boolean;
  /** Panels stacked, 1 to 4: the music, then the activities. */
  maxActivities?: number;
  /** `compact`: one row with the avatar, the name and one line of what the user is doing. */
  layout?: 'full' | 'compact';
}

/** The card's formats: the animated SVG, or the PNG for places that show no SVG. */
export type CardFormat = 'svg' | 'png';

/** The avatar quick links' formats. */
export type AvatarFormat = 'png' | 'jpg' | 'jpeg' | 'webp' | 'gif';
