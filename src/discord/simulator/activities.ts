import { createHash } from 'node:crypto';
import {
  ActivityFlags,
  ActivityType,
  type GatewayActivity,
  type GatewayActivityEmoji,
} from 'discord-api-types/v10';

/**
 * Activity objects exactly as Discord's gateway sends them (field order included), for the simulator's
 * demo users and for tests. Ids Discord derives (activity ids, session ids, media-proxy hashes) are
 * derived here from the inputs, so the same input gives the same activity: per-guild copies of one update
 * differ only in the timing fields, as they do on Discord.
 *
 * The literals below are Discord's and the players', written out here on purpose rather than imported from
 * presence/: the normalizers are tested against what the platform sends, not against their own constants.
 */

/** The user a Spotify activity's party belongs to when none is given. */
export const DEFAULT_ACTIVITY_USER_ID = '80351110224678912';
export const PEAR_DESKTOP_APPLICATION_ID = '1177081335727267940';
/** What Pear Desktop puts in `large_text` while paused: U+23F8 and the text variation selector U+FE0E. */
export const PEAR_DESKTOP_PAUSED_TEXT = '\u23F8\uFE0E';

export interface SpotifyTrack {
  song: string;
  artists: readonly string[];
  album: string;
  /** The album art's id on i.scdn.co, e.g. "ab67616d0000b273…". */
  imageId: string;
  /** Spotify's 22-character track id. */
  trackId: string;
  start: number;
  end: number;
  createdAt?: number;
  /** Whose Spotify this is: the party is "spotify:<user id>". */
  userId?: string;
  sessionId?: string;
}

/** Spotify's own Listening activity (Discord's integration, `id` "spotify:1", flags SYNC | PLAY). */
export function spotifyActivity(track: SpotifyTrack): GatewayActivity {
  const userId = track.userId ?? DEFAULT_ACTIVITY_USER_ID;
  return {
    type: ActivityType.Listening,
    timestamps: { start: track.start, end: track.end },
    sync_id: track.trackId,
    state: track.artists.join('; '),
    session_id: track.sessionId ?? sessionIdFor(userId),
    party: { id: `spotify:${userId}` },
    name: 'Spotify',
    id: 'spotify:1',
    flags: ActivityFlags.Sync | ActivityFlags.Play,
    details: track.song,
    created_at: track.createdAt ?? track.start,
    assets: { large_text: track.album, large_image: `spotify:${track.imageId}` },
  };
}

export interface SpotifyLocalFile {
  song: string;
  album?: string;
  start: number;
  end: number;
  createdAt?: number;
  userId?: string;
  sessionId?: string;
}

/** Spotify playing a local file: no `sync_id`, no `state` (artists), no `large_image`. */
export function spotifyLocalFileActivity(file: SpotifyLocalFile): GatewayActivity {
  const userId = file.userId ?? DEFAULT_ACTIVITY_USER_ID;
  return {
    type: ActivityType.Listening,
    timestamps: { start: file.start, end: file.end },
    session_id: file.sessionId ?? sessionIdFor(userId),
    party: { id: `spotify:${userId}` },
    name: 'Spotify',
    id: 'spotify:1',
    flags: ActivityFlags.Sync | ActivityFlags.Play,
    details: file.song,
    created_at: file.createdAt ?? file.start,
    ...(file.album === undefined ? {} : { assets: { large_text: file.album } }),
  };
}

export interface YouTubeMusicTrack {
  title: string;
  artist: string;
  /** Null or absent: the player sends no `large_text`. */
  album?: string | null;
  videoId: string;
  /** The thumbnail's URL (lh3.googleusercontent.com, i.ytimg.com); Discord proxies it as `mp:external/…`. */
  imageUrl: string;
  start?: number;
  end?: number;
  /** As Pear Desktop pauses: `large_text` "⏸︎" and no timestamps. */
  paused?: boolean;
  /** Pear Desktop by default; PreMiD and ytmdesktop publish under their own ids. */
  applicationId?: string;
  name?: string;
  createdAt?: number;
}

