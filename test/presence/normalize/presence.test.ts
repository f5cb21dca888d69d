import { describe, expect, it } from 'vitest';
import type { DiscordUser, RawPresence } from '../../../src/presence/model.js';
import { buildPresence, type NormalizeOptions } from '../../../src/presence/normalize/presence.js';
import { OFFLINE_PRESENCE, rawPresenceFrom } from '../../../src/presence/normalize/raw.js';
import { mergeUser } from '../../../src/presence/normalize/user.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../../src/presence/normalize/youtube-music.js';
import { spotifyActivity, youtubeMusicActivity } from '../../../src/simulator/activities.js';
import { garbage, random } from '../garbage.js';
import {
  CDN,
  copy,
  jsonNumber,
  PEAR_DESKTOP_LITERAL,
  PEAR_DESKTOP_PAUSED_LITERAL,
  SPOTIFY_LITERAL,
  T0,
  USER_ID,
  VSCODE_LITERAL,
} from '../payloads.js';

const OPTIONS: NormalizeOptions = { cdnUrl: CDN, youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER };
const FRESH = { observed_at: T0, stale: false };

const KNOWN_USER: DiscordUser = {
  id: USER_ID,
  username: 'phin',
  global_name: 'Phineas',
  avatar: 'a_7484f82375f47a487f41650f36d30318',
  discriminator: '0',
  public_flags: 768,
  avatar_decoration_data: null,
  primary_guild: null,
};

const CUSTOM_EMOJI_STATUS = {
  type: 4,
  state: 'shipping presence',
  name: 'Custom Status',
  id: 'custom',
  emoji: { id: '753291932364882012', name: 'blobdance', animated: true },
  created_at: 1615529838051,
};

/** A PRESENCE_UPDATE `d` as the gateway sends it: only the user's id, one guild's copy. */
const PRESENCE_UPDATE = {
  user: { id: USER_ID },
  status: 'dnd',
  guild_id: '81384788765712384',
  client_status: { desktop: 'dnd', mobile: 'dnd' },
  activities: [CUSTOM_EMOJI_STATUS, SPOTIFY_LITERAL, VSCODE_LITERAL],
};

const SPOTIFY_NORMALIZED = {
  track_id: '3kdlVcMVsSkbsUy8eQcBjI',
  timestamps: { start: 1615529820677, end: 1615530068733 },
  album: 'Let Go (Deluxe)',
  album_art_url: 'https://i.scdn.co/image/ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
  artist: 'Lua Fernandes; Jovem Dionisio',
  song: 'Let Go',
};

