import { describe, expect, it } from 'vitest';
import { trackIdFrom, trackUrlFrom } from '../../../src/presence/normalize/track-links.js';

describe('trackIdFrom', () => {
  it.each([
    ['apple_music', 'https://music.apple.com/us/album/motion-sickness/1254567189?i=1254567493', '1254567493'],
    ['apple_music', 'https://music.apple.com/gb/song/motion-sickness/1254567493', '1254567493'],
    ['apple_music', 'https://music.apple.com/us/album/stranger-in-the-alps/1254567189', null],
    ['tidal', 'https://tidal.com/browse/track/134858527', '134858527'],
    ['tidal', 'https://listen.tidal.com/track/134858527?u', '134858527'],
    ['deezer', 'https://www.deezer.com/fr/track/3135556', '3135556'],
    ['deezer', 'https://deezer.com/track/3135556', '3135556'],
    ['soundcloud', 'https://soundcloud.com/Flume/never-be-like-you', 'flume/never-be-like-you'],
    ['soundcloud', 'https://soundcloud.com/flume/sets/skin', null],
    ['soundcloud', 'https://soundcloud.com/discover/sets', null],
    ['amazon_music', 'https://music.amazon.com/albums/B08HN7XG8V?trackAsin=b08hn9v9g2', 'B08HN9V9G2'],
    ['amazon_music', 'https://music.amazon.co.uk/tracks/B08HN9V9G2', 'B08HN9V9G2'],
    ['youtube_music', 'https://music.youtube.com/watch?v=lYBUbBu4W08', 'lYBUbBu4W08'],
    ['other', 'https://radio.example/track/1', null],
  ] as const)('%s %s → %s', (source, link, id) => {
    expect(trackIdFrom(source, link)).toBe(id);
  });

  it("is null for another service's link, a link that is not http(s), and no link", () => {
    expect(trackIdFrom('tidal', 'https://www.deezer.com/track/3135556')).toBeNull();
    expect(trackIdFrom('deezer', 'javascript:alert(1)//deezer.com/track/1')).toBeNull();
    expect(trackIdFrom('apple_music', 'https://music.apple.com.evil.example/x?i=1')).toBeNull();
    expect(trackIdFrom('deezer', null)).toBeNull();
    expect(trackIdFrom('tidal', 'not a url')).toBeNull();
  });
});

describe('trackUrlFrom', () => {
  it('keeps http(s) links only', () => {
    expect(trackUrlFrom('https://tidal.com/track/1')).toBe('https://tidal.com/track/1');
    for (const value of ['javascript:alert(1)', 'data:text/html,x', 'ftp://x/y', '', 5, null, {}]) {
      expect(trackUrlFrom(value)).toBeNull();
    }
  });
});
