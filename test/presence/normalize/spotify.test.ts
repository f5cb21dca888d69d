import { describe, expect, it } from 'vitest';
import { isSpotifyActivity, spotifyFrom, spotifyTrackUrl } from '../../../src/presence/normalize/spotify.js';
import { spotifyActivity, spotifyLocalFileActivity } from '../../../src/simulator/activities.js';
import {
  APPLE_MUSIC_LITERAL,
  CUSTOM_STATUS_LITERAL,
  copy,
  PEAR_DESKTOP_LITERAL,
  SPOTIFY_LITERAL,
  SPOTIFY_LOCAL_FILE_LITERAL,
  T0,
  VSCODE_LITERAL,
} from '../payloads.js';

describe('spotifyActivity (simulator)', () => {
  it('builds what Discord sends, field order included', () => {
    const built = spotifyActivity({
      song: 'Let Go',
      artists: ['Lua Fernandes', 'Jovem Dionisio'],
      album: 'Let Go (Deluxe)',
      imageId: 'ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
      trackId: '3kdlVcMVsSkbsUy8eQcBjI',
      start: 1615529820677,
      end: 1615530068733,
      createdAt: 1615529838051,
      userId: '94490510688792576',
      sessionId: '140ecdfb976bdbf29d4452d492e551c7',
    });
    expect(JSON.stringify(built)).toBe(JSON.stringify(SPOTIFY_LITERAL));
  });

  it('builds a local file without sync_id, state or large_image', () => {
    const built = spotifyLocalFileActivity({
      song: 'rehearsal-take-3',
      album: 'Voice Memos',
      start: 1615529820677,
      end: 1615530001000,
      createdAt: 1615529838051,
      userId: '94490510688792576',
      sessionId: '140ecdfb976bdbf29d4452d492e551c7',
    });
    expect(JSON.stringify(built)).toBe(JSON.stringify(SPOTIFY_LOCAL_FILE_LITERAL));
  });

  it('derives a stable 32-hex session id and a party of the user when none is given', () => {
    const track = {
      song: 's',
      artists: ['a'],
      album: 'b',
      imageId: 'i',
      trackId: 't',
      start: T0,
      end: T0 + 1,
    };
    const a = spotifyActivity(track);
    const b = spotifyActivity({ ...track, start: T0 + 300, end: T0 + 301 });
    expect(a.session_id).toMatch(/^[0-9a-f]{32}$/);
    expect(a.session_id).toBe(b.session_id);
    expect(a.party).toEqual({ id: 'spotify:80351110224678912' });
    expect(a.created_at).toBe(T0);
  });
});

