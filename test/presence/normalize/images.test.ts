import { describe, expect, it } from 'vitest';
import { activityImageUrl } from '../../../src/presence/normalize/images.js';
import { CDN, jsonNumber, YTM_IMAGE_KEY } from '../payloads.js';

const APP = '383226320970055681';

describe('activityImageUrl', () => {
  it('maps a media-proxy key to media.discordapp.net', () => {
    expect(activityImageUrl(YTM_IMAGE_KEY, '1177081335727267940', CDN)).toBe(
      'https://media.discordapp.net/external/Ljyyq5jzYDmpORm8iMFr3-vjjlrV5E0Ec7D7fTjYQ3Y/https/lh3.googleusercontent.com/3c9qO5HvV2x9Rc_a0fUOpPY1pLwnqCSbvOZ4Qsm0AlBX4tNlCBb3ZOQHg4W7Lp0ASJe2Dm6tl7fQEtcp=w544-h544-l90-rj',
    );
    expect(activityImageUrl('mp:attachments/1/2/cover.png', null, CDN)).toBe(
      'https://media.discordapp.net/attachments/1/2/cover.png',
    );
  });

  it('keeps an http(s) key as it is', () => {
    expect(activityImageUrl('https://i.ytimg.com/vi/lYBUbBu4W08/hqdefault.jpg', APP, CDN)).toBe(
      'https://i.ytimg.com/vi/lYBUbBu4W08/hqdefault.jpg',
    );
    expect(activityImageUrl('http://example.com/a.png', null, CDN)).toBe('http://example.com/a.png');
  });

  it('maps a Spotify key to i.scdn.co', () => {
    expect(activityImageUrl('spotify:ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47', null, CDN)).toBe(
      'https://i.scdn.co/image/ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
    );
  });

  it('maps any other key to an application asset', () => {
    expect(activityImageUrl('565945077491433494', APP, CDN)).toBe(
      'https://cdn.discordapp.com/app-assets/383226320970055681/565945077491433494.png',
    );
    expect(activityImageUrl('565945077491433494', APP, 'http://127.0.0.1:9000/cdn/')).toBe(
      'http://127.0.0.1:9000/cdn/app-assets/383226320970055681/565945077491433494.png',
    );
  });

  it('escapes an application asset key rather than let it change the path', () => {
    expect(activityImageUrl('../../avatars/1/x', APP, CDN)).toBe(
      'https://cdn.discordapp.com/app-assets/383226320970055681/..%2F..%2Favatars%2F1%2Fx.png',
    );
  });

  it('is null for an application asset without a valid application id', () => {
    expect(activityImageUrl('565945077491433494', null, CDN)).toBeNull();
    expect(activityImageUrl('565945077491433494', undefined, CDN)).toBeNull();
    expect(activityImageUrl('565945077491433494', '', CDN)).toBeNull();
    expect(activityImageUrl('565945077491433494', 'abc', CDN)).toBeNull();
    expect(activityImageUrl('565945077491433494', jsonNumber('383226320970055681'), CDN)).toBeNull();
  });

  it("maps YouTube and Twitch keys to the stream's preview", () => {
    expect(activityImageUrl('youtube:dQw4w9WgXcQ', APP, CDN)).toBe(
      'https://i.ytimg.com/vi/dQw4w9WgXcQ/hqdefault_live.jpg',
    );
    expect(activityImageUrl('twitch:Some_Streamer', APP, CDN)).toBe(
      'https://static-cdn.jtvnw.net/previews-ttv/live_user_some_streamer.png',
    );
    expect(activityImageUrl('youtube:a/../b', APP, CDN)).toBe(
      'https://i.ytimg.com/vi/a%2F..%2Fb/hqdefault_live.jpg',
    );
  });

  it('is null for a platform key it has no rule for', () => {
    expect(activityImageUrl('xbox:some_player', APP, CDN)).toBeNull();
  });

  it('is null for no key, an empty key, a bare prefix or a non-string', () => {
    for (const key of [null, undefined, '', 'mp:', 'spotify:', 'youtube:', 'twitch:', 42, {}, [], true]) {
      expect(activityImageUrl(key, APP, CDN)).toBeNull();
    }
  });

  it('copes with a huge key', () => {
    const key = `mp:${'a'.repeat(1_000_000)}`;
    expect(activityImageUrl(key, APP, CDN)).toHaveLength('https://media.discordapp.net/'.length + 1_000_000);
  });
});
