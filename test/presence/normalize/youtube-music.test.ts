import { describe, expect, it } from 'vitest';
import { isPauseMarker, PAUSE_MARKERS } from '../../../src/presence/normalize/player-quirks.js';
import {
  DEFAULT_YOUTUBE_MUSIC_APPLICATION_IDS,
  DEFAULT_YOUTUBE_MUSIC_MATCHER,
  DEFAULT_YOUTUBE_MUSIC_NAMES,
  youtubeMusicFrom,
  youtubeMusicMatcher,
  youtubeMusicTrackUrl,
  youtubeVideoId,
} from '../../../src/presence/normalize/youtube-music.js';
import { youtubeMusicActivity } from '../../../src/simulator/activities.js';
import {
  APPLE_MUSIC_LITERAL,
  CDN,
  CUSTOM_STATUS_LITERAL,
  copy,
  jsonNumber,
  PEAR_DESKTOP_LITERAL,
  PEAR_DESKTOP_PAUSED_LITERAL,
  SPOTIFY_LITERAL,
  T0,
  VSCODE_LITERAL,
} from '../payloads.js';

const MATCHER = DEFAULT_YOUTUBE_MUSIC_MATCHER;
const ART =
  'https://media.discordapp.net/external/Ljyyq5jzYDmpORm8iMFr3-vjjlrV5E0Ec7D7fTjYQ3Y/https/lh3.googleusercontent.com/3c9qO5HvV2x9Rc_a0fUOpPY1pLwnqCSbvOZ4Qsm0AlBX4tNlCBb3ZOQHg4W7Lp0ASJe2Dm6tl7fQEtcp=w544-h544-l90-rj';
const PLAYING = {
  track_id: 'lYBUbBu4W08',
  timestamps: { start: T0, end: T0 + 213_000 },
  album: 'Whenever You Need Somebody',
  album_art_url: ART,
  artist: 'Rick Astley',
  song: 'Never Gonna Give You Up',
  url: 'https://music.youtube.com/watch?v=lYBUbBu4W08',
};
const TRACK = {
  title: 'Never Gonna Give You Up',
  artist: 'Rick Astley',
  album: 'Whenever You Need Somebody',
  videoId: 'lYBUbBu4W08',
  imageUrl:
    'https://lh3.googleusercontent.com/3c9qO5HvV2x9Rc_a0fUOpPY1pLwnqCSbvOZ4Qsm0AlBX4tNlCBb3ZOQHg4W7Lp0ASJe2Dm6tl7fQEtcp=w544-h544-l90-rj',
};

describe('youtubeMusicActivity (simulator)', () => {
  it('builds what Pear Desktop publishes, field order included', () => {
    const built = youtubeMusicActivity({ ...TRACK, start: T0, end: T0 + 213_000, createdAt: T0 + 412 });
    expect(Object.keys(built)).toEqual(Object.keys(PEAR_DESKTOP_LITERAL));
    expect(built).toEqual({
      ...PEAR_DESKTOP_LITERAL,
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      assets: {
        large_image: expect.stringMatching(
          /^mp:external\/[A-Za-z0-9_-]{43}\/https\/lh3\.googleusercontent\.com\/3c9qO5HvV2x9Rc_a0fUOpPY1pLwnqCSbvOZ4Qsm0AlBX4tNlCBb3ZOQHg4W7Lp0ASJe2Dm6tl7fQEtcp=w544-h544-l90-rj$/,
        ),
        large_text: 'Whenever You Need Somebody',
      },
    });
  });

  it('builds a paused player: "⏸︎" as large_text and no timestamps', () => {
    const built = youtubeMusicActivity({
      ...TRACK,
      start: T0,
      end: T0 + 213_000,
      paused: true,
      createdAt: T0 + 60_412,
    });
    expect(Object.keys(built)).toEqual(Object.keys(PEAR_DESKTOP_PAUSED_LITERAL));
    expect(built.assets?.large_text).toBe('\u23F8\uFE0E');
    expect(built.timestamps).toBeUndefined();
  });

  it('publishes under the application id it is given', () => {
    expect(youtubeMusicActivity({ ...TRACK, applicationId: '463151177836658699' }).application_id).toBe(
      '463151177836658699',
    );
  });
});

