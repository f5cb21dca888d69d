import { describe, expect, it } from 'vitest';
import {
  EMPTY_MEMORY,
  type HistoryMemory,
  memoryFromHistory,
  type Observation,
  playKeyOf,
  REPLAY_TOLERANCE_MS,
  recordObservation,
  statsFrom,
  TOP_TRACKS_MAX_LIMIT,
  topTracksLimit,
  utcDay,
} from '../../src/model/history.js';
import type { DiscordStatus, NowPlaying } from '../../src/presence/model.js';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);
const SONG_MS = 200_000;

function track(
  id: string | null,
  start: number | null,
  end: number | null = start === null ? null : start + SONG_MS,
): NowPlaying {
  return {
    source: 'spotify',
    song: `Song ${id ?? 'local'}`,
    artist: 'Artist',
    album: 'Album',
    album_art_url: null,
    track_id: id,
    track_url: id === null ? null : `https://open.spotify.com/track/${id}`,
    timestamps: { start, end },
    duration_ms: start !== null && end !== null ? end - start : null,
  };
}

/** Runs observations through the rules as the recorder does, collecting what they decide to write. */
function run(
  observations: Array<Partial<Observation> & { ts: number }>,
  memory: HistoryMemory = EMPTY_MEMORY,
) {
  let current = memory;
  let previous: DiscordStatus | null = null;
  const status: { status: DiscordStatus; ts: number }[] = [];
  const tracks: (NowPlaying & { ts: number })[] = [];
  const counted: string[] = [];
  const lastSeen: number[] = [];
  for (const partial of observations) {
    const observation: Observation = {
      status: 'online',
      nowPlaying: null,
      previousLiveStatus: previous,
      ...partial,
    };
    const decision = recordObservation(current, observation);
    current = decision.memory;
    previous = observation.status;
    if (decision.status) status.push(decision.status);
    if (decision.track) tracks.push(decision.track);
    if (decision.countsPlay && decision.track)
      counted.push(decision.track.track_id ?? `${playKeyOf(decision.track)}`);
    if (decision.lastSeen !== null) lastSeen.push(decision.lastSeen);
  }
  return { status, tracks, counted, lastSeen, memory: current };
}

