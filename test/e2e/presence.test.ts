import type { GatewayActivity } from 'discord-api-types/v10';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { activityImageUrl } from '../../src/presence/normalize/images.js';
import type { PresenceChange } from '../../src/presence/registry/registry.js';
import {
  customStatusActivity,
  gameActivity,
  spotifyActivity,
  youtubeMusicActivity,
} from '../../src/simulator/activities.js';
import type { MemberInput, PresenceInput } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Presence from the Discord gateway, served over REST: members and presences driven through the simulated
 * Discord, received by the real gateway client, read back with real HTTP requests. Every expected value is
 * written out from the contract (docs/api.md) and Discord's documented payloads, not taken from the service's own builders.
 */

// ---- ids ----------------------------------------------------------------------------------------------

const DISCORD_EPOCH = 1_420_070_400_000;
/** A user id created at `ms` (epoch ms); `n` tells ids of the same millisecond apart. */
const idAt = (ms: number, n = 0): string => ((BigInt(ms - DISCORD_EPOCH) << 22n) | BigInt(n)).toString();

/** Discord's own documented example: this snowflake was made at 2016-04-30T11:18:25.796Z. */
const SPOTIFY_USER = '175928847299117063';
const SPOTIFY_USER_SINCE = Date.UTC(2016, 3, 30, 11, 18, 25, 796);

const T_2017 = Date.UTC(2017, 0, 2, 3, 4, 5, 6);
const T_2020 = Date.UTC(2020, 5, 15, 12, 0, 0, 0);
const T_2023 = Date.UTC(2023, 10, 30, 23, 59, 59, 999);
const YTM_BY_ID = idAt(T_2017, 1);
const YTM_BY_NAME = idAt(T_2017, 2);
const OTHER_PLAYER = idAt(T_2017, 3);
const CUSTOM_UNICODE = idAt(T_2020, 1);
const CUSTOM_EMOJI = idAt(T_2020, 2);
const CLIENTS = idAt(T_2020, 3);
const CLIENTS_RARE = idAt(T_2020, 4);
const BOTH_PLAYING = idAt(T_2023, 1);
const OFFLINE = idAt(T_2023, 2);
const NUMERIC_IDS = idAt(T_2023, 3);

const GUILD = '500000000000000001';
const GUILD_B = '500000000000000002';

const PEAR_DESKTOP = '1177081335727267940';
const YTMDESKTOP = '834475359071633499';
/** An application no YouTube Music player uses. */
const UNKNOWN_APP = '1000000000000000001';

const ANIMATED_BANNER = 'a_0123456789abcdef0123456789abcdef';
const STILL_BANNER = 'fedcba9876543210fedcba9876543210';
const SPOTIFY_AVATAR = '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b';

// ---- expected values, from the contract -----------------------------------------------------------------

type Json = Record<string, unknown>;

/** A member's user as the gateway sends it when the test described only some fields. */
function gatewayUser(user: {
  id: string;
  username: string;
  global_name?: string | null;
  avatar?: string | null;
}) {
  return {
    discriminator: '0',
    global_name: null,
    avatar: null,
    public_flags: 0,
    flags: 0,
    avatar_decoration_data: null,
    ...user,
  };
}

/** The presence of someone offline with nothing known beyond the user: every other field per the contract. */
function basePresence(user: ReturnType<typeof gatewayUser>, memberSince: number): Json {
  return {
    discord_user: user,
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
    member_since: memberSince,
    observed_at: expect.any(Number),
    stale: false,
    kv: {},
  };
}

// ---- the music ------------------------------------------------------------------------------------------

