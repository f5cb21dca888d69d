import { ActivityType } from 'discord-api-types/v10';
import type { YouTubeMusic } from '../model.js';
import { activityImageUrl } from './images.js';
import { albumFrom, isBrowsing, isPlayerDefaultText } from './player-quirks.js';
import { timestampsFrom } from './timestamps.js';
import { arrayOf, field, snowflakeString, stringOrNull, urlComponent } from './values.js';

/**
 * Which activities are YouTube Music. It has no Discord integration of its own: desktop players publish a
 * rich-presence activity under their own application, so we know them by application id, or by the
 * activity's name for players we have no id for.
 */
export interface YouTubeMusicMatcher {
  applicationIds: ReadonlySet<string>;
  /** Activity names, lower-cased and trimmed. */
  names: ReadonlySet<string>;
}

export const PEAR_DESKTOP_APPLICATION_ID = '1177081335727267940';
export const PREMID_APPLICATION_ID = '463151177836658699';
export const YTMDESKTOP_APPLICATION_ID = '834475359071633499';
/** ytmdesktop v2 publishes under its own application. */
export const YTMDESKTOP_V2_APPLICATION_ID = '1143202598460076053';

/** Music Presence's YouTube Music player. */
export const MUSIC_PRESENCE_YOUTUBE_MUSIC_APPLICATION_ID = '1247847788302172273';

/** Pear Desktop (formerly th-ch/youtube-music), PreMiD, ytmdesktop (both generations), Music Presence. */
export const DEFAULT_YOUTUBE_MUSIC_APPLICATION_IDS: readonly string[] = [
  PEAR_DESKTOP_APPLICATION_ID,
  PREMID_APPLICATION_ID,
  YTMDESKTOP_APPLICATION_ID,
  YTMDESKTOP_V2_APPLICATION_ID,
  MUSIC_PRESENCE_YOUTUBE_MUSIC_APPLICATION_ID,
];
export const DEFAULT_YOUTUBE_MUSIC_NAMES: readonly string[] = ['youtube music'];

/** Builds a matcher, lower-casing and trimming the names as matching expects. */
export function youtubeMusicMatcher(
  applicationIds: Iterable<string>,
  names: Iterable<string>,
): YouTubeMusicMatcher {
  return {
    applicationIds: new Set(applicationIds),
    names: new Set([...names].map((name) => name.trim().toLowerCase())),
  };
}

export const DEFAULT_YOUTUBE_MUSIC_MATCHER: YouTubeMusicMatcher = youtubeMusicMatcher(
  DEFAULT_YOUTUBE_MUSIC_APPLICATION_IDS,
  DEFAULT_YOUTUBE_MUSIC_NAMES,
);

/** Hosts whose `watch?v=<id>` (or youtu.be/<id>) links name a YouTube Music track. */
export const YOUTUBE_HOSTS: ReadonlySet<string> = new Set([
  'music.youtube.com',
  'youtube.com',
  'www.youtube.com',
  'm.youtube.com',
]);
export const YOUTUBE_SHORT_HOST = 'youtu.be';
export const YOUTUBE_MUSIC_WATCH_URL = 'https://music.youtube.com/watch';
/** Video ids are 11 characters of base64url today; we accept up to 64 of that alphabet. */
const VIDEO_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A YouTube Music player's activity showing a track: Listening or Playing, from a known application or by its name. */
export function isYouTubeMusicActivity(activity: unknown, matcher: YouTubeMusicMatcher): boolean {
  const type = field(activity, 'type');
  if (type !== ActivityType.Listening && type !== ActivityType.Playing) return false;
  // A paused player with a Playing activity sends no timestamps and is still YouTube Music; a page being
  // browsed (PreMiD's "Browsing Home") is not.
  if (isBrowsing(activity)) return false;
  const applicationId = snowflakeString(field(activity, 'application_id'));
  if (applicationId !== null && matcher.applicationIds.has(applicationId)) return true;
  const name = field(activity, 'name');
  return typeof name === 'string' && matcher.names.has(name.trim().toLowerCase());
}

/**
 * The video id in a YouTube link: `v` of `watch?v=<id>` on a YouTube host, or the path of youtu.be/<id>.
 * Null for anything else, including text that is not a URL.
 */
export function youtubeVideoId(link: unknown): string | null {
  if (typeof link !== 'string') return null;
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const host = url.hostname.toLowerCase();
  let id: string | null = null;
  if (YOUTUBE_HOSTS.has(host)) id = url.searchParams.get('v');
  else if (host === YOUTUBE_SHORT_HOST) id = url.pathname.slice(1);
  return id !== null && VIDEO_ID.test(id) ? id : null;
}

/** `https://music.youtube.com/watch?v=<id>`, or null without a track id. */
export function youtubeMusicTrackUrl(trackId: string | null | undefined): string | null {
  if (typeof trackId !== 'string' || trackId === '') return null;
  return `${YOUTUBE_MUSIC_WATCH_URL}?v=${urlComponent(trackId)}`;
}

/**
 * `youtube_music`, from the first YouTube Music activity:
 *
 * | field           | from                                             |
 * |-----------------|--------------------------------------------------|
 * | `track_id`      | `v` of `details_url` (a YouTube link)            |
 * | `timestamps`    | `timestamps {start, end}`                        |
 * | `album`         | `assets.large_text`, unless it is a pause marker |
 * | `album_art_url` | `assets.large_image` (usually `mp:external/…`)   |
 * | `artist`        | `state`                                          |
 * | `song`          | `details`                                        |
 * | `url`           | `https://music.youtube.com/watch?v=<track_id>`   |
 *
 * A paused player: Pear Desktop, while paused, sends no timestamps and "⏸︎" as `large_text`. The track is
 * still loaded, so the object is still returned, with the same track id and null timestamps and album.
 * Dropping it (or reporting "⏸︎" as the album) would make every pause and resume look like a track ending
 * and a new one starting, and count a play each time.
 */
export function youtubeMusicFrom(
  activities: unknown,
  matcher: YouTubeMusicMatcher,
  cdnUrl: string,
): YouTubeMusic | null {
  const activity = arrayOf(activities).find((candidate) => isYouTubeMusicActivity(candidate, matcher));
  if (activity === undefined) return null;
  const assets = field(activity, 'assets');
  const applicationId = snowflakeString(field(activity, 'application_id'));
  const trackId = youtubeVideoId(field(activity, 'details_url'));
  const largeText = stringOrNull(field(assets, 'large_text'));
  let album = albumFrom(largeText);
  let artist = stringOrNull(field(activity, 'state'));
  // PreMiD wrote "Artist - Album" in `state` until 2025, with its own name where the album goes.
  const old = applicationId === PREMID_APPLICATION_ID && largeText !== null && isPlayerDefaultText(largeText);
  const joined = old ? artist?.indexOf(' - ') : -1;
  if (artist !== null && joined !== undefined && joined > 0) {
    album = artist.slice(joined + 3) || null;
    artist = artist.slice(0, joined);
  }
  return {
    track_id: trackId,
    timestamps: timestampsFrom(activity),
    album,
    album_art_url: activityImageUrl(field(assets, 'large_image'), applicationId, cdnUrl),
    artist,
    song: stringOrNull(field(activity, 'details')),
    url: youtubeMusicTrackUrl(trackId),
  };
}