/** A YouTube Music desktop player's rich presence, as Pear Desktop publishes it. */
export function youtubeMusicActivity(track: YouTubeMusicTrack): GatewayActivity {
  const applicationId = track.applicationId ?? PEAR_DESKTOP_APPLICATION_ID;
  const name = track.name ?? 'YouTube Music';
  const timed = !track.paused && track.start !== undefined;
  const largeText = track.paused ? PEAR_DESKTOP_PAUSED_TEXT : (track.album ?? undefined);
  return {
    type: ActivityType.Listening,
    ...(timed
      ? {
          timestamps:
            track.end === undefined ? { start: track.start } : { start: track.start, end: track.end },
        }
      : {}),
    state: track.artist,
    name,
    id: activityIdFor(`${applicationId}:${name}`),
    details: track.title,
    details_url: `https://music.youtube.com/watch?v=${track.videoId}`,
    created_at: track.createdAt ?? track.start ?? Date.now(),
    assets: {
      large_image: mediaProxyKey(track.imageUrl),
      ...(largeText === undefined || largeText === '' ? {} : { large_text: largeText }),
    },
    buttons: ['Play on YouTube Music'],
    application_id: applicationId,
  };
}

export interface CustomStatus {
  text?: string;
  /** `{name}` for a unicode emoji; `{name, id, animated}` for a custom one. */
  emoji?: GatewayActivityEmoji;
  createdAt?: number;
}

/** The Custom Status activity (type 4): `state` is the text. */
export function customStatusActivity(status: CustomStatus): GatewayActivity {
  return {
    type: ActivityType.Custom,
    ...(status.text === undefined ? {} : { state: status.text }),
    name: 'Custom Status',
    id: 'custom',
    ...(status.emoji === undefined ? {} : { emoji: status.emoji }),
    created_at: status.createdAt ?? Date.now(),
  };
}

export interface Game {
  name: string;
  applicationId: string;
  details?: string;
  state?: string;
  start?: number;
  createdAt?: number;
  /** Application asset ids (snowflakes) and their hover texts. */
  largeImage?: string;
  largeText?: string;
  smallImage?: string;
  smallText?: string;
}

/** A Playing activity from a game or app with a Discord application (rich presence). */
export function gameActivity(game: Game): GatewayActivity {
  const assets = {
    ...(game.smallText === undefined ? {} : { small_text: game.smallText }),
    ...(game.smallImage === undefined ? {} : { small_image: game.smallImage }),
    ...(game.largeText === undefined ? {} : { large_text: game.largeText }),
    ...(game.largeImage === undefined ? {} : { large_image: game.largeImage }),
  };
  return {
    type: ActivityType.Playing,
    ...(game.start === undefined ? {} : { timestamps: { start: game.start } }),
    ...(game.state === undefined ? {} : { state: game.state }),
    name: game.name,
    id: activityIdFor(`${game.applicationId}:${game.name}`),
    ...(game.details === undefined ? {} : { details: game.details }),
    created_at: game.createdAt ?? game.start ?? Date.now(),
    ...(Object.keys(assets).length === 0 ? {} : { assets }),
    application_id: game.applicationId,
  };
}

/**
 * How Discord's media proxy names an external image: `mp:external/<signature>/<scheme>/<host><path>`.
 * The signature is Discord's HMAC; here a stable 43-character base64url stand-in. A key that is already
 * a media-proxy key is kept, and so is text that is not a URL.
 */
export function mediaProxyKey(imageUrl: string): string {
  if (imageUrl.startsWith('mp:') || !URL.canParse(imageUrl)) return imageUrl;
  const url = new URL(imageUrl);
  const signature = createHash('sha256').update(imageUrl).digest('base64url');
  const query = url.search === '' ? '' : encodeURIComponent(url.search);
  return `mp:external/${signature}/${url.protocol.slice(0, -1)}/${url.host}${url.pathname}${query}`;
}

/** Activity ids of rich-presence apps are 16 hex digits. */
function activityIdFor(seed: string): string {
  return createHash('sha256').update(`activity:${seed}`).digest('hex').slice(0, 16);
}

/** Gateway session ids are 32 hex digits. */
function sessionIdFor(userId: string): string {
  return createHash('sha256').update(`session:${userId}`).digest('hex').slice(0, 32);
}
