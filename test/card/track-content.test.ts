import { describe, expect, it } from 'vitest';
import { recentContent, topContent } from '../../src/card/track-content.js';
import type { TrackEntry } from '../../src/model/history.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { CDN, OBSERVED_AT, presenceOf } from './support.js';

/** What the track cards show, decided from the presence and the plays before anything is drawn. */

const NOW = OBSERVED_AT;
const TRACK = {
  song: 'Midnight City',
  artists: ['M83', 'Someone'],
  album: "Hurry Up, We're Dreaming",
  imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
  trackId: '1eyzqe2QqGZUmfcPZtrIyt',
  start: NOW - 30_000,
  end: NOW + 200_000,
};

function entry(song: string | null, trackId: string | null, ts: number): TrackEntry {
  return {
    source: 'spotify',
    song,
    artist: 'M83; Someone',
    album: 'Album',
    album_art_url: null,
    track_id: trackId,
    track_url: null,
    timestamps: { start: ts, end: null },
    duration_ms: null,
    ts,
  };
}

describe('recentContent', () => {
  const playing = presenceOf({ activities: [spotifyActivity(TRACK)] });

  it('marks the first play "Now playing" when it is the track the presence plays', () => {
    const content = recentContent(playing, [entry('Midnight City', TRACK.trackId, NOW - 30_000)], CDN);
    expect(content.rows.map((row) => [row.song, row.artist, row.nowPlaying, row.playedAt])).toEqual([
      ['Midnight City', 'M83, Someone', true, NOW - 30_000],
    ]);
  });

  it('marks nothing when the first play is another track, or a later one is this track', () => {
    const other = recentContent(
      playing,
      [entry('Intro', 'other', NOW - 10_000), entry('Midnight City', TRACK.trackId, NOW - 300_000)],
      CDN,
    );
    expect(other.rows.map((row) => row.nowPlaying)).toEqual([false, false]);
  });

  it('marks nothing for a stale presence, which does not know what plays now', () => {
    const stale = presenceOf({
      activities: [spotifyActivity(TRACK)],
      freshness: { observed_at: NOW - 600_000, stale: true },
    });
    const content = recentContent(stale, [entry('Midnight City', TRACK.trackId, NOW - 30_000)], CDN);
    expect(content.rows[0]?.nowPlaying).toBe(false);
  });

  it('gives a title to a play without one, and cleans what XML cannot hold', () => {
    const content = recentContent(
      playing,
      [entry(null, null, NOW - 1_000), entry('Line\none\u0000', 'x', NOW - 2_000)],
      CDN,
    );
    expect(content.rows.map((row) => row.song)).toEqual(['Album', 'Line one']);
  });

  it('says so when nothing was played', () => {
    expect(recentContent(playing, [], CDN)).toMatchObject({ rows: [], empty: 'Nothing played yet' });
  });
});

describe('topContent', () => {
  const presence = presenceOf();

  it('names the period, and what a period without tracks played twice lacks', () => {
    const { ts, ...intro } = entry('Intro', 'i', NOW);
    expect(topContent(presence, [{ ...intro, last_played: ts, play_count: 4 }], 'all', CDN)).toMatchObject({
      heading: 'Top tracks · all time',
      rows: [{ song: 'Intro', plays: 4, playedAt: null, nowPlaying: false }],
    });
    expect(topContent(presence, [], '7d', CDN)).toMatchObject({
      heading: 'Top tracks · last 7 days',
      empty: 'No track played twice in the last 7 days',
    });
    expect(topContent(presence, [], 'all', CDN).empty).toBe('No track played twice yet');
  });
});