describe('youtubeMusicFrom', () => {
  it('reads Pear Desktop as it publishes', () => {
    const youtubeMusic = youtubeMusicFrom(
      [copy(CUSTOM_STATUS_LITERAL), copy(PEAR_DESKTOP_LITERAL), copy(VSCODE_LITERAL)],
      MATCHER,
      CDN,
    );
    expect(youtubeMusic).toEqual(PLAYING);
    expect(Object.keys(youtubeMusic ?? {})).toEqual([
      'track_id',
      'timestamps',
      'album',
      'album_art_url',
      'artist',
      'song',
      'url',
    ]);
  });

  it.each([
    ['Pear Desktop', '1177081335727267940'],
    ['PreMiD', '463151177836658699'],
    ['ytmdesktop', '834475359071633499'],
  ])('recognises %s by its application id, whatever the name', (_app, applicationId) => {
    const activity = youtubeMusicActivity({
      ...TRACK,
      start: T0,
      end: T0 + 213_000,
      applicationId,
      name: 'Music Player',
    });
    expect(youtubeMusicFrom([activity], MATCHER, CDN)).toEqual({
      ...PLAYING,
      album_art_url: expect.stringMatching(
        /^https:\/\/media\.discordapp\.net\/external\/[A-Za-z0-9_-]{43}\/https\/lh3\./,
      ),
    });
  });

  it('recognises an unknown application by name, case and white space aside', () => {
    for (const name of ['YouTube Music', 'youtube music', '  YOUTUBE MUSIC '])
      expect(
        youtubeMusicFrom(
          [{ ...copy(PEAR_DESKTOP_LITERAL), application_id: '999999999999999999', name }],
          MATCHER,
          CDN,
        ),
      ).toEqual(PLAYING);
  });

  it('recognises a Playing activity as well as a Listening one', () => {
    expect(youtubeMusicFrom([{ ...copy(PEAR_DESKTOP_LITERAL), type: 0 }], MATCHER, CDN)).toEqual(PLAYING);
  });

  it('ignores other activity types of a known player', () => {
    for (const type of [1, 3, 4, 5]) {
      expect(youtubeMusicFrom([{ ...copy(PEAR_DESKTOP_LITERAL), type }], MATCHER, CDN)).toBeNull();
    }
  });

  it('ignores other listening activities', () => {
    expect(youtubeMusicFrom([copy(APPLE_MUSIC_LITERAL), copy(SPOTIFY_LITERAL)], MATCHER, CDN)).toBeNull();
    expect(
      youtubeMusicFrom(
        [{ ...copy(PEAR_DESKTOP_LITERAL), application_id: '1', name: 'YT Music' }],
        MATCHER,
        CDN,
      ),
    ).toBeNull();
  });

  it('uses the matcher it is given', () => {
    const matcher = youtubeMusicMatcher(['1'], ['  YT Music ']);
    expect(matcher.names).toEqual(new Set(['yt music']));
    const byName = { ...copy(PEAR_DESKTOP_LITERAL), application_id: '2', name: 'YT Music' };
    const byId = { ...copy(PEAR_DESKTOP_LITERAL), application_id: '1', name: 'x' };
    expect(youtubeMusicFrom([byName], matcher, CDN)?.song).toBe('Never Gonna Give You Up');
    expect(youtubeMusicFrom([byId], matcher, CDN)?.song).toBe('Never Gonna Give You Up');
    expect(youtubeMusicFrom([copy(PEAR_DESKTOP_LITERAL)], youtubeMusicMatcher([], []), CDN)).toBeNull();
  });

  it('matches an application id sent as a number', () => {
    const numeric = {
      ...copy(PEAR_DESKTOP_LITERAL),
      name: 'x',
      application_id: jsonNumber('463151177836658699'),
    };
    expect(youtubeMusicFrom([numeric], youtubeMusicMatcher(['463151177836658700'], []), CDN)?.track_id).toBe(
      'lYBUbBu4W08',
    );
  });

  it('keeps a paused track, without album or timestamps, so pause and resume are not a new track', () => {
    expect(youtubeMusicFrom([copy(PEAR_DESKTOP_PAUSED_LITERAL)], MATCHER, CDN)).toEqual({
      ...PLAYING,
      timestamps: { start: null, end: null },
      album: null,
    });
    const built = youtubeMusicActivity({ ...TRACK, start: T0, end: T0 + 213_000, paused: true });
    expect(youtubeMusicFrom([built], MATCHER, CDN)).toMatchObject({
      track_id: 'lYBUbBu4W08',
      timestamps: { start: null, end: null },
      album: null,
      song: 'Never Gonna Give You Up',
    });
  });

  it('does not take any pause marker for an album', () => {
    for (const marker of [
      '⏸',
      '⏸\uFE0E',
      '⏸\uFE0F',
      ' ⏸︎ ',
      '\t⏸️\n',
      'Paused',
      'PAUSED',
      '⏸️ Paused',
      ' paused ⏸ ',
    ]) {
      const activity = { ...copy(PEAR_DESKTOP_LITERAL), assets: { large_image: 'x', large_text: marker } };
      expect(youtubeMusicFrom([activity], MATCHER, CDN)?.album, JSON.stringify(marker)).toBeNull();
    }
  });

  it('takes text around a marker for an album', () => {
    for (const album of ['Paused Thoughts', 'Stop ⏸ Go', '⏸⏸', '']) {
      const activity = { ...copy(PEAR_DESKTOP_LITERAL), assets: { large_text: album } };
      expect(youtubeMusicFrom([activity], MATCHER, CDN)?.album).toBe(album);
    }
  });

  it('has no track id or url without a YouTube link', () => {
    const { details_url: _d, ...noLink } = copy(PEAR_DESKTOP_LITERAL);
    expect(youtubeMusicFrom([noLink], MATCHER, CDN)).toEqual({ ...PLAYING, track_id: null, url: null });
    const elsewhere = {
      ...copy(PEAR_DESKTOP_LITERAL),
      details_url: 'https://example.com/watch?v=lYBUbBu4W08',
    };
    expect(youtubeMusicFrom([elsewhere], MATCHER, CDN)).toEqual({ ...PLAYING, track_id: null, url: null });
  });

  it('resolves an application asset image with the activity application id', () => {
    const activity = {
      ...copy(PEAR_DESKTOP_LITERAL),
      assets: { large_image: '1177083466214211664', large_text: 'A' },
    };
    expect(youtubeMusicFrom([activity], MATCHER, CDN)?.album_art_url).toBe(
      'https://cdn.discordapp.com/app-assets/1177081335727267940/1177083466214211664.png',
    );
  });

  it('never throws on garbage', () => {
    for (const input of [
      null,
      undefined,
      1,
      'YouTube Music',
      {},
      [null, 2, 'x', [], {}, { type: 2, name: 5 }],
    ]) {
      expect(youtubeMusicFrom(input, MATCHER, CDN)).toBeNull();
    }
    const garbled = {
      type: 2,
      name: 'YouTube Music',
      details: 7,
      details_url: { href: 'https://music.youtube.com/watch?v=lYBUbBu4W08' },
      state: null,
      assets: { large_text: 12, large_image: ['mp:x'] },
      timestamps: 'now',
    };
    expect(youtubeMusicFrom([garbled], MATCHER, CDN)).toEqual({
      track_id: null,
      timestamps: { start: null, end: null },
      album: null,
      album_art_url: null,
      artist: null,
      song: null,
      url: null,
    });
  });
});

