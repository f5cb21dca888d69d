import type { MusicSource, NowPlaying } from '../model.js';
import { activityImageUrl } from './images.js';
import { ARTIST_PREFIX, albumFrom, TITLE_PREFIX, TITLE_PREFIXED_APPLICATIONS } from './player-quirks.js';
import { durationMs, timestampsFrom } from './timestamps.js';
import { trackIdFrom, trackUrlFrom } from './track-links.js';
import { field, snowflakeString, textOrNull } from './values.js';

/** Discord's `status_display_type` for "the member list shows `state` after Listening to". */
const DISPLAY_STATE = 1;

/**
 * `now_playing` from a Listening (or track-showing Playing) activity of any player, as it writes it:
 *
 * | field           | from                                                                          |
 * |-----------------|-------------------------------------------------------------------------------|
 * | `song`          | `details` (TIDAL Hi-Fi's "Listening to " before it dropped); without it, the field Discord shows (`status_display_type`) |
 * | `artist`        | `state` ("by " before it dropped, an " · album" or " - album" after it too)    |
 * | `album`         | `assets.large_text`, unless it is a pause marker or the player's own name      |
 * | `album_art_url` | `assets.large_image`, resolved                                                |
 * | `track_url`     | `details_url` (http(s) only)                                                  |
 * | `track_id`      | the service's id in `details_url` (track-links.ts)                            |
 * | `timestamps`, `duration_ms` | `timestamps`; the duration when both ends are known               |
 *
 * Null when nothing names a track (no title at all).
 */
export function listeningFrom(activity: unknown, source: MusicSource, cdnUrl: string): NowPlaying | null {
  const assets = field(activity, 'assets');
  const details = textOrNull(field(activity, 'details'));
  const state = textOrNull(field(activity, 'state'));
  const applicationId = snowflakeString(field(activity, 'application_id'));
  const prefixed = applicationId !== null && TITLE_PREFIXED_APPLICATIONS.has(applicationId);
  let song = details === null ? null : textOrNull(prefixed ? details.replace(TITLE_PREFIX, '') : details);
  let artist = state === null ? null : textOrNull(state.replace(ARTIST_PREFIX, ''));
  if (song === null) {
    song = shownText(activity);
    artist = null;
  }
  if (song === null) return null;
  const album = albumFrom(textOrNull(field(assets, 'large_text')));
  if (artist !== null && album !== null) artist = textOrNull(withoutAlbum(artist, album));
  const timestamps = timestampsFrom(activity);
  const trackUrl = trackUrlFrom(field(activity, 'details_url'));
  return {
    source,
    song,
    artist,
    album,
    album_art_url: activityImageUrl(field(assets, 'large_image'), applicationId, cdnUrl),
    track_id: trackIdFrom(source, trackUrl),
    track_url: trackUrl,
    timestamps,
    duration_ms: durationMs(timestamps),
  };
}

/**
 * The title of an activity without `details`: its `state` when Discord shows that as what is playing. The
 * name Discord shows otherwise is the player's.
 */
function shownText(activity: unknown): string | null {
  return field(activity, 'status_display_type') === DISPLAY_STATE
    ? textOrNull(field(activity, 'state'))
    : null;
}

/** "Artist · Album" or "Artist - Album" (some players join them in `state`) without the album. */
function withoutAlbum(artist: string, album: string): string {
  for (const separator of [' · ', ' - ']) {
    const suffix = `${separator}${album}`;
    if (artist.length > suffix.length && artist.endsWith(suffix)) return artist.slice(0, -suffix.length);
  }
  return artist;
}
