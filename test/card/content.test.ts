import { ActivityType, type GatewayActivity } from 'discord-api-types/v10';
import { describe, expect, it } from 'vitest';
import { cardContent, unmonitoredContent } from '../../src/card/content.js';
import { DEFAULT_CARD_OPTIONS } from '../../src/card/options.js';
import { defaultAvatarIndex, defaultAvatarUrl } from '../../src/presence/normalize/avatar.js';
import {
  customStatusActivity,
  gameActivity,
  spotifyActivity,
  youtubeMusicActivity,
} from '../../src/simulator/activities.js';
import { CDN, presenceOf, USER_ID } from './support.js';

const content = (activities: GatewayActivity[] = [], user = {}, options = {}) =>
  cardContent(presenceOf({ activities, user }), { ...DEFAULT_CARD_OPTIONS, ...options }, CDN);

const spotify = spotifyActivity({
  song: 'Digital Love',
  artists: ['Daft Punk'],
  album: 'Discovery',
  imageId: 'ab67616d0000b273b33d46dfa2635a47eebf63b2',
  trackId: '2VEZx7NWsZ1D0eJ4uv5Fym',
  start: 1000,
  end: 2000,
});

describe('default avatar', () => {
  it('(id >> 22) % 6 for new usernames, as Discord documents it', () => {
    expect(defaultAvatarIndex('94490510688792576')).toBe(Number((94490510688792576n >> 22n) % 6n));
    expect(defaultAvatarIndex('80351110224678912', '0')).toBe(Number((80351110224678912n >> 22n) % 6n));
    for (let i = 0; i < 50; i++) {
      const id = String(BigInt(i) * 987654321987654n + 1n);
      expect(defaultAvatarIndex(id)).toBe(Number((BigInt(id) >> 22n) % 6n));
    }
  });

  it('discriminator % 5 for users with a legacy discriminator', () => {
    expect(defaultAvatarIndex('94490510688792576', '1337')).toBe(2);
    expect(defaultAvatarIndex('94490510688792576', '0004')).toBe(4);
  });

  it('is a CDN URL', () => {
    expect(defaultAvatarUrl('https://cdn.example/', '94490510688792576')).toBe(
      `https://cdn.example/embed/avatars/${defaultAvatarIndex('94490510688792576')}.png`,
    );
  });
});

describe('cardContent', () => {
  it('asks for the own avatar as a small PNG, then the default one', () => {
    const withAvatar = content([], { avatar: 'a_5b8e0c1d2f3a4b5c6d7e8f9a0b1c2d3e' });
    expect(withAvatar.avatarUrls).toEqual([
      `${CDN}/avatars/${USER_ID}/a_5b8e0c1d2f3a4b5c6d7e8f9a0b1c2d3e.png?size=128`,
      defaultAvatarUrl(CDN, USER_ID),
    ]);
    expect(content().avatarUrls).toEqual([defaultAvatarUrl(CDN, USER_ID)]);
    // A hash that is not one is not put into a URL.
    expect(content([], { avatar: '../../x' }).avatarUrls).toEqual([defaultAvatarUrl(CDN, USER_ID)]);
  });

  it('custom emoji: a GIF when animated and the card animates, else a PNG', () => {
    const emoji = { name: 'blob', id: '887330474925178910', animated: true };
    const status = customStatusActivity({ text: 'x', emoji });
    expect(content([status]).customStatus?.emoji?.url).toBe(`${CDN}/emojis/887330474925178910.gif?size=64`);
    expect(content([status], {}, { animated: false }).customStatus?.emoji?.url).toBe(
      `${CDN}/emojis/887330474925178910.png?size=64`,
    );
    expect(content([customStatusActivity({ emoji: { name: '🔥' } })]).customStatus).toEqual({
      text: null,
      emoji: { name: '🔥', url: null },
    });
  });

  it('music from now_playing, with Spotify album art', () => {
    expect(content([spotify]).main).toEqual({
      kind: 'music',
      source: 'spotify',
      song: 'Digital Love',
      artist: 'Daft Punk',
      album: 'Discovery',
      artUrl: 'https://i.scdn.co/image/ab67616d0000b273b33d46dfa2635a47eebf63b2',
      start: 1000,
      end: 2000,
    });
  });

  it('YouTube Music art through the media proxy', () => {
    const main = content([
      youtubeMusicActivity({
        title: 'Nightcall',
        artist: 'Kavinsky',
        videoId: 'MV_3Dpw-BRY',
        imageUrl: 'https://i.ytimg.com/vi/MV_3Dpw-BRY/hqdefault.jpg',
      }),
    ]).main;
    expect(main).toMatchObject({ kind: 'music', source: 'youtube_music', song: 'Nightcall' });
    expect(main?.kind === 'music' && main.artUrl?.startsWith('https://media.discordapp.net/external/')).toBe(
      true,
    );
  });

  it('picks a game before a stream, show or non-music listening, and its app asset image', () => {
    const watching = { type: ActivityType.Watching, name: 'A show', created_at: 1 } as GatewayActivity;
    const main = content([
      watching,
      gameActivity({
        name: 'Celeste',
        applicationId: '512035578624524288',
        largeImage: '512036254624989184',
        start: 5,
      }),
    ]).main;
    expect(main).toEqual({
      kind: 'activity',
      type: 0,
      name: 'Celeste',
      details: null,
      state: null,
      imageUrl: `${CDN}/app-assets/512035578624524288/512036254624989184.png`,
      start: 5,
    });
    expect(content([watching]).main).toMatchObject({ kind: 'activity', type: 3, name: 'A show' });
  });

  it('while music plays, its Listening activity is never shown as an app (hideMusic hides it)', () => {
    expect(content([spotify], {}, { hideMusic: true }).main).toEqual({
      kind: 'idle',
      message: DEFAULT_CARD_OPTIONS.idleMessage,
    });
  });

  it('ignores activities with a name of the wrong type or blank', () => {
    const odd = [
      { type: 0, name: 42, created_at: 1 },
      { type: 0, name: '   ', created_at: 1 },
      { type: 'x', name: 'y', created_at: 1 },
    ] as unknown as GatewayActivity[];
    expect(content(odd).main?.kind).toBe('idle');
  });

  it('says so for an unmonitored id', () => {
    expect(unmonitoredContent(USER_ID, CDN)).toMatchObject({
      monitored: false,
      status: 'offline',
      avatarUrls: [defaultAvatarUrl(CDN, USER_ID)],
      main: { kind: 'idle' },
    });
  });
});