describe('youtubeVideoId', () => {
  it.each([
    ['https://music.youtube.com/watch?v=lYBUbBu4W08', 'lYBUbBu4W08'],
    ['https://music.youtube.com/watch?v=lYBUbBu4W08&list=RDAMVMlYBUbBu4W08', 'lYBUbBu4W08'],
    ['https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s', 'dQw4w9WgXcQ'],
    ['https://youtube.com/watch?v=dQw4w9WgXcQ', 'dQw4w9WgXcQ'],
    ['https://m.youtube.com/watch?v=dQw4w9WgXcQ', 'dQw4w9WgXcQ'],
    ['http://MUSIC.YOUTUBE.COM/watch?v=dQw4w9WgXcQ', 'dQw4w9WgXcQ'],
    ['https://youtu.be/dQw4w9WgXcQ', 'dQw4w9WgXcQ'],
    ['https://youtu.be/dQw4w9WgXcQ?si=abc', 'dQw4w9WgXcQ'],
  ])('finds the id in %s', (link, id) => {
    expect(youtubeVideoId(link)).toBe(id);
  });

  it.each([
    'https://example.com/watch?v=dQw4w9WgXcQ',
    'https://music.youtube.com.example.com/watch?v=dQw4w9WgXcQ',
    'https://music.youtube.com/watch',
    'https://music.youtube.com/watch?v=',
    'https://music.youtube.com/watch?v=%3Cscript%3E',
    'https://music.youtube.com/browse/MPREb_4pL8gzRtw1p',
    'https://youtu.be/',
    'https://youtu.be/a/b',
    'ftp://music.youtube.com/watch?v=dQw4w9WgXcQ',
    'javascript:alert(1)//music.youtube.com/watch?v=dQw4w9WgXcQ',
    'music.youtube.com/watch?v=dQw4w9WgXcQ',
    'not a url',
    '',
  ])('finds none in %s', (link) => {
    expect(youtubeVideoId(link)).toBeNull();
  });

  it('finds none in non-strings or huge text', () => {
    for (const value of [null, undefined, 5, {}, ['https://youtu.be/dQw4w9WgXcQ']])
      expect(youtubeVideoId(value)).toBeNull();
    expect(youtubeVideoId(`https://music.youtube.com/watch?v=${'a'.repeat(100_000)}`)).toBeNull();
    expect(youtubeVideoId('h'.repeat(1_000_000))).toBeNull();
  });
});