describe('buildPresence', () => {
  it('builds the whole presence object from a PRESENCE_UPDATE, in the field order of the contract', () => {
    const payload = copy(PRESENCE_UPDATE);
    const presence = buildPresence(
      {
        user: mergeUser(KNOWN_USER, payload.user),
        raw: rawPresenceFrom(payload),
        profile: { banner: 'a_5c1b1e0cbc4f0b9b2bf83d3e2fcdeb36', accent_color: 3447003 },
        freshness: { observed_at: 1615529838051, stale: true },
        kv: { location: 'Berlin', now: 'writing tests' },
      },
      OPTIONS,
    );
    const expected = {
      discord_user: {
        id: '94490510688792576',
        username: 'phin',
        global_name: 'Phineas',
        avatar: 'a_7484f82375f47a487f41650f36d30318',
        discriminator: '0',
        public_flags: 768,
        avatar_decoration_data: null,
        primary_guild: null,
      },
      discord_status: 'dnd',
      active_on_discord_desktop: true,
      active_on_discord_web: false,
      active_on_discord_mobile: true,
      active_on_discord_embedded: false,
      active_on_discord_vr: false,
      custom_status: {
        text: 'shipping presence',
        emoji: { name: 'blobdance', id: '753291932364882012', animated: true },
      },
      listening_to_spotify: true,
      spotify: SPOTIFY_NORMALIZED,
      listening_to_youtube_music: false,
      youtube_music: null,
      listening_to_music: true,
      now_playing: {
        source: 'spotify',
        song: 'Let Go',
        artist: 'Lua Fernandes; Jovem Dionisio',
        album: 'Let Go (Deluxe)',
        album_art_url: 'https://i.scdn.co/image/ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
        track_id: '3kdlVcMVsSkbsUy8eQcBjI',
        track_url: 'https://open.spotify.com/track/3kdlVcMVsSkbsUy8eQcBjI',
        timestamps: { start: 1615529820677, end: 1615530068733 },
        duration_ms: 248056,
      },
      activities: [
        CUSTOM_EMOJI_STATUS,
        {
          ...SPOTIFY_LITERAL,
          assets: {
            ...SPOTIFY_LITERAL.assets,
            large_image_url: 'https://i.scdn.co/image/ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
            small_image_url: null,
          },
        },
        {
          ...VSCODE_LITERAL,
          assets: {
            ...VSCODE_LITERAL.assets,
            large_image_url:
              'https://cdn.discordapp.com/app-assets/383226320970055681/565945077491433494.png',
            small_image_url:
              'https://cdn.discordapp.com/app-assets/383226320970055681/565945770067623946.png',
          },
        },
      ],
      banner: 'a_5c1b1e0cbc4f0b9b2bf83d3e2fcdeb36',
      banner_url:
        'https://cdn.discordapp.com/banners/94490510688792576/a_5c1b1e0cbc4f0b9b2bf83d3e2fcdeb36.gif?size=1024',
      accent_color: 3447003,
      member_since: 1442598693297,
      observed_at: 1615529838051,
      stale: true,
      kv: { location: 'Berlin', now: 'writing tests' },
    };
    expect(JSON.stringify(presence)).toBe(JSON.stringify(expected));
    expect(presence).toEqual(expected);
  });

  it('reports both players but lets Spotify be now_playing', () => {
    const raw = rawPresenceFrom({
      status: 'online',
      client_status: { desktop: 'online' },
      activities: [copy(PEAR_DESKTOP_LITERAL), copy(SPOTIFY_LITERAL)],
    });
    const presence = buildPresence(
      { user: { id: USER_ID }, raw, profile: null, freshness: FRESH, kv: {} },
      OPTIONS,
    );
    expect(presence.listening_to_spotify).toBe(true);
    expect(presence.listening_to_youtube_music).toBe(true);
    expect(presence.spotify).toEqual(SPOTIFY_NORMALIZED);
    expect(presence.youtube_music?.track_id).toBe('lYBUbBu4W08');
    expect(presence.now_playing?.source).toBe('spotify');
    expect(presence.now_playing?.track_id).toBe('3kdlVcMVsSkbsUy8eQcBjI');
  });

  it('makes a paused YouTube Music player now_playing, without album or duration', () => {
    const raw = rawPresenceFrom({
      status: 'idle',
      client_status: { web: 'idle' },
      activities: [copy(PEAR_DESKTOP_PAUSED_LITERAL)],
    });
    const presence = buildPresence(
      { user: { id: USER_ID }, raw, profile: null, freshness: FRESH, kv: {} },
      OPTIONS,
    );
    expect(presence).toMatchObject({
      discord_status: 'idle',
      active_on_discord_web: true,
      listening_to_spotify: false,
      spotify: null,
      listening_to_youtube_music: true,
      youtube_music: { track_id: 'lYBUbBu4W08', album: null, timestamps: { start: null, end: null } },
      now_playing: {
        source: 'youtube_music',
        song: 'Never Gonna Give You Up',
        artist: 'Rick Astley',
        album: null,
        track_id: 'lYBUbBu4W08',
        track_url: 'https://music.youtube.com/watch?v=lYBUbBu4W08',
        timestamps: { start: null, end: null },
        duration_ms: null,
      },
    });
  });

  it('keeps the same track across a pause and resume', () => {
    const track = {
      title: 'Never Gonna Give You Up',
      artist: 'Rick Astley',
      album: 'Whenever You Need Somebody',
      videoId: 'lYBUbBu4W08',
      imageUrl: 'https://lh3.googleusercontent.com/abc=w544-h544-l90-rj',
    };
    const states = [
      youtubeMusicActivity({ ...track, start: T0, end: T0 + 213_000, createdAt: T0 }),
      youtubeMusicActivity({ ...track, paused: true, createdAt: T0 + 60_000 }),
      youtubeMusicActivity({ ...track, start: T0 + 30_000, end: T0 + 243_000, createdAt: T0 + 90_000 }),
    ].map((activity) => {
      const raw: RawPresence = {
        status: 'online',
        activities: [activity],
        client_status: { desktop: 'online' },
      };
      return buildPresence({ user: { id: USER_ID }, raw, profile: null, freshness: FRESH, kv: {} }, OPTIONS)
        .now_playing;
    });
    expect(states.map((s) => [s?.source, s?.track_id])).toEqual([
      ['youtube_music', 'lYBUbBu4W08'],
      ['youtube_music', 'lYBUbBu4W08'],
      ['youtube_music', 'lYBUbBu4W08'],
    ]);
    expect(states.map((s) => s?.album)).toEqual([
      'Whenever You Need Somebody',
      null,
      'Whenever You Need Somebody',
    ]);
  });

  it('builds an offline user we know nothing else about', () => {
    const presence = buildPresence(
      { user: { id: USER_ID }, raw: OFFLINE_PRESENCE, profile: null, freshness: FRESH, kv: {} },
      OPTIONS,
    );
    expect(JSON.stringify(presence)).toBe(
      JSON.stringify({
        discord_user: { id: USER_ID },
        discord_status: 'offline',
        active_on_discord_desktop: false,
        active_on_discord_web: false,
        active_on_discord_mobile: false,
        active_on_discord_embedded: false,
        active_on_discord_vr: false,
        custom_status: null,
        listening_to_spotify: false,
        spotify: null,
        listening_to_youtube_music: false,
        youtube_music: null,
        listening_to_music: false,
        now_playing: null,
        activities: [],
        banner: null,
        banner_url: null,
        accent_color: null,
        member_since: 1442598693297,
        observed_at: T0,
        stale: false,
        kv: {},
      }),
    );
  });

  it('gives snowflakes as strings without changing the raw presence it was given', () => {
    const vscode = { ...copy(VSCODE_LITERAL), application_id: jsonNumber('383226320970055681') };
    const raw = rawPresenceFrom({ status: 'online', activities: [vscode] });
    const presence = buildPresence(
      { user: { id: USER_ID }, raw, profile: null, freshness: FRESH, kv: {} },
      OPTIONS,
    );
    expect(presence.activities[0]?.application_id).toBe('383226320970055700');
    expect(vscode.application_id).toBe(jsonNumber('383226320970055681'));
  });

  it('builds the same JSON for the same input', () => {
    const input = () => ({
      user: { id: USER_ID, username: 'phin' },
      raw: rawPresenceFrom(copy(PRESENCE_UPDATE)),
      profile: null,
      freshness: FRESH,
      kv: {},
    });
    expect(JSON.stringify(buildPresence(input(), OPTIONS))).toBe(
      JSON.stringify(buildPresence(input(), OPTIONS)),
    );
  });

  it('uses a Spotify activity built by the simulator like the real one', () => {
    const activity = spotifyActivity({
      song: 'Let Go',
      artists: ['Lua Fernandes', 'Jovem Dionisio'],
      album: 'Let Go (Deluxe)',
      imageId: 'ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47',
      trackId: '3kdlVcMVsSkbsUy8eQcBjI',
      start: 1615529820677,
      end: 1615530068733,
    });
    const raw: RawPresence = { status: 'online', activities: [activity], client_status: {} };
    expect(
      buildPresence({ user: { id: USER_ID }, raw, profile: null, freshness: FRESH, kv: {} }, OPTIONS).spotify,
    ).toEqual(SPOTIFY_NORMALIZED);
  });

  it('never throws on garbage, and always builds an object equal to its own JSON', () => {
    const next = random(0xc0ffee);
    for (let i = 0; i < 2000; i += 1) {
      const raw = {
        status: garbage(next),
        activities: Array.from({ length: 3 }, () => garbage(next)),
        client_status: garbage(next),
      } as unknown as RawPresence;
      const profile = garbage(next) as never;
      for (const input of [raw, rawPresenceFrom(raw)]) {
        const presence = buildPresence(
          { user: { id: USER_ID }, raw: input, profile, freshness: FRESH, kv: {} },
          OPTIONS,
        );
        expect(typeof presence.member_since).toBe('number');
        expect(JSON.parse(JSON.stringify(presence))).toStrictEqual(presence);
      }
    }
  });
});