const NOW = Date.now();
const SONG = {
  song: 'Midnight City',
  artists: ['M83', 'Anthony Gonzalez'],
  album: "Hurry Up, We're Dreaming",
  imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
  trackId: '1eyzqe2QqGZUmfcPZtrIyt',
  start: NOW - 60_000,
  end: NOW + 183_000,
};
const spotifyPlaying = spotifyActivity({ ...SONG, userId: SPOTIFY_USER });
const SPOTIFY = {
  track_id: '1eyzqe2QqGZUmfcPZtrIyt',
  timestamps: { start: SONG.start, end: SONG.end },
  album: "Hurry Up, We're Dreaming",
  album_art_url: 'https://i.scdn.co/image/ab67616d0000b273fff2cb485c36a6d8f639bdba',
  artist: 'M83; Anthony Gonzalez',
  song: 'Midnight City',
};
const SPOTIFY_NOW_PLAYING = {
  source: 'spotify',
  song: 'Midnight City',
  artist: 'M83; Anthony Gonzalez',
  album: "Hurry Up, We're Dreaming",
  album_art_url: 'https://i.scdn.co/image/ab67616d0000b273fff2cb485c36a6d8f639bdba',
  track_id: '1eyzqe2QqGZUmfcPZtrIyt',
  track_url: 'https://open.spotify.com/track/1eyzqe2QqGZUmfcPZtrIyt',
  timestamps: { start: SONG.start, end: SONG.end },
  duration_ms: 243_000,
};

const VIDEO = {
  title: 'Nightcall',
  artist: 'Kavinsky',
  album: 'OutRun',
  videoId: 'MV_3Dpw-BRY',
  imageUrl: 'https://lh3.googleusercontent.com/abc123=w544-h544-l90-rj',
  start: NOW - 30_000,
  end: NOW + 228_000,
  createdAt: NOW - 30_000,
};
const ytmByIdPlaying = youtubeMusicActivity({ ...VIDEO, applicationId: YTMDESKTOP, name: 'YTMDesktop' });
const ytmByNamePlaying = youtubeMusicActivity({
  ...VIDEO,
  applicationId: UNKNOWN_APP,
  name: 'YouTube Music',
});
const ytmPear = youtubeMusicActivity({ ...VIDEO, applicationId: PEAR_DESKTOP });

/** The activity as the service gives it: its images' URLs beside their keys (images.ts has the rules). */
function shown(activity: GatewayActivity, cdnUrl: string): GatewayActivity {
  if (!activity.assets) return activity;
  const url = (key: unknown) => activityImageUrl(key, activity.application_id, cdnUrl);
  return {
    ...activity,
    assets: {
      ...activity.assets,
      large_image_url: url(activity.assets.large_image),
      small_image_url: url(activity.assets.small_image),
    },
  } as GatewayActivity;
}

/** An `mp:` image key is served by Discord's media proxy
 * ([activity asset images](https://discord.com/developers/docs/events/gateway-events#activity-object-activity-asset-image)). */