describe('spotifyFrom', () => {
  it('reads a Spotify activity as Discord sends it', () => {
    const spotify = spotifyFrom([copy(CUSTOM_STATUS_LITERAL), copy(SPOTIFY_LITERAL), copy(VSCODE_LITERAL)]);
    expect(spotify).toEqual({
      track_id: '3kdlVcMVsSkbsUy8eQcBjI',
      timestamps: { start: 1615529820677, end: 1615530068733 },
      album: 'Let Go (Deluxe)',
      album_art_url: 'https://i.scdn.co/image/ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
      artist: 'Lua Fernandes; Jovem Dionisio',
      song: 'Let Go',
    });
    expect(Object.keys(spotify ?? {})).toEqual([
      'track_id',
      'timestamps',
      'album',
      'album_art_url',
      'artist',
      'song',
    ]);
  });

  it('keeps the artists as Discord joined them', () => {
    const spotify = spotifyFrom([
      spotifyActivity({
        song: 'Get Lucky (feat. Pharrell Williams and Nile Rodgers)',
        artists: ['Daft Punk', 'Pharrell Williams', 'Nile Rodgers'],
        album: 'Random Access Memories',
        imageId: 'ab67616d0000b2739b9b36b0e22870b9f542d937',
        trackId: '69kOkLUCkxIZYexIgSG8rq',
        start: T0,
        end: T0 + 369_626,
      }),
    ]);
    expect(spotify).toEqual({
      track_id: '69kOkLUCkxIZYexIgSG8rq',
      timestamps: { start: T0, end: T0 + 369_626 },
      album: 'Random Access Memories',
      album_art_url: 'https://i.scdn.co/image/ab67616d0000b2739b9b36b0e22870b9f542d937',
      artist: 'Daft Punk; Pharrell Williams; Nile Rodgers',
      song: 'Get Lucky (feat. Pharrell Williams and Nile Rodgers)',
    });
  });

  it('gives null track id, artist and art for a local file', () => {
    expect(spotifyFrom([copy(SPOTIFY_LOCAL_FILE_LITERAL)])).toEqual({
      track_id: null,
      timestamps: { start: 1615529820677, end: 1615530001000 },
      album: 'Voice Memos',
      album_art_url: null,
      artist: null,
      song: 'rehearsal-take-3',
    });
    const noAlbum = spotifyFrom([spotifyLocalFileActivity({ song: 'untitled', start: T0, end: T0 + 1000 })]);
    expect(noAlbum).toEqual({
      track_id: null,
      timestamps: { start: T0, end: T0 + 1000 },
      album: null,
      album_art_url: null,
      artist: null,
      song: 'untitled',
    });
  });

  it('gives null timestamps that are absent', () => {
    const { timestamps: _t, ...noTimestamps } = copy(SPOTIFY_LITERAL);
    expect(spotifyFrom([noTimestamps])?.timestamps).toEqual({ start: null, end: null });
    const startOnly = { ...copy(SPOTIFY_LITERAL), timestamps: { start: T0 } };
    expect(spotifyFrom([startOnly])?.timestamps).toEqual({ start: T0, end: null });
  });

  it('takes only spotify:1: the name "Spotify" and a spotify: party are what any custom presence can send', () => {
    const lookAlike = { ...copy(SPOTIFY_LITERAL), id: 'spotify:2' };
    expect(isSpotifyActivity(lookAlike)).toBe(false);
    expect(spotifyFrom([lookAlike])).toBeNull();
  });

  it('ignores activities that only look like Spotify', () => {
    const { party: _p, ...noParty } = { ...copy(SPOTIFY_LITERAL), id: 'c0ffee0123456789' };
    const rpcNamedSpotify = { ...noParty, application_id: '123456789012345678' };
    const playing = { ...copy(SPOTIFY_LITERAL), type: 0 };
    const otherParty = { ...copy(SPOTIFY_LITERAL), id: 'c0ffee0123456789', party: { id: 'lobby:1' } };
    expect(isSpotifyActivity(rpcNamedSpotify)).toBe(false);
    expect(isSpotifyActivity(playing)).toBe(false);
    expect(isSpotifyActivity(otherParty)).toBe(false);
    expect(spotifyFrom([rpcNamedSpotify, playing, otherParty])).toBeNull();
  });

  it('is null without a Spotify activity, including other music players', () => {
    expect(spotifyFrom([])).toBeNull();
    expect(
      spotifyFrom([copy(APPLE_MUSIC_LITERAL), copy(PEAR_DESKTOP_LITERAL), copy(VSCODE_LITERAL)]),
    ).toBeNull();
  });

  it('never throws on garbage, and reads wrong-typed fields as null', () => {
    for (const input of [
      null,
      undefined,
      0,
      'Spotify',
      {},
      [null, 1, 'x', [], {}],
      { length: 1, 0: SPOTIFY_LITERAL },
    ]) {
      expect(spotifyFrom(input)).toBeNull();
    }
    const garbled = {
      type: 2,
      id: 'spotify:1',
      name: 'Spotify',
      sync_id: 42,
      details: ['Let Go'],
      state: { artist: 'x' },
      assets: 'spotify:abc',
      timestamps: { start: 'soon', end: -5 },
    };
    expect(spotifyFrom([garbled])).toEqual({
      track_id: null,
      timestamps: { start: null, end: null },
      album: null,
      album_art_url: null,
      artist: null,
      song: null,
    });
  });
});

describe('spotifyTrackUrl', () => {
  it('links a track on open.spotify.com', () => {
    expect(spotifyTrackUrl('3kdlVcMVsSkbsUy8eQcBjI')).toBe(
      'https://open.spotify.com/track/3kdlVcMVsSkbsUy8eQcBjI',
    );
  });

  it('links a track id with a lone surrogate (JSON can carry one) instead of throwing', () => {
    expect(spotifyTrackUrl('a\ud800b')).toBe('https://open.spotify.com/track/a%EF%BF%BDb');
  });

  it('is null without a track id', () => {
    expect(spotifyTrackUrl(null)).toBeNull();
    expect(spotifyTrackUrl(undefined)).toBeNull();
    expect(spotifyTrackUrl('')).toBeNull();
  });
});
