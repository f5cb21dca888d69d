import { ActivityType } from 'discord-api-types/v10';
import type { MusicSource, NowPlaying, Spotify, YouTubeMusic } from '../model.js';
import { listeningFrom } from './listening.js';
import type { MusicApps } from './music-apps.js';
import { showsTrack } from './player-quirks.js';
import { isSpotifyActivity, spotifyTrackUrl } from './spotify.js';
import { durationMs } from './timestamps.js';
import { field, snowflakeString } from './values.js';
import { isYouTubeMusicActivity, type YouTubeMusicMatcher } from './youtube-music.js';

/** What `now_playing` is chosen from, besides the activities. */
export interface NowPlayingSources {
  spotify: Spotify | null;
  youtubeMusic: YouTubeMusic | null;
  youtubeMusicMatcher: YouTubeMusicMatcher;
  apps: MusicApps;
  cdnUrl: string;
}

/**
 * `now_playing`: one shape for whichever music is playing, from any player.
 *
 * Which one, when several play: Discord's own Spotify activity (it is what Lanyard clients show); else
 * the one that started last (a player with a start time before one without: paused players send none);
 * at equal starts a known service before `other`, then the first in `activities`.
 */
export function nowPlayingFrom(
  activities: readonly unknown[],
  sources: NowPlayingSources,
): NowPlaying | null {
  if (sources.spotify) return fromSpotify(sources.spotify);
  let youtubeMusic = sources.youtubeMusic;
  let chosen: NowPlaying | null = null;
  for (const activity of activities) {
    let playing: NowPlaying | null = null;
    if (isYouTubeMusicActivity(activity, sources.youtubeMusicMatcher)) {
      // `youtube_music` is the first of them: it takes that one's place in the order.
      playing = youtubeMusic === null ? null : fromYouTubeMusic(youtubeMusic);
      youtubeMusic = null;
    } else if (!isSpotifyActivity(activity)) {
      const source = musicSourceOf(activity, sources.apps);
      if (source !== null && showsTrack(activity)) playing = listeningFrom(activity, source, sources.cdnUrl);
    }
    if (playing !== null && (chosen === null || playsLater(playing, chosen))) chosen = playing;
  }
  return chosen;
}

/** The service of a player's activity: by its application, else its name; any other Listening is `other`. */
export function musicSourceOf(activity: unknown, apps: MusicApps): MusicSource | null {
  const applicationId = snowflakeString(field(activity, 'application_id'));
  const known = applicationId === null ? undefined : apps.byApplicationId.get(applicationId);
  if (known) return known;
  const name = field(activity, 'name');
  const named = typeof name === 'string' ? apps.byName.get(name.trim().toLowerCase()) : undefined;
  if (named) return named;
  return field(activity, 'type') === ActivityType.Listening ? 'other' : null;
}

/** Whether `a`, met after `b` in the activities, wins over it. */
function playsLater(a: NowPlaying, b: NowPlaying): boolean {
  const aStart = a.timestamps.start;
  const bStart = b.timestamps.start;
  if (aStart !== bStart) return bStart === null || (aStart !== null && aStart > bStart);
  return b.source === 'other' && a.source !== 'other';
}

function fromSpotify(spotify: Spotify): NowPlaying {
  return fromMusic('spotify', spotify, spotifyTrackUrl(spotify.track_id));
}

function fromYouTubeMusic(youtubeMusic: YouTubeMusic): NowPlaying {
  return fromMusic('youtube_music', youtubeMusic, youtubeMusic.url);
}

function fromMusic(source: MusicSource, music: Spotify, trackUrl: string | null): NowPlaying {
  return {
    source,
    song: music.song,
    artist: music.artist,
    album: music.album,
    album_art_url: music.album_art_url,
    track_id: music.track_id,
    track_url: trackUrl,
    timestamps: { start: music.timestamps.start, end: music.timestamps.end },
    duration_ms: durationMs(music.timestamps),
  };
}