function mediaProxyUrl(activity: GatewayActivity): string {
  const key = activity.assets?.large_image ?? '';
  expect(key).toMatch(/^mp:external\//);
  return `https://media.discordapp.net/${key.slice('mp:'.length)}`;
}

function youtubeMusicOf(activity: GatewayActivity): Json {
  return {
    track_id: 'MV_3Dpw-BRY',
    timestamps: { start: VIDEO.start, end: VIDEO.end },
    album: 'OutRun',
    album_art_url: mediaProxyUrl(activity),
    artist: 'Kavinsky',
    song: 'Nightcall',
    url: 'https://music.youtube.com/watch?v=MV_3Dpw-BRY',
  };
}

function youtubeNowPlayingOf(activity: GatewayActivity): Json {
  return {
    source: 'youtube_music',
    song: 'Nightcall',
    artist: 'Kavinsky',
    album: 'OutRun',
    album_art_url: mediaProxyUrl(activity),
    track_id: 'MV_3Dpw-BRY',
    track_url: 'https://music.youtube.com/watch?v=MV_3Dpw-BRY',
    timestamps: { start: VIDEO.start, end: VIDEO.end },
    duration_ms: 258_000,
  };
}

/** A Listening activity of a player that is neither Spotify nor YouTube Music. */
const otherPlayer: GatewayActivity = {
  type: 2,
  name: 'Deezer',
  id: '5c0f8a1b2d3e4f60',
  details: 'Some song',
  state: 'Some artist',
  timestamps: { start: NOW - 1_000, end: NOW + 100_000 },
  application_id: UNKNOWN_APP,
  created_at: NOW - 1_000,
};

const CHESS = '383226320970055681';
const chess = gameActivity({
  name: 'Chess',
  applicationId: CHESS,
  details: 'Rated blitz',
  start: NOW - 5_000,
});

// ---- HTTP -----------------------------------------------------------------------------------------------

async function getJson(h: Harness, path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${h.base}${path}`);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return { status: response.status, body: await response.json() };
}

/** Waits until GET /v1/users/:id answers exactly `{success: true, data: expected}`. */
async function expectPresence(h: Harness, id: string, expected: Json): Promise<void> {
  await eventually(async () => {
    expect(await getJson(h, `/v1/users/${id}`)).toEqual({
      status: 200,
      body: { success: true, data: expected },
    });
  });
}

async function expectNotMonitored(h: Harness, id: string): Promise<void> {
  expect(await getJson(h, `/v1/users/${id}`)).toEqual({
    status: 404,
    body: { success: false, error: { code: 'user_not_monitored', message: expect.any(String) } },
  });
}

const member = (id: string, username: string, presence?: PresenceInput): MemberInput => ({
  user: { id, username },
  ...(presence ? { presence } : {}),
});

// ---- 1. every field of the presence object ---------------------------------------------------------------

describe('GET /v1/users/:id: the presence of a member, field by field', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      setup: (sim) => {
        sim.createGuild({
          id: GUILD,
          name: 'Presence',
          members: [
            {
              user: { id: SPOTIFY_USER, username: 'spotty', global_name: 'Spotty', avatar: SPOTIFY_AVATAR },
              presence: {
                status: 'online',
                activities: [spotifyPlaying],
                client_status: { desktop: 'online' },
              },
            },
            member(YTM_BY_ID, 'ytm_id', { status: 'online', activities: [ytmByIdPlaying] }),
            member(YTM_BY_NAME, 'ytm_name', { status: 'online', activities: [ytmByNamePlaying] }),
            member(OTHER_PLAYER, 'deezer', { status: 'online', activities: [otherPlayer] }),
            member(CUSTOM_UNICODE, 'unicode', {
              status: 'idle',
              activities: [
                customStatusActivity({ text: 'on repeat', emoji: { name: '🎧' }, createdAt: NOW }),
              ],
              client_status: { mobile: 'idle' },
            }),
            member(CUSTOM_EMOJI, 'custom', {
              status: 'dnd',
              activities: [
                customStatusActivity({
                  emoji: { name: 'blobreading', id: '887330474925178910', animated: true },
                  createdAt: NOW,
                }),
              ],
              client_status: { web: 'dnd' },
            }),
            member(CLIENTS, 'everywhere', {
              status: 'online',
              activities: [chess],
              client_status: { desktop: 'online', mobile: 'idle', web: 'dnd' },
            }),
            member(CLIENTS_RARE, 'headset', {
              status: 'online',
              client_status: { embedded: 'online', vr: 'online' } as PresenceInput['client_status'],
            }),
            member(BOTH_PLAYING, 'both', { status: 'online', activities: [ytmPear, spotifyPlaying] }),
            member(OFFLINE, 'away'),
            member(NUMERIC_IDS, 'numbers', {
              status: 'online',
              activities: [
                // Snowflakes that arrive as JSON numbers (small enough to be exact) must leave as strings.
                { ...chess, application_id: 4_194_304 as unknown as string },
                {
                  ...customStatusActivity({ text: 'n', createdAt: NOW }),
                  emoji: { name: 'num', id: 8_388_608 as unknown as string, animated: false },
                },
              ],
            }),
          ],
        });
        sim.setProfile(SPOTIFY_USER, { banner: ANIMATED_BANNER, accent_color: 0x5865f2 });
        sim.setProfile(YTM_BY_ID, { banner: STILL_BANNER, accent_color: null });
        // Black is a colour, not "unset".
        sim.setProfile(CUSTOM_UNICODE, { banner: null, accent_color: 0 });
      },
    });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('Spotify: listening, now_playing, banner (animated: gif), accent colour, member_since', async () => {
    await expectPresence(h, SPOTIFY_USER, {
      ...basePresence(
        gatewayUser({ id: SPOTIFY_USER, username: 'spotty', global_name: 'Spotty', avatar: SPOTIFY_AVATAR }),
        SPOTIFY_USER_SINCE,
      ),
      discord_status: 'online',
      active_on_discord_desktop: true,
      listening_to_spotify: true,
      spotify: SPOTIFY,
      listening_to_music: true,
      now_playing: SPOTIFY_NOW_PLAYING,
      activities: [shown(spotifyPlaying, h.simulator.cdnUrl)],
      banner: ANIMATED_BANNER,
      banner_url: `${h.simulator.cdnUrl}/banners/${SPOTIFY_USER}/${ANIMATED_BANNER}.gif?size=1024`,
      accent_color: 0x5865f2,
    });
  });

  it('banner and accent colour are null until the profile is known', () => {
    const first = h.changes.find(
      (change): change is Extract<PresenceChange, { kind: 'monitored' }> =>
        change.kind === 'monitored' && change.userId === SPOTIFY_USER,
    );
    expect(first?.current.presence).toMatchObject({ banner: null, banner_url: null, accent_color: null });
    expect(h.changes.filter((change) => change.userId === SPOTIFY_USER).map((change) => change.kind)).toEqual(
      ['monitored', 'updated'],
    );
  });

  it('YouTube Music by application id (any name), with a still banner (png)', async () => {
    await expectPresence(h, YTM_BY_ID, {
      ...basePresence(gatewayUser({ id: YTM_BY_ID, username: 'ytm_id' }), T_2017),
      discord_status: 'online',
      active_on_discord_desktop: true,
      listening_to_youtube_music: true,
      youtube_music: youtubeMusicOf(ytmByIdPlaying),
      listening_to_music: true,
      now_playing: youtubeNowPlayingOf(ytmByIdPlaying),
      activities: [shown(ytmByIdPlaying, h.simulator.cdnUrl)],
      banner: STILL_BANNER,
      banner_url: `${h.simulator.cdnUrl}/banners/${YTM_BY_ID}/${STILL_BANNER}.png?size=1024`,
    });
  });

  it('YouTube Music by name from an application it does not know', async () => {
    await expectPresence(h, YTM_BY_NAME, {
      ...basePresence(gatewayUser({ id: YTM_BY_NAME, username: 'ytm_name' }), T_2017),
      discord_status: 'online',
      active_on_discord_desktop: true,
      listening_to_youtube_music: true,
      youtube_music: youtubeMusicOf(ytmByNamePlaying),
      listening_to_music: true,
      now_playing: youtubeNowPlayingOf(ytmByNamePlaying),
      activities: [shown(ytmByNamePlaying, h.simulator.cdnUrl)],
    });
  });

  it('another music player (Deezer, known by its name) is now_playing, neither Spotify nor YouTube Music', async () => {
    await expectPresence(h, OTHER_PLAYER, {
      ...basePresence(gatewayUser({ id: OTHER_PLAYER, username: 'deezer' }), T_2017),
      discord_status: 'online',
      active_on_discord_desktop: true,
      listening_to_music: true,
      now_playing: {
        source: 'deezer',
        song: 'Some song',
        artist: 'Some artist',
        album: null,
        album_art_url: null,
        track_id: null,
        track_url: null,
        timestamps: otherPlayer.timestamps,
        duration_ms: 101_000,
      },
      activities: [otherPlayer],
    });
  });

  it('custom status with a unicode emoji (id null, not animated), and an accent colour of 0', async () => {
    await expectPresence(h, CUSTOM_UNICODE, {
      ...basePresence(gatewayUser({ id: CUSTOM_UNICODE, username: 'unicode' }), T_2020),
      discord_status: 'idle',
      active_on_discord_mobile: true,
      custom_status: { text: 'on repeat', emoji: { name: '🎧', id: null, animated: false } },
      activities: [
        {
          type: 4,
          state: 'on repeat',
          name: 'Custom Status',
          id: 'custom',
          emoji: { name: '🎧' },
          created_at: NOW,
        },
      ],
      accent_color: 0,
    });
  });

  it('custom status with a custom animated emoji and no text', async () => {
    await expectPresence(h, CUSTOM_EMOJI, {
      ...basePresence(gatewayUser({ id: CUSTOM_EMOJI, username: 'custom' }), T_2020),
      discord_status: 'dnd',
      active_on_discord_web: true,
      custom_status: { text: null, emoji: { name: 'blobreading', id: '887330474925178910', animated: true } },
      activities: [
        {
          type: 4,
          name: 'Custom Status',
          id: 'custom',
          emoji: { name: 'blobreading', id: '887330474925178910', animated: true },
          created_at: NOW,
        },
      ],
    });
  });

  it('desktop + mobile + web: one flag per client, whatever status each has', async () => {
    await expectPresence(h, CLIENTS, {
      ...basePresence(gatewayUser({ id: CLIENTS, username: 'everywhere' }), T_2020),
      discord_status: 'online',
      active_on_discord_desktop: true,
      active_on_discord_web: true,
      active_on_discord_mobile: true,
      activities: [shown(chess, h.simulator.cdnUrl)],
    });
    const { body } = await getJson(h, `/v1/users/${CLIENTS}`);
    const [game] = (body as { data: { activities: Json[] } }).data.activities;
    expect(game?.application_id).toBe(CHESS);
  });

  it('embedded and vr clients', async () => {
    await expectPresence(h, CLIENTS_RARE, {
      ...basePresence(gatewayUser({ id: CLIENTS_RARE, username: 'headset' }), T_2020),
      discord_status: 'online',
      active_on_discord_embedded: true,
      active_on_discord_vr: true,
    });
  });

  it('Spotify wins now_playing when both play; both objects are there', async () => {
    await expectPresence(h, BOTH_PLAYING, {
      ...basePresence(gatewayUser({ id: BOTH_PLAYING, username: 'both' }), T_2023),
      discord_status: 'online',
      active_on_discord_desktop: true,
      listening_to_spotify: true,
      spotify: SPOTIFY,
      listening_to_youtube_music: true,
      youtube_music: youtubeMusicOf(ytmPear),
      listening_to_music: true,
      now_playing: SPOTIFY_NOW_PLAYING,
      activities: [shown(ytmPear, h.simulator.cdnUrl), shown(spotifyPlaying, h.simulator.cdnUrl)],
    });
  });

  it('an offline member is monitored: present, offline, no activities', async () => {
    await expectPresence(h, OFFLINE, basePresence(gatewayUser({ id: OFFLINE, username: 'away' }), T_2023));
  });

  it('snowflakes sent as numbers come out as strings', async () => {
    await eventually(async () => {
      const { status, body } = await getJson(h, `/v1/users/${NUMERIC_IDS}`);
      expect(status).toBe(200);
      const data = (body as { data: Json }).data;
      expect(data.custom_status).toEqual({
        text: 'n',
        emoji: { name: 'num', id: '8388608', animated: false },
      });
      expect(data.activities).toEqual([
        { ...chess, application_id: '4194304' },
        {
          type: 4,
          state: 'n',
          name: 'Custom Status',
          id: 'custom',
          emoji: { name: 'num', id: '8388608', animated: false },
          created_at: NOW,
        },
      ]);
    });
  });
});

// ---- 2. one presence across guilds ----------------------------------------------------------------------

describe('a user in two guilds', () => {
  const USER = idAt(T_2020, 10);
  /** Only in GUILD_B, created last: its updates arrive after every guild copy sent before them. */
  const SENTINEL = idAt(T_2020, 11);
  let harness: Harness | undefined;

  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  async function start(): Promise<Harness> {
    harness = await startHarness({
      setup: (sim) => {
        sim.createGuild({ id: GUILD, name: 'A', members: [member(USER, 'user', { status: 'online' })] });
        sim.createGuild({
          id: GUILD_B,
          name: 'B',
          members: [
            member(USER, 'user', { status: 'online' }),
            member(SENTINEL, 'sentinel', { status: 'online' }),
          ],
        });
      },
    });
    const h = harness;
    await eventually(() => {
      expect(h.app.registry.get(USER)?.presence.discord_status).toBe('online');
      expect(h.app.registry.get(SENTINEL)).toBeDefined();
    });
    return h;
  }

  let beat = 0;
  /**
   * Everything the simulator sent before this has been handled once this returns: the sentinel's own
   * update comes after it on the same connection.
   */
  async function settle(h: Harness): Promise<void> {
    beat++;
    const activities = [customStatusActivity({ text: `beat ${beat}`, createdAt: NOW })];
    h.simulator.setPresence(SENTINEL, { status: 'online', activities });
    await eventually(() =>
      expect(h.app.registry.get(SENTINEL)?.presence.custom_status?.text).toBe(`beat ${beat}`),
    );
  }

  const changesOf = (h: Harness, from: number, userId = USER) =>
    h.changes.slice(from).filter((change) => change.userId === userId);

  it('is one presence, and each real change is exactly one change event (guild copies add none)', async () => {
    const h = await start();
    await settle(h);
    const from = h.changes.length;
    const song = (start: number) => spotifyActivity({ ...SONG, start, end: start + 200_000, userId: USER });

    // Each update reaches us twice (once per guild), the copies' timestamps 200 and 400 ms apart.
    const jitter = { jitterMs: 400 };
    expect(h.simulator.setPresence(USER, { status: 'online', activities: [song(NOW)] }, jitter)).toBe(2);
    h.simulator.setPresence(USER, { status: 'idle', activities: [song(NOW)] }, jitter);
    h.simulator.setPresence(USER, { status: 'idle', activities: [song(NOW)] }, jitter); // nothing new
    h.simulator.setPresence(
      USER,
      { status: 'idle', activities: [song(NOW)], client_status: { mobile: 'idle' } },
      jitter,
    );
    h.simulator.setPresence(USER, { status: 'idle', activities: [song(NOW + 200_000)] }, jitter); // next song
    await settle(h);

    const changes = changesOf(h, from);
    expect(changes.map((change) => change.kind)).toEqual(['updated', 'updated', 'updated', 'updated']);
    expect(
      changes.map((change) => {
        const { presence } = (change as Extract<PresenceChange, { kind: 'updated' }>).current;
        return [
          presence.discord_status,
          presence.active_on_discord_mobile,
          presence.spotify?.timestamps.start,
        ];
      }),
    ).toEqual([
      // The first copy of each is the one kept.
      ['online', false, NOW + 200],
      ['idle', false, NOW + 200],
      ['idle', true, NOW + 200],
      ['idle', false, NOW + 200_000 + 200],
    ]);
    expect(h.app.registry.size).toBe(2);
  });

  it('stays monitored while one shared guild is left; 404 once the last one is (member removal)', async () => {
    const h = await start();
    const from = h.changes.length;
    h.simulator.removeMember(GUILD, USER);
    await settle(h);
    expect((await getJson(h, `/v1/users/${USER}`)).status).toBe(200);
    // Leaving one of two guilds changes nothing anyone can see.
    expect(changesOf(h, from)).toEqual([]);

    h.simulator.removeMember(GUILD_B, USER);
    await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(false));
    await expectNotMonitored(h, USER);
    expect(changesOf(h, from).map((change) => change.kind)).toEqual(['unmonitored']);
  });

  it('stays monitored while one shared guild is deleted; 404 once the last one is (GUILD_DELETE)', async () => {
    const h = await start();
    const from = h.changes.length;
    h.simulator.deleteGuild(GUILD);
    await settle(h);
    expect((await getJson(h, `/v1/users/${USER}`)).status).toBe(200);
    expect(changesOf(h, from)).toEqual([]);

    h.simulator.deleteGuild(GUILD_B);
    await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(false));
    await expectNotMonitored(h, USER);
    await expectNotMonitored(h, SENTINEL);
    expect(changesOf(h, from).map((change) => change.kind)).toEqual(['unmonitored']);
    expect(h.app.registry.size).toBe(0);
  });

  it('comes back with its presence when an unavailable guild is available again', async () => {
    const h = await start();
    h.simulator.removeMember(GUILD, USER);
    h.simulator.deleteGuild(GUILD_B, { unavailable: true });
    await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(false));
    await expectNotMonitored(h, USER);

    h.simulator.setPresence(USER, { status: 'dnd' }); // while the guild is out: nobody hears of it
    h.simulator.restoreGuild(GUILD_B);
    await eventually(async () => {
      const { status, body } = await getJson(h, `/v1/users/${USER}`);
      expect(status).toBe(200);
      expect((body as { data: Json }).data.discord_status).toBe('dnd');
    });
  });
});

// ---- 5. a large guild -----------------------------------------------------------------------------------

describe('a large guild', () => {
  const LARGE = '500000000000000003';
  /** Three member chunks (Discord sends at most 1,000 members in one). */
  const MEMBERS = 2_100;
  /** Every 35th member is online: 60 of them, the only ones GUILD_CREATE lists (large_threshold 250). */
  const isOnline = (n: number) => n % 35 === 0;
  const memberId = (n: number) => idAt(T_2017, 100 + n);
  const AVATAR = '0123456789abcdef0123456789abcdef';
  let harness: Harness | undefined;

  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('lists offline members from the op 8 member chunks, all monitored once; partial users merge', async () => {
    harness = await startHarness({
      setup: (sim) =>
        sim.createGuild({
          id: LARGE,
          name: 'Large',
          members: Array.from({ length: MEMBERS }, (_, n) => ({
            user: { id: memberId(n), username: `member${n}`, global_name: `Member ${n}`, avatar: AVATAR },
            ...(isOnline(n) ? { presence: { status: 'online' as const, activities: [chess] } } : {}),
          })),
        }),
    });
    const h = harness;
    await eventually(() => expect(h.app.registry.size).toBe(MEMBERS), 10_000);

    expect(h.simulator.memberRequests).toEqual([
      { guild_id: LARGE, query: '', limit: 0, presences: true, nonce: expect.any(String), shardId: 0 },
    ]);
    // Served once listed; announced as each is rendered, after the listing.
    const monitored = () => h.changes.filter((change) => change.kind === 'monitored');
    await eventually(() => expect(monitored()).toHaveLength(MEMBERS), 10_000);
    expect(new Set(monitored().map((change) => change.userId)).size).toBe(MEMBERS);
    expect(h.app.registry.pendingCount).toBe(0);

    const user = (n: number) =>
      gatewayUser({ id: memberId(n), username: `member${n}`, global_name: `Member ${n}`, avatar: AVATAR });
    // First and last of every chunk, and online members from GUILD_CREATE.
    for (const n of [1, 999, 1_001, 1_999, 2_001, 2_099]) {
      await expectPresence(h, memberId(n), basePresence(user(n), T_2017));
    }
    for (const n of [0, 1_050, 2_065]) {
      await expectPresence(h, memberId(n), {
        ...basePresence(user(n), T_2017),
        discord_status: 'online',
        active_on_discord_desktop: true,
        activities: [shown(chess, h.simulator.cdnUrl)],
      });
    }

    // An offline member (known from a chunk only) comes online: the presence carries just the user's id.
    h.simulator.setPresence(memberId(1_001), { status: 'idle' });
    await expectPresence(h, memberId(1_001), {
      ...basePresence(user(1_001), T_2017),
      discord_status: 'idle',
      active_on_discord_desktop: true,
    });

    // A presence carrying more of the user: what it has replaces ours, the rest stays. The new name reaches
    // the simulated Discord with a DM the bot ignores, so no member update tells the service first.
    h.simulator.sendMessage({ author: { id: memberId(1_001), global_name: 'Renamed' }, content: 'hello' });
    h.simulator.setPresence(memberId(1_001), { status: 'dnd' }, { fullUser: true });
    await expectPresence(h, memberId(1_001), {
      ...basePresence({ ...user(1_001), global_name: 'Renamed' }, T_2017),
      discord_status: 'dnd',
      active_on_discord_desktop: true,
    });
    expect(h.app.registry.size).toBe(MEMBERS);
  });
});

// ---- 6. profiles ----------------------------------------------------------------------------------------

describe('profiles (banner, accent colour) from GET /users/:id', () => {
  const USER = idAt(T_2023, 20);
  const OTHER = idAt(T_2023, 21);
  let harness: Harness | undefined;

  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  const fetchesOf = (h: Harness, id: string) => h.simulator.requestCount(`GET /users/${id}`);

  it('are fetched once per user, kept across leaving and coming back, and fetched again on USER_UPDATE', async () => {
    let botId = '';
    harness = await startHarness({
      setup: (sim) => {
        botId = sim.botUser.id;
        sim.createGuild({
          id: GUILD,
          name: 'A',
          members: [
            member(USER, 'user', { status: 'online' }),
            member(OTHER, 'other', { status: 'online' }),
            // Discord lists the bot among the members of every guild it is in.
            { user: { id: botId } },
          ],
        });
        sim.createGuild({ id: GUILD_B, name: 'B', members: [member(USER, 'user', { status: 'online' })] });
        sim.setProfile(USER, { banner: ANIMATED_BANNER, accent_color: 0x112233 });
        sim.setProfile(botId, { banner: STILL_BANNER, accent_color: 0x445566 });
      },
    });
    const h = harness;
    const profileOf = async (id: string) => {
      const { body } = await getJson(h, `/v1/users/${id}`);
      const { banner, banner_url, accent_color } = (body as { data: Json }).data;
      return { banner, banner_url, accent_color };
    };
    const userProfile = {
      banner: ANIMATED_BANNER,
      banner_url: `${h.simulator.cdnUrl}/banners/${USER}/${ANIMATED_BANNER}.gif?size=1024`,
      accent_color: 0x112233,
    };
    await eventually(async () => expect(await profileOf(USER)).toEqual(userProfile));
    await eventually(async () => expect(await profileOf(botId)).toMatchObject({ banner: STILL_BANNER }));

    // Updates of every kind, through both guilds: none of them fetches the profile again.
    const jitter = { jitterMs: 400 };
    h.simulator.setPresence(USER, { status: 'idle' }, jitter);
    h.simulator.setPresence(USER, { status: 'online', activities: [chess] }, jitter);
    h.simulator.updateMember(GUILD, { user: { id: USER }, nick: 'nick' });
    h.simulator.updateUser({ id: USER, global_name: 'User' });
    await eventually(async () => {
      const { body } = await getJson(h, `/v1/users/${USER}`);
      expect((body as { data: Json }).data.discord_user).toMatchObject({ global_name: 'User' });
    });
    expect(fetchesOf(h, USER)).toBe(1);

    // Leaving and coming back: the stored profile is shown again, not fetched.
    h.simulator.removeMember(GUILD, USER);
    h.simulator.removeMember(GUILD_B, USER);
    await eventually(async () => expect((await getJson(h, `/v1/users/${USER}`)).status).toBe(404));
    h.simulator.addMember(GUILD, member(USER, 'user', { status: 'online' }));
    await eventually(async () => expect(await profileOf(USER)).toEqual(userProfile));
    expect(fetchesOf(h, USER)).toBe(1);
    expect(fetchesOf(h, OTHER)).toBe(1);

    // The bot's own profile changes: Discord sends USER_UPDATE, and the profile is fetched again.
    expect(fetchesOf(h, botId)).toBe(1);
    h.simulator.updateUser({ id: botId, banner: ANIMATED_BANNER, accent_color: 0x778899 });
    await eventually(async () =>
      expect(await profileOf(botId)).toEqual({
        banner: ANIMATED_BANNER,
        banner_url: `${h.simulator.cdnUrl}/banners/${botId}/${ANIMATED_BANNER}.gif?size=1024`,
        accent_color: 0x778899,
      }),
    );
    expect(fetchesOf(h, botId)).toBe(2);
    expect(fetchesOf(h, USER)).toBe(1);
  });

  it('never hold up a read: a profile Discord is slow to give is null meanwhile', async () => {
    const ids = [USER, OTHER, idAt(T_2023, 22)];
    harness = await startHarness({
      // Two profile requests a minute: the third user's waits for the window to reset.
      simulator: { rateLimit: { limit: 2, windowMs: 60_000 } },
      setup: (sim) => {
        sim.createGuild({
          id: GUILD,
          name: 'A',
          members: ids.map((id, n) => member(id, `user${n}`, { status: 'online' })),
        });
        for (const id of ids) sim.setProfile(id, { banner: STILL_BANNER, accent_color: 0x010203 });
      },
    });
    const h = harness;
    const served = () =>
      h.simulator.requests.filter((r) => r.route === '/users/:id' && r.status === 200).map((r) => r.path);
    await eventually(() => expect(served()).toHaveLength(2));
    const waiting = ids.filter((id) => !served().includes(`/users/${id}`));
    expect(waiting).toHaveLength(1);

    const { status, body } = await getJson(h, `/v1/users/${waiting[0]}`);
    // Answered while Discord still holds that profile back: the read did not wait for it.
    expect(served()).not.toContain(`/users/${waiting[0]}`);
    expect(status).toBe(200);
    expect((body as { data: Json }).data).toMatchObject({
      discord_status: 'online',
      banner: null,
      banner_url: null,
      accent_color: null,
    });
    for (const id of ids.filter((other) => other !== waiting[0])) {
      await expectPresence(h, id, {
        ...basePresence(gatewayUser({ id, username: `user${ids.indexOf(id)}` }), T_2023),
        discord_status: 'online',
        active_on_discord_desktop: true,
        banner: STILL_BANNER,
        banner_url: `${h.simulator.cdnUrl}/banners/${id}/${STILL_BANNER}.png?size=1024`,
        accent_color: 0x010203,
      });
    }
  });
});
