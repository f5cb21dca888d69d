import { ActivityType } from 'discord-api-types/v10';
import type { Spotify } from '../model.js';
import { activityImageUrl } from './images.js';
import { timestampsFrom } from './timestamps.js';
import { arrayOf, field, stringOrNull, urlComponent } from './values.js';

/** The `id` Discord gives the Spotify activity of every user. */
export const SPOTIFY_ACTIVITY_ID = 'spotify:1';
export const SPOTIFY_TRACK_URL = 'https://open.spotify.com/track';

/**
 * Discord's own Spotify activity: Listening, with `id` "spotify:1". A rich-presence app cannot choose its
 * activity id, so this cannot be imitated; an app that names itself "Spotify" is other music.
 */
export function isSpotifyActivity(activity: unknown): boolean {
  return field(activity, 'type') === ActivityType.Listening && field(activity, 'id') === SPOTIFY_ACTIVITY_ID;
}

/**
 * `spotify`, from the first Spotify activity:
 *
 * | field           | from                                            |
 * |-----------------|-------------------------------------------------|
 * | `track_id`      | `sync_id`                                       |
 * | `timestamps`    | `timestamps {start, end}`                       |
 * | `album`         | `assets.large_text`                             |
 * | `album_art_url` | `assets.large_image` `spotify:<id>` → i.scdn.co |
 * | `artist`        | `state` (artists joined by "; ", as sent)       |
 * | `song`          | `details`                                       |
 *
 * A local file has no `sync_id`, `state` or `large_image`: those fields are null.
 */
export function spotifyFrom(activities: unknown): Spotify | null {
  const activity = arrayOf(activities).find(isSpotifyActivity);
  if (activity === undefined) return null;
  const assets = field(activity, 'assets');
  return {
    track_id: stringOrNull(field(activity, 'sync_id')) || null,
    timestamps: timestampsFrom(activity),
    album: stringOrNull(field(assets, 'large_text')),
    album_art_url: activityImageUrl(field(assets, 'large_image'), null, ''),
    artist: stringOrNull(field(activity, 'state')),
    song: stringOrNull(field(activity, 'details')),
  };
}

/** `https://open.spotify.com/track/<id>`, or null without a track id. */
export function spotifyTrackUrl(trackId: string | null | undefined): string | null {
  if (typeof trackId !== 'string' || trackId === '') return null;
  return `${SPOTIFY_TRACK_URL}/${urlComponent(trackId)}`;
}