describe('recording rules: tracks', () => {
  it('records one play for the per-guild copies of one update', () => {
    const { tracks, counted } = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + 200, nowPlaying: track('a', T0 + 350) },
      { ts: T0 + 400, nowPlaying: track('a', T0 - 400) },
    ]);
    expect(tracks).toHaveLength(1);
    expect(tracks[0]).toMatchObject({ track_id: 'a', ts: T0 });
    expect(counted).toEqual(['a']);
  });

  it('records a new play when the track changes', () => {
    const { tracks } = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + SONG_MS, nowPlaying: track('b', T0 + SONG_MS) },
      { ts: T0 + 2 * SONG_MS, nowPlaying: track('a', T0 + 2 * SONG_MS) },
    ]);
    expect(tracks.map((t) => t.track_id)).toEqual(['a', 'b', 'a']);
  });

  it('records a replay: the same track starting again at or after its previous end', () => {
    const { tracks, counted } = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + SONG_MS, nowPlaying: track('a', T0 + SONG_MS) },
      { ts: T0 + 2 * SONG_MS, nowPlaying: track('a', T0 + 2 * SONG_MS - REPLAY_TOLERANCE_MS) },
    ]);
    expect(tracks).toHaveLength(3);
    expect(counted).toEqual(['a', 'a', 'a']);
  });

  it('does not record a seek, forwards or backwards', () => {
    const { tracks, memory } = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + 30_000, nowPlaying: track('a', T0 - 60_000) },
      { ts: T0 + 40_000, nowPlaying: track('a', T0 + 35_000) },
    ]);
    expect(tracks).toHaveLength(1);
    expect(memory.play?.end).toBe(T0 + 35_000 + SONG_MS);
  });

  it('counts a replay after a forward seek from where the seeked play ends', () => {
    const seekedStart = T0 - 100_000;
    const { tracks } = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + 10_000, nowPlaying: track('a', seekedStart) },
      { ts: seekedStart + SONG_MS, nowPlaying: track('a', seekedStart + SONG_MS) },
    ]);
    expect(tracks).toHaveLength(2);
  });

  it('does not record a pause and resume (Spotify drops the activity; YouTube Music drops the timestamps)', () => {
    const spotify = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + 60_000, nowPlaying: null },
      { ts: T0 + 90_000, nowPlaying: track('a', T0 + 30_000) },
    ]);
    expect(spotify.tracks).toHaveLength(1);

    const ytm = (start: number | null): NowPlaying => ({ ...track('v1', start), source: 'youtube_music' });
    const youtube = run([
      { ts: T0, nowPlaying: ytm(T0) },
      { ts: T0 + 60_000, nowPlaying: ytm(null) },
      { ts: T0 + 90_000, nowPlaying: ytm(T0 + 30_000) },
    ]);
    expect(youtube.tracks).toHaveLength(1);
  });

  it('does not count a resume after a pause longer than the song, but counts a restart from the top', () => {
    const pause = 2 * SONG_MS;
    const resumed = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + 30_000, nowPlaying: null },
      { ts: T0 + 30_000 + pause, nowPlaying: track('a', T0 + pause) },
    ]);
    expect(resumed.tracks).toHaveLength(1);

    const restarted = run([
      { ts: T0, nowPlaying: track('a', T0) },
      { ts: T0 + 30_000, nowPlaying: null },
      { ts: T0 + 30_000 + pause + 1_000, nowPlaying: track('a', T0 + 30_000 + pause) },
    ]);
    expect(restarted.tracks).toHaveLength(2);
  });

  it('counts local files (no track id) under their title and artist', () => {
    const local = (song: string, start: number): NowPlaying => ({ ...track(null, start), song });
    const { tracks, counted } = run([
      { ts: T0, nowPlaying: local('one', T0) },
      { ts: T0 + 1_000, nowPlaying: local('one', T0 + 500) },
      { ts: T0 + SONG_MS, nowPlaying: local('two', T0 + SONG_MS) },
    ]);
    expect(tracks.map((t) => t.song)).toEqual(['one', 'two']);
    expect(counted).toEqual(['spotify:~one\u001fartist', 'spotify:~two\u001fartist']);
  });

  it('continues from stored history after a restart instead of recording the same play again', () => {
    const memory = memoryFromHistory({ status: 'online', ts: T0 }, { ...track('a', T0), ts: T0 });
    const { tracks, status } = run([{ ts: T0 + 5_000, nowPlaying: track('a', T0 + 200) }], memory);
    expect(tracks).toHaveLength(0);
    expect(status).toHaveLength(0);
  });
});

describe('recording rules: status', () => {
  it('records an entry only when discord_status changes, including rapid flapping', () => {
    const { status } = run([
      { ts: T0, status: 'online' },
      { ts: T0 + 1, status: 'online', nowPlaying: track('a', T0) },
      { ts: T0 + 2, status: 'idle' },
      { ts: T0 + 3, status: 'online' },
      { ts: T0 + 4, status: 'online' },
      { ts: T0 + 5, status: 'dnd' },
      { ts: T0 + 6, status: 'dnd' },
    ]);
    expect(status).toEqual([
      { status: 'online', ts: T0 },
      { status: 'idle', ts: T0 + 2 },
      { status: 'online', ts: T0 + 3 },
      { status: 'dnd', ts: T0 + 5 },
    ]);
  });

  it('marks last seen when a user this process saw online goes offline', () => {
    const { lastSeen } = run([
      { ts: T0, status: 'offline' },
      { ts: T0 + 10, status: 'online' },
      { ts: T0 + 20, status: 'offline' },
    ]);
    expect(lastSeen).toEqual([T0 + 20]);
  });
});