describe('constants', () => {
  it('knows the players and the usual name', () => {
    expect(DEFAULT_YOUTUBE_MUSIC_APPLICATION_IDS).toEqual([
      '1177081335727267940',
      '463151177836658699',
      '834475359071633499',
      '1143202598460076053',
      '1247847788302172273',
    ]);
    expect(DEFAULT_YOUTUBE_MUSIC_NAMES).toEqual(['youtube music']);
    expect(MATCHER.applicationIds).toEqual(new Set(DEFAULT_YOUTUBE_MUSIC_APPLICATION_IDS));
  });

  it('lists markers that are recognised as such', () => {
    for (const marker of PAUSE_MARKERS) expect(isPauseMarker(marker)).toBe(true);
  });

  it('links a track on music.youtube.com', () => {
    expect(youtubeMusicTrackUrl('lYBUbBu4W08')).toBe('https://music.youtube.com/watch?v=lYBUbBu4W08');
    expect(youtubeMusicTrackUrl(null)).toBeNull();
    expect(youtubeMusicTrackUrl('')).toBeNull();
  });
});

describe("PreMiD's YouTube Music, as it writes it", () => {
  const PREMID = {
    ...PEAR_DESKTOP_LITERAL,
    application_id: '463151177836658699',
    buttons: undefined,
  };

  it('its own name and version where no album is: no album', () => {
    const activity = { ...PREMID, assets: { ...PREMID.assets, large_text: 'PreMiD • v2.7.4' } };
    expect(youtubeMusicFrom([activity], MATCHER, CDN)).toMatchObject({ album: null, artist: 'Rick Astley' });
  });

  it('"Artist - Album" in state, as before 2025', () => {
    const activity = {
      ...PREMID,
      state: 'Rick Astley - Whenever You Need Somebody',
      assets: { ...PREMID.assets, large_text: 'PreMiD • v2.6.1' },
    };
    expect(youtubeMusicFrom([activity], MATCHER, CDN)).toMatchObject({
      artist: 'Rick Astley',
      album: 'Whenever You Need Somebody',
    });
    // Another player's state is the artist as written, hyphens and all.
    const pear = { ...PEAR_DESKTOP_LITERAL, state: 'Rick Astley - Topic', assets: { large_text: 'Album' } };
    expect(youtubeMusicFrom([pear], MATCHER, CDN)).toMatchObject({ artist: 'Rick Astley - Topic' });
  });

  it('browsing is not listening: Playing "Browsing Home", Listening "Browsing Playlist" without timestamps', () => {
    const home = {
      type: 0,
      name: 'YouTube Music',
      application_id: PREMID.application_id,
      details: 'Browsing Home',
    };
    const playlist = {
      type: 2,
      name: 'YouTube Music',
      application_id: PREMID.application_id,
      details: 'Browsing Playlist',
      assets: { large_text: 'Liked Music' },
    };
    expect(youtubeMusicFrom([home], MATCHER, CDN)).toBeNull();
    expect(youtubeMusicFrom([playlist], MATCHER, CDN)).toBeNull();
    // Pear Desktop paused: a track still loaded, no timestamps, still YouTube Music.
    expect(youtubeMusicFrom([PEAR_DESKTOP_PAUSED_LITERAL], MATCHER, CDN)).not.toBeNull();
  });
});

describe("PreMiD's old layout is taken apart only where PreMiD's own name stands for the album", () => {
  it('keeps a hyphenated artist as written when the album is there or absent', () => {
    const premid = {
      ...PEAR_DESKTOP_LITERAL,
      application_id: '463151177836658699',
      state: 'Tyler - The Creator',
    };
    for (const assets of [{ large_text: 'IGOR' }, {}]) {
      expect(youtubeMusicFrom([{ ...premid, assets }], MATCHER, CDN)).toMatchObject({
        artist: 'Tyler - The Creator',
      });
    }
  });

  it('a paused player with a Playing activity and no timestamps is still YouTube Music', () => {
    const paused = { ...PEAR_DESKTOP_PAUSED_LITERAL, type: 0, application_id: '834475359071633499' };
    expect(youtubeMusicFrom([paused], MATCHER, CDN)).not.toBeNull();
  });
});
