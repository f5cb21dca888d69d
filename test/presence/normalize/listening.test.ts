import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listeningFrom } from '../../../src/presence/normalize/listening.js';
import { DEFAULT_MUSIC_APPS } from '../../../src/presence/normalize/music-apps.js';
import { musicSourceOf, nowPlayingFrom } from '../../../src/presence/normalize/now-playing.js';
import { buildPresence } from '../../../src/presence/normalize/presence.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../../src/presence/normalize/youtube-music.js';
import { CDN, T0 } from '../payloads.js';

/**
 * Each player's activity as its own source writes it. Where each layout comes from is in docs/music.md
 * (the players' repositories); the field values are made up.
 */
const ART = 'mp:external/abc/https/is1-ssl.mzstatic.com/image/thumb/x/600x600bb.jpg';
const ART_URL =
  'https://media.discordapp.net/external/abc/https/is1-ssl.mzstatic.com/image/thumb/x/600x600bb.jpg';
const timed = { timestamps: { start: T0, end: T0 + 180_000 } };

/** now_playing of these activities alone. */
function playing(...activities: unknown[]) {
  return nowPlayingFrom(activities, {
    spotify: null,
    youtubeMusic: null,
    youtubeMusicMatcher: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    apps: DEFAULT_MUSIC_APPS,
    cdnUrl: CDN,
  });
}

