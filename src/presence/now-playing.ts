import type { NowPlaying, Spotify, Timestamps, YouTubeMusic } from './model.js';
import { spotifyTrackUrl } from './spotify.js';

/**
 * `now_playing`: one shape for whichever music is playing. Spotify wins when both play (it is Discord's
 * own integration, and Lanyard clients already show it).
 *
 * | field         | Spotify                               | YouTube Music   |
 * |---------------|---------------------------------------|-----------------|
 * | `source`      | "spotify"                             | "youtube_music" |
 * | `track_url`   | `https://open.spotify.com/track/<id>` | its `url`       |
 * | `duration_ms` | end − start when both are known and end > start, else null |
 * | the others    | copied from the music object                               |
 */
export function nowPlayingFrom(
  spotify: Spotify | null,
  youtubeMusic: YouTubeMusic | null,
): NowPlaying | null {
  if (spotify) {
    return {
      source: 'spotify',
      song: spotify.song,
      artist: spotify.artist,
      album: spotify.album,
      album_art_url: spotify.album_art_url,
      track_id: spotify.track_id,
      track_url: spotifyTrackUrl(spotify.track_id),
      timestamps: { start: spotify.timestamps.start, end: spotify.timestamps.end },
      duration_ms: durationMs(spotify.timestamps),
    };
  }
  if (youtubeMusic) {
    return {
      source: 'youtube_music',
      song: youtubeMusic.song,
      artist: youtubeMusic.artist,
      album: youtubeMusic.album,
      album_art_url: youtubeMusic.album_art_url,
      track_id: youtubeMusic.track_id,
      track_url: youtubeMusic.url,
      timestamps: { start: youtubeMusic.timestamps.start, end: youtubeMusic.timestamps.end },
      duration_ms: durationMs(youtubeMusic.timestamps),
    };
  }
  return null;
}

/** end − start when both are known and end > start, else null. */
export function durationMs(timestamps: Timestamps): number | null {
  const { start, end } = timestamps;
  if (typeof start !== 'number' || typeof end !== 'number') return null;
  if (!Number.isFinite(start) || !Number.isFinite(end) || end <= start) return null;
  return end - start;
}
