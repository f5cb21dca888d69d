import { describe, expect, it } from 'vitest';
import type { Spotify, YouTubeMusic } from '../../../src/presence/model.js';
import { DEFAULT_MUSIC_APPS } from '../../../src/presence/normalize/music-apps.js';
import { nowPlayingFrom } from '../../../src/presence/normalize/now-playing.js';
import { durationMs } from '../../../src/presence/normalize/timestamps.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../../src/presence/normalize/youtube-music.js';
import { CDN } from '../payloads.js';

/** now_playing of these music objects and further activities. */
const pick = (spotify: Spotify | null, youtubeMusic: YouTubeMusic | null, activities: unknown[] = []) =>
  // The YouTube Music object comes from an activity of the player, which has its place in the list.
  nowPlayingFrom(youtubeMusic ? [{ type: 2, name: 'YouTube Music' }, ...activities] : activities, {
    spotify,
    youtubeMusic,
    youtubeMusicMatcher: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    apps: DEFAULT_MUSIC_APPS,
    cdnUrl: CDN,
  });

const SPOTIFY: Spotify = {
  track_id: '3kdlVcMVsSkbsUy8eQcBjI',
  timestamps: { start: 1615529820677, end: 1615530068733 },
  album: 'Let Go (Deluxe)',
  album_art_url: 'https://i.scdn.co/image/ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
  artist: 'Lua Fernandes',
  song: 'Let Go',
};

const YOUTUBE_MUSIC: YouTubeMusic = {
  track_id: 'lYBUbBu4W08',
  timestamps: { start: 1_700_000_000_000, end: 1_700_000_213_000 },
  album: 'Whenever You Need Somebody',
  album_art_url: 'https://media.discordapp.net/external/x/https/lh3.googleusercontent.com/y',
  artist: 'Rick Astley',
  song: 'Never Gonna Give You Up',
  url: 'https://music.youtube.com/watch?v=lYBUbBu4W08',
};

describe('nowPlayingFrom', () => {
  it('normalizes Spotify', () => {
    const nowPlaying = pick(SPOTIFY, null);
    expect(JSON.stringify(nowPlaying)).toBe(
      JSON.stringify({
        source: 'spotify',
        song: 'Let Go',
        artist: 'Lua Fernandes',
        album: 'Let Go (Deluxe)',
        album_art_url: 'https://i.scdn.co/image/ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
        track_id: '3kdlVcMVsSkbsUy8eQcBjI',
        track_url: 'https://open.spotify.com/track/3kdlVcMVsSkbsUy8eQcBjI',
        timestamps: { start: 1615529820677, end: 1615530068733 },
        duration_ms: 248056,
      }),
    );
    expect(nowPlaying?.timestamps).not.toBe(SPOTIFY.timestamps);
  });

  it('normalizes YouTube Music', () => {
    expect(JSON.stringify(pick(null, YOUTUBE_MUSIC))).toBe(
      JSON.stringify({
        source: 'youtube_music',
        song: 'Never Gonna Give You Up',
        artist: 'Rick Astley',
        album: 'Whenever You Need Somebody',
        album_art_url: 'https://media.discordapp.net/external/x/https/lh3.googleusercontent.com/y',
        track_id: 'lYBUbBu4W08',
        track_url: 'https://music.youtube.com/watch?v=lYBUbBu4W08',
        timestamps: { start: 1_700_000_000_000, end: 1_700_000_213_000 },
        duration_ms: 213_000,
      }),
    );
  });

  it('prefers Spotify when both play', () => {
    expect(pick(SPOTIFY, YOUTUBE_MUSIC)).toMatchObject({
      source: 'spotify',
      track_id: '3kdlVcMVsSkbsUy8eQcBjI',
    });
  });

  it('is null when nothing plays', () => {
    expect(pick(null, null)).toBeNull();
  });

  it('has no track url for a Spotify local file', () => {
    const local: Spotify = { ...SPOTIFY, track_id: null, artist: null, album_art_url: null };
    expect(pick(local, null)).toMatchObject({
      track_id: null,
      track_url: null,
      duration_ms: 248056,
    });
  });

  it('has no duration for a paused player', () => {
    const paused: YouTubeMusic = { ...YOUTUBE_MUSIC, album: null, timestamps: { start: null, end: null } };
    expect(pick(null, paused)).toMatchObject({
      source: 'youtube_music',
      album: null,
      timestamps: { start: null, end: null },
      duration_ms: null,
      track_url: 'https://music.youtube.com/watch?v=lYBUbBu4W08',
    });
  });
});