describe('music from every player', () => {
  it("Music Presence's Apple Music: title, artist, album, art, the track's id from its link", () => {
    const activity = {
      type: 2,
      name: 'Apple Music',
      application_id: '1247654840780460125',
      details: 'Motion Sickness',
      state: 'Phoebe Bridgers',
      details_url: 'https://music.apple.com/us/album/motion-sickness/1254567189?i=1254567493',
      status_display_type: 2,
      assets: { large_image: ART, large_text: 'Stranger in the Alps' },
      ...timed,
    };
    expect(playing(activity)).toEqual({
      source: 'apple_music',
      song: 'Motion Sickness',
      artist: 'Phoebe Bridgers',
      album: 'Stranger in the Alps',
      album_art_url: ART_URL,
      track_id: '1254567493',
      track_url: activity.details_url,
      timestamps: { start: T0, end: T0 + 180_000 },
      duration_ms: 180_000,
    });
  });

  it('Cider 1: a Playing activity with "by " before the artist', () => {
    const activity = {
      type: 0,
      name: 'Cider',
      application_id: '911790844204437504',
      details: 'Motion Sickness',
      state: 'by Phoebe Bridgers',
      assets: { large_image: ART, large_text: 'Stranger in the Alps' },
      ...timed,
    };
    expect(playing(activity)).toMatchObject({ source: 'apple_music', artist: 'Phoebe Bridgers' });
    // Cider's idle activity is Playing without timestamps: nothing plays.
    expect(playing({ ...activity, details: 'Browsing Cider', timestamps: undefined })).toBeNull();
  });

  it('TIDAL Hi-Fi: "Listening to " before the title, its own name where no album is', () => {
    const activity = {
      type: 2,
      name: 'TIDAL Hi-Fi',
      application_id: '833617820704440341',
      details: 'Listening to Blinding Lights',
      state: 'The Weeknd',
      status_display_type: 1,
      details_url: 'https://tidal.com/browse/track/134858527',
      assets: {
        large_image: 'https://resources.tidal.com/images/a/b/c/640x640.jpg',
        large_text: 'TIDAL Hi-Fi 5.16.0',
      },
      ...timed,
    };
    expect(playing(activity)).toMatchObject({
      source: 'tidal',
      song: 'Blinding Lights',
      album: null,
      track_id: '134858527',
      album_art_url: 'https://resources.tidal.com/images/a/b/c/640x640.jpg',
    });
    // Paused, it keeps a Listening activity that names the app: nothing plays.
    expect(playing({ ...activity, details: 'Browsing Tidal', timestamps: undefined })).toBeNull();
  });

  it('PreMiD Deezer, SoundCloud and Amazon Music by their applications; browsing pages are no track', () => {
    const deezer = {
      type: 2,
      name: 'Deezer',
      application_id: '607651992567021580',
      details: 'Alors on danse',
      state: 'Stromae',
      details_url: 'https://www.deezer.com/fr/track/3135556',
      ...timed,
    };
    expect(playing(deezer)).toMatchObject({ source: 'deezer', track_id: '3135556' });
    expect(playing({ ...deezer, details: 'Browsing shows', timestamps: undefined })).toBeNull();
    const soundcloud = {
      type: 2,
      name: 'SoundCloud',
      application_id: '802958833214423081',
      details: 'Flume - Never Be Like You',
      state: 'Flume',
      details_url: 'https://soundcloud.com/flume/never-be-like-you-feat-kai',
      state_url: 'https://soundcloud.com/flume',
      ...timed,
    };
    expect(playing(soundcloud)).toMatchObject({
      source: 'soundcloud',
      track_id: 'flume/never-be-like-you-feat-kai',
    });
    // PreMiD's Amazon Music sets no type: a Playing activity, music while it has timestamps.
    const amazon = {
      type: 0,
      name: 'Amazon Music',
      application_id: '808756700022702120',
      details: 'Levitating',
      state: 'Dua Lipa',
      details_url: 'https://music.amazon.com/albums/B08HN7XG8V?trackAsin=B08HN9V9G2',
      ...timed,
    };
    expect(playing(amazon)).toMatchObject({ source: 'amazon_music', track_id: 'B08HN9V9G2' });
  });

  it('Vencord\'s Apple Music: "artist · album" in state', () => {
    const activity = {
      type: 2,
      name: 'Apple Music',
      application_id: '1239490006054207550',
      details: 'Motion Sickness',
      state: 'Phoebe Bridgers · Stranger in the Alps',
      assets: { large_text: 'Stranger in the Alps' },
      ...timed,
    };
    expect(playing(activity)).toMatchObject({ artist: 'Phoebe Bridgers', album: 'Stranger in the Alps' });
  });

  it('a player nobody knows: "other", with what it has; by name a known service', () => {
    const radio = {
      type: 2,
      name: 'Foobar Radio',
      application_id: '1200000000000000001',
      details: 'Song',
      state: 'Artist',
      details_url: 'https://radio.example/track/1',
      assets: { large_image: 'cover', large_text: 'Album' },
      ...timed,
    };
    expect(playing(radio)).toEqual({
      source: 'other',
      song: 'Song',
      artist: 'Artist',
      album: 'Album',
      album_art_url: `${CDN}/app-assets/1200000000000000001/cover.png`,
      track_id: null,
      track_url: 'https://radio.example/track/1',
      timestamps: { start: T0, end: T0 + 180_000 },
      duration_ms: 180_000,
    });
    expect(
      musicSourceOf({ ...radio, application_id: undefined, name: ' SoundCloud ' }, DEFAULT_MUSIC_APPS),
    ).toBe('soundcloud');
    expect(playing({ ...radio, details_url: 'javascript:alert(1)' })?.track_url).toBeNull();
  });

  it('a Spotify look-alike from a custom rich presence is other music, not Spotify', () => {
    const lookAlike = {
      type: 2,
      name: 'Spotify',
      id: 'f00dfeed',
      application_id: '1247651846936596540',
      party: { id: 'spotify:94490510688792576' },
      details: 'Song',
      state: 'Artist',
      ...timed,
    };
    const presence = buildPresence(
      {
        user: { id: '1' } as never,
        raw: { status: 'online', activities: [lookAlike] } as never,
        profile: null,
        freshness: { observed_at: 1, stale: false },
        kv: {},
      },
      { cdnUrl: CDN, youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER },
    );
    expect(presence.listening_to_spotify).toBe(false);
    expect(presence.spotify).toBeNull();
    expect(presence.listening_to_music).toBe(true);
    expect(presence.now_playing).toMatchObject({ source: 'other', song: 'Song' });
  });

  it('without details, the title is the state when Discord shows the state; otherwise no track', () => {
    const activity = { type: 2, name: 'Radio', state: 'Live Show', status_display_type: 1, ...timed };
    expect(playing(activity)).toMatchObject({ song: 'Live Show', artist: null });
    expect(playing({ ...activity, status_display_type: 0 })).toBeNull();
  });

  it('any Listening activity gives a valid now_playing or none, never a throw', () => {
    const text = fc.option(fc.string({ maxLength: 40 }), { nil: undefined });
    const anything = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.object(), fc.double());
    const activity = fc.record(
      {
        type: fc.constantFrom(0, 2, '2', null),
        name: fc.oneof(text, anything),
        application_id: fc.oneof(fc.constantFrom('1247654840780460125', '463151177836658699'), anything),
        details: fc.oneof(text, anything),
        state: fc.oneof(text, anything),
        details_url: fc.oneof(fc.webUrl(), text, anything),
        status_display_type: fc.oneof(fc.constantFrom(0, 1, 2), anything),
        timestamps: fc.oneof(fc.record({ start: anything, end: anything }), anything),
        assets: fc.oneof(
          fc.record({ large_image: anything, large_text: fc.oneof(text, anything) }),
          anything,
        ),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(activity, { maxLength: 4 }), (activities) => {
        const result = playing(...activities);
        if (result === null) return;
        expect(typeof result.song).toBe('string');
        for (const key of ['artist', 'album', 'album_art_url', 'track_id', 'track_url'] as const) {
          expect(result[key] === null || typeof result[key] === 'string').toBe(true);
        }
        expect(JSON.parse(JSON.stringify(result))).toEqual(result);
        for (const activityValue of activities) listeningFrom(activityValue, 'other', CDN);
      }),
      { numRuns: 500 },
    );
  });
});

describe('what players write that only looks like a prefix, a link or a track', () => {
  it('"Listening to " is dropped only where TIDAL Hi-Fi writes it; a title left empty is no track', () => {
    const song = { type: 2, name: 'Radio', details: 'Listening to You', state: 'The Who', ...timed };
    expect(playing(song)).toMatchObject({ song: 'Listening to You' });
    const tidal = { ...song, application_id: '833617820704440341', details: 'Listening to   ' };
    expect(playing(tidal)).toBeNull();
  });

  it('a link comes out as a URL parser writes it; one with credentials is none', () => {
    const link = (details_url: string) =>
      playing({ type: 2, name: 'Radio', details: 'x', details_url, ...timed });
    expect(link('\thttps://evil.example/"><img src=x onerror=alert(1)>')?.track_url).toBe(
      'https://evil.example/%22%3E%3Cimg%20src=x%20onerror=alert(1)%3E',
    );
    expect(link('https://music.apple.com@evil.example/x?i=1')?.track_url).toBeNull();
    const amazon = {
      type: 2,
      name: 'Amazon Music',
      details: 'x',
      details_url: 'https://music.amazon.co.uk.evil.example/tracks/B08HN9V9G2',
      ...timed,
    };
    expect(playing(amazon)).toMatchObject({ source: 'amazon_music', track_id: null });
  });
});