describe('stats', () => {
  const stored = {
    lastStatus: 'dnd' as const,
    lastSeen: T0 - 5_000,
    trackHistoryCount: 7,
    playsDay: utcDay(T0),
    plays: 4,
  };

  it('answers live status and now as last seen while online', () => {
    expect(statsFrom('online', stored, T0)).toEqual({
      current_status: 'online',
      last_seen: T0,
      tracks_today: 4,
      track_history_count: 7,
      is_monitored: true,
    });
  });

  it('falls back to the last recorded status, then offline', () => {
    expect(statsFrom(undefined, stored, T0)).toMatchObject({
      current_status: 'dnd',
      last_seen: T0 - 5_000,
      is_monitored: false,
    });
    const nothing = { lastStatus: null, lastSeen: null, trackHistoryCount: 0, playsDay: null, plays: 0 };
    expect(statsFrom(undefined, nothing, T0)).toEqual({
      current_status: 'offline',
      last_seen: null,
      tracks_today: 0,
      track_history_count: 0,
      is_monitored: false,
    });
  });

  it('counts tracks_today from 00:00 UTC', () => {
    const lateYesterday = Date.UTC(2026, 10, 21, 23, 59, 59, 999);
    const midnight = Date.UTC(2026, 10, 22, 0, 0, 0, 0);
    expect(utcDay(lateYesterday)).toBe('2026-11-21');
    expect(utcDay(midnight)).toBe('2026-11-22');
    const counted = { ...stored, playsDay: utcDay(lateYesterday), plays: 9 };
    expect(statsFrom('offline', counted, lateYesterday).tracks_today).toBe(9);
    expect(statsFrom('offline', counted, midnight).tracks_today).toBe(0);
  });
});

describe('top tracks limit', () => {
  it.each([
    [undefined, 10],
    [0, 1],
    [-5, 1],
    [1, 1],
    [25, 25],
    [50, 50],
    [999, TOP_TRACKS_MAX_LIMIT],
  ])('%s → %s', (requested, limit) => {
    expect(topTracksLimit(requested)).toBe(limit);
  });
});

describe('plays of tracks without a provider id', () => {
  const other = (song: string | null, artist: string | null, start: number): NowPlaying => ({
    ...track(null, start),
    source: 'other',
    song,
    artist,
  });

  it('count under the title and artist, whatever their case, width or spacing', () => {
    expect(playKeyOf(other('Song', 'Artist', T0))).toBe(playKeyOf(other('  SONG ', 'artist', T0)));
    expect(playKeyOf(other('Ｓｏｎｇ', 'Artist', T0))).toBe(playKeyOf(other('song', 'ARTIST', T0)));
    expect(playKeyOf(other('Song', 'Artist', T0))).not.toBe(playKeyOf(other('Song', 'Other Artist', T0)));
    expect(playKeyOf({ ...other('Song', 'Artist', T0), source: 'apple_music' })).not.toBe(
      playKeyOf(other('Song', 'Artist', T0)),
    );
  });

  it('count a play each, and the same song again after its end is a replay', () => {
    const first = recordObservation(EMPTY_MEMORY, {
      status: 'online',
      nowPlaying: other('Song', 'Artist', T0),
      ts: T0,
      previousLiveStatus: null,
    });
    expect(first.countsPlay).toBe(true);
    const seek = recordObservation(first.memory, {
      status: 'online',
      nowPlaying: other('song', 'artist', T0 + 5_000),
      ts: T0 + 6_000,
      previousLiveStatus: 'online',
    });
    expect(seek.track).toBeNull();
    const replay = recordObservation(seek.memory, {
      status: 'online',
      nowPlaying: other('Song', 'Artist', T0 + 5_000 + SONG_MS),
      ts: T0 + 5_000 + SONG_MS,
      previousLiveStatus: 'online',
    });
    expect(replay.countsPlay).toBe(true);
  });

  it('a track without a title is history but no play', () => {
    const decision = recordObservation(EMPTY_MEMORY, {
      status: 'online',
      nowPlaying: other(null, 'Artist', T0),
      ts: T0,
      previousLiveStatus: null,
    });
    expect(decision.track).not.toBeNull();
    expect(decision.countsPlay).toBe(false);
  });
});
