import type { GatewayActivity } from 'discord-api-types/v10';
import { afterEach, describe, expect, it } from 'vitest';
import type { NowPlaying, Presence } from '../../src/presence/model.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Music from players other than Spotify and YouTube Music, end to end: activities as Music Presence's
 * Apple Music player and an unknown radio app write them, driven through the simulated Discord and the
 * real gateway client, and history, plays, top tracks, stats and the card read back over HTTP.
 */

const GUILD = '310000000000000001';
const USER = '80351110224678950';
const SONG_MS = 200_000;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(): Promise<Harness> {
  harness = await startHarness({
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [{ user: { id: USER, username: 'listener' }, presence: { status: 'online' } }],
      }),
  });
  const h = harness;
  await eventually(() => expect(h.app.registry.get(USER)?.presence.discord_status).toBe('online'));
  return h;
}

/** Music Presence's Apple Music player: the track's id is in the link it puts in `details_url`. */
function appleMusic(name: string, start: number): GatewayActivity {
  return {
    type: 2,
    name: 'Apple Music',
    application_id: '1247654840780460125',
    details: `Song ${name}`,
    state: `Artist ${name}`,
    details_url: `https://music.apple.com/us/album/record-${name}/1000?i=${name.charCodeAt(0)}000`,
    status_display_type: 2,
    assets: {
      large_image: `mp:external/x/https/is1-ssl.mzstatic.com/${name}.jpg`,
      large_text: `Record ${name}`,
    },
    timestamps: { start, end: start + SONG_MS },
    created_at: start,
  } as unknown as GatewayActivity;
}

/** A radio app nobody knows: no track ids, the title as it happens to be written. */
function radio(title: string, start: number): GatewayActivity {
  return {
    type: 2,
    name: 'Foobar Radio',
    application_id: '1200000000000000001',
    details: title,
    state: 'Radio Artist',
    timestamps: { start, end: start + SONG_MS },
  } as unknown as GatewayActivity;
}

async function drive(h: Harness, activities: GatewayActivity[]): Promise<Presence> {
  const seen = h.changes.length;
  h.simulator.setPresence(USER, { status: 'online', activities });
  await eventually(() => expect(h.changes.slice(seen).some((change) => change.userId === USER)).toBe(true));
  return (await get<Presence>(h, `/v1/users/${USER}`)) as Presence;
}

async function get<T>(h: Harness, path: string): Promise<T> {
  const response = await fetch(`${h.base}${path}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: T }).data;
}

describe('music from every player, end to end', () => {
  it('Apple Music and an unknown player: now_playing, history, plays, top tracks, stats and the card', async () => {
    const h = await start();
    const t0 = Date.now() - 60_000;

    const first = await drive(h, [appleMusic('A', t0)]);
    expect(first.listening_to_music).toBe(true);
    expect(first.listening_to_spotify).toBe(false);
    expect(first.now_playing).toMatchObject({
      source: 'apple_music',
      song: 'Song A',
      artist: 'Artist A',
      album: 'Record A',
      track_id: '65000',
      album_art_url: 'https://media.discordapp.net/external/x/https/is1-ssl.mzstatic.com/A.jpg',
      duration_ms: SONG_MS,
    });
    expect(first.activities[0]?.assets).toMatchObject({
      large_image_url: 'https://media.discordapp.net/external/x/https/is1-ssl.mzstatic.com/A.jpg',
      small_image_url: null,
    });
    await drive(h, [appleMusic('B', t0 + SONG_MS)]);
    await drive(h, [appleMusic('A', t0 + 2 * SONG_MS)]);
    await drive(h, [radio('Live Song', t0 + 3 * SONG_MS)]);
    // The same song again after its end, its title written another way: a replay of the same track.
    const replay = await drive(h, [radio('live  SONG', t0 + 4 * SONG_MS)]);
    expect(replay.now_playing).toMatchObject({ source: 'other', track_id: null, song: 'live  SONG' });
    // A page being browsed: no music, no play.
    const browsing = await drive(h, [
      { type: 0, name: 'YouTube Music', application_id: '463151177836658699', details: 'Browsing Home' },
    ] as unknown as GatewayActivity[]);
    expect(browsing.now_playing).toBeNull();
    expect(browsing.listening_to_youtube_music).toBe(false);

    await h.app.history.flush();
    const history = await get<{ track_history: (NowPlaying & { ts: number })[] }>(
      h,
      `/v1/users/${USER}/history`,
    );
    expect(history.track_history.map((entry) => `${entry.source}:${entry.song}`)).toEqual([
      'other:live  SONG',
      'other:Live Song',
      'apple_music:Song A',
      'apple_music:Song B',
      'apple_music:Song A',
    ]);
    const { top_tracks } = await get<{ top_tracks: (NowPlaying & { play_count: number })[] }>(
      h,
      `/v1/users/${USER}/top-tracks`,
    );
    expect(top_tracks.map((track) => [track.source, track.play_count])).toEqual(
      expect.arrayContaining([
        ['apple_music', 2],
        ['other', 2],
      ]),
    );
    expect(top_tracks).toHaveLength(2);
    const stats = await get<{ tracks_today: number; track_history_count: number }>(
      h,
      `/v1/users/${USER}/stats`,
    );
    expect(stats.track_history_count).toBe(5);

    await drive(h, [appleMusic('C', t0 + 6 * SONG_MS)]);
    const card = await fetch(`${h.base}/v1/users/${USER}/card.svg`);
    expect(card.status).toBe(200);
    expect(await card.text()).toContain('Apple Music');
  });
});

describe("Discord's newer user data, end to end", () => {
  it('server tag, decoration, nameplate and display name styles come through, images resolved to URLs', async () => {
    const user = {
      id: USER,
      username: 'tagged',
      primary_guild: { identity_guild_id: GUILD, identity_enabled: null, tag: 'LSTN', badge: 'b0a1' },
      avatar_decoration_data: { asset: 'a_dec', sku_id: '1144058844004233369', expires_at: null },
      collectibles: {
        nameplate: {
          sku_id: '1349486948942745691',
          asset: 'nameplates/nameplates/twilight/',
          label: '',
          palette: 'cobalt',
        },
      },
      display_name_styles: { font_id: 11, effect_id: 2, colors: [5793266] },
    };
    harness = await startHarness({
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Guild',
          members: [{ user: user as never, presence: { status: 'online' } }],
        }),
    });
    const h = harness;
    await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(true));
    const cdn = h.simulator.cdnUrl;
    const presence = await get<Presence>(h, `/v1/users/${USER}`);
    expect(presence.discord_user).toMatchObject({
      primary_guild: { ...user.primary_guild, badge_url: `${cdn}/guild-tag-badges/${GUILD}/b0a1.png` },
      avatar_decoration_data: {
        ...user.avatar_decoration_data,
        asset_url: `${cdn}/avatar-decoration-presets/a_dec.png`,
      },
      collectibles: {
        nameplate: {
          ...user.collectibles.nameplate,
          asset_url: `${cdn}/assets/collectibles/nameplates/nameplates/twilight/static.png`,
        },
      },
      display_name_styles: user.display_name_styles,
    });
  });
});