describe('durationMs', () => {
  it('is end − start when both are known and end is later', () => {
    expect(durationMs({ start: 1000, end: 181_000 })).toBe(180_000);
    expect(durationMs({ start: 0, end: 1 })).toBe(1);
  });

  it('is null otherwise', () => {
    expect(durationMs({ start: 1000, end: null })).toBeNull();
    expect(durationMs({ start: null, end: 1000 })).toBeNull();
    expect(durationMs({ start: 1000, end: 1000 })).toBeNull();
    expect(durationMs({ start: 2000, end: 1000 })).toBeNull();
    expect(durationMs({ start: Number.NaN, end: 1000 })).toBeNull();
    expect(durationMs({ start: 0, end: Number.POSITIVE_INFINITY })).toBeNull();
  });
});

describe('which music wins when several play', () => {
  const T = 1_700_000_000_000;
  const listening = (name: string, start: number | null, extra: Record<string, unknown> = {}) => ({
    type: 2,
    name,
    details: `${name} song`,
    state: `${name} artist`,
    ...(start === null ? {} : { timestamps: { start, end: start + 200_000 } }),
    ...extra,
  });
  const APPLE = { application_id: '1247654840780460125' };

  it("Discord's own Spotify, whenever it plays", () => {
    const later = listening('Apple Music', T + 60_000, APPLE);
    expect(pick(SPOTIFY, YOUTUBE_MUSIC, [later])?.source).toBe('spotify');
  });

  it('otherwise the one that started last, whatever its service', () => {
    const apple = listening('Apple Music', T + 60_000, APPLE);
    const radio = listening('Foobar Radio', T + 90_000);
    expect(pick(null, YOUTUBE_MUSIC, [apple])).toMatchObject({
      source: 'apple_music',
      song: 'Apple Music song',
    });
    expect(pick(null, YOUTUBE_MUSIC, [apple, radio])).toMatchObject({
      source: 'other',
      song: 'Foobar Radio song',
    });
    expect(pick(null, YOUTUBE_MUSIC, [radio, apple])).toMatchObject({ source: 'other' });
  });

  it('a player with a start before a paused one (no timestamps)', () => {
    const paused = listening('Apple Music', null, APPLE);
    const radio = listening('Foobar Radio', T);
    expect(pick(null, null, [paused, radio])).toMatchObject({ source: 'other' });
    expect(pick(null, null, [paused])).toMatchObject({ source: 'apple_music', timestamps: { start: null } });
  });

  it('at equal starts YouTube Music keeps its place in the list like any known service', () => {
    const apple = listening('Apple Music', YOUTUBE_MUSIC.timestamps.start, APPLE);
    const both = (activities: unknown[]) =>
      nowPlayingFrom(activities, {
        spotify: null,
        youtubeMusic: YOUTUBE_MUSIC,
        youtubeMusicMatcher: DEFAULT_YOUTUBE_MUSIC_MATCHER,
        apps: DEFAULT_MUSIC_APPS,
        cdnUrl: CDN,
      });
    const ytm = { type: 2, name: 'YouTube Music' };
    expect(both([apple, ytm])?.source).toBe('apple_music');
    expect(both([ytm, apple])?.source).toBe('youtube_music');
  });

  it('at equal starts a known service before other music, then the first listed', () => {
    const apple = listening('Apple Music', T, APPLE);
    const radio = listening('Foobar Radio', T);
    const deezer = listening('Deezer', T);
    expect(pick(null, null, [radio, apple])).toMatchObject({ source: 'apple_music' });
    expect(pick(null, null, [apple, deezer])).toMatchObject({ source: 'apple_music' });
    expect(pick(null, null, [deezer, apple])).toMatchObject({ source: 'deezer' });
  });

  it('games, streams and custom statuses are not music', () => {
    const game = { type: 0, name: 'Minecraft', details: 'Survival', timestamps: { start: T } };
    const stream = { type: 1, name: 'Twitch', details: 'live', url: 'https://twitch.tv/x' };
    const custom = { type: 4, name: 'Custom Status', state: 'hi' };
    expect(pick(null, null, [game, stream, custom])).toBeNull();
  });
});
