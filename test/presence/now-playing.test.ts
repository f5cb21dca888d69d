import { describe, expect, it } from 'vitest';
import type { Spotify, YouTubeMusic } from '../../src/presence/model.js';
import { durationMs, nowPlayingFrom } from '../../src/presence/now-playing.js';

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
    const nowPlaying = nowPlayingFrom(SPOTIFY, null);
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
    expect(JSON.stringify(nowPlayingFrom(null, YOUTUBE_MUSIC))).toBe(
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
    expect(nowPlayingFrom(SPOTIFY, YOUTUBE_MUSIC)).toMatchObject({
      source: 'spotify',
      track_id: '3kdlVcMVsSkbsUy8eQcBjI',
    });
  });

  it('is null when nothing plays', () => {
    expect(nowPlayingFrom(null, null)).toBeNull();
  });

  it('has no track url for a Spotify local file', () => {
    const local: Spotify = { ...SPOTIFY, track_id: null, artist: null, album_art_url: null };
    expect(nowPlayingFrom(local, null)).toMatchObject({
      track_id: null,
      track_url: null,
      duration_ms: 248056,
    });
  });

  it('has no duration for a paused player', () => {
    const paused: YouTubeMusic = { ...YOUTUBE_MUSIC, album: null, timestamps: { start: null, end: null } };
    expect(nowPlayingFrom(null, paused)).toMatchObject({
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
