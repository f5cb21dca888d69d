import type { Logger } from 'pino';
import type { RawPresence } from '../../presence/model.js';
import { customStatusActivity, gameActivity, spotifyActivity, youtubeMusicActivity } from './activities.js';
import { DiscordSimulator } from './index.js';

/** How often the demo users' presences are re-sent. */
export const DEMO_TICK_MS = 2_000;

const DEMO_GUILD = '1100000000000000001';
/** Nova and Kai share a second server, so the demo shows per-guild copies becoming one presence. */
const DEMO_SECOND_GUILD = '1100000000000000002';

export const DEMO_USERS = {
  nova: {
    id: '94490510688792576',
    username: 'nova',
    global_name: 'Nova',
    avatar: '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b',
    avatar_decoration_data: {
      asset: 'a_6e1f0c2d3b4a59687f8e9d0c1b2a3f4e',
      sku_id: '1144058844004233369',
      expires_at: null,
    },
  },
  kai: {
    id: '218486934151479296',
    username: 'kai.dev',
    global_name: 'Kai',
    avatar: 'a_5b8e0c1d2f3a4b5c6d7e8f9a0b1c2d3e',
  },
  mira: {
    id: '381456437152087040',
    username: 'mira',
    global_name: 'Mira',
    avatar: null,
    // The demo server's tag, which Mira wears.
    primary_guild: {
      identity_guild_id: DEMO_GUILD,
      identity_enabled: true,
      tag: 'PRES',
      badge: '7c4e2a9d1b3f5e6a8c0d2f4b6a8e0c1d',
    },
  },
  juno: {
    id: '725054734427766827',
    username: 'juno_',
    global_name: 'Juno',
    avatar: '9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a',
  },
} as const;

const SPOTIFY_PLAYLIST = [
  {
    song: 'Midnight City',
    artists: ['M83'],
    album: "Hurry Up, We're Dreaming",
    imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
    trackId: '1eyzqe2QqGZUmfcPZtrIyt',
    ms: 40_000,
  },
  {
    song: 'Digital Love',
    artists: ['Daft Punk'],
    album: 'Discovery',
    imageId: 'ab67616d0000b273b33d46dfa2635a47eebf63b2',
    trackId: '2VEZx7NWsZ1D0eJ4uv5Fym',
    ms: 35_000,
  },
  {
    song: 'Intro',
    artists: ['The xx'],
    album: 'xx',
    imageId: 'ab67616d0000b273e9d1f9a3a2a4a5e2b2e5f4b1',
    trackId: '2usXy3bMq3DaGfkz1yUjwA',
    ms: 30_000,
  },
  {
    song: 'Breathe (In the Air)',
    artists: ['Pink Floyd'],
    album: 'The Dark Side of the Moon',
    imageId: 'ab67616d0000b273ea7caaff71dea1051d49b2fe',
    trackId: '2ctvdKmETyOzPb2GiJJT53',
    ms: 45_000,
  },
  {
    song: 'Feel It Still',
    artists: ['Portugal. The Man'],
    album: 'Woodstock',
    imageId: 'ab67616d0000b2734f0fd9dad63977146e685700',
    trackId: '6QgjcU0zLnzq5OrUoSZ3OK',
    ms: 38_000,
  },
] as const;

const YOUTUBE_MUSIC_PLAYLIST = [
  {
    title: 'Nightcall',
    artist: 'Kavinsky',
    album: 'OutRun',
    videoId: 'MV_3Dpw-BRY',
    imageUrl: 'https://i.ytimg.com/vi/MV_3Dpw-BRY/hqdefault.jpg',
  },
  {
    title: 'Resonance',
    artist: 'HOME',
    album: 'Odyssey',
    videoId: '8GW6sLrK40k',
    imageUrl: 'https://i.ytimg.com/vi/8GW6sLrK40k/hqdefault.jpg',
  },
  {
    title: 'Tadow',
    artist: 'Masego & FKJ',
    album: 'Lady Lady',
    videoId: 'hC8CH0Z3L54',
    imageUrl: 'https://i.ytimg.com/vi/hC8CH0Z3L54/hqdefault.jpg',
  },
] as const;

/** A YouTube Music track lasts this long; Kai pauses it for PAUSE_MS after PLAY_BEFORE_PAUSE_MS. */
const YTM_TRACK_MS = 45_000;
const YTM_PLAY_BEFORE_PAUSE_MS = 20_000;
const YTM_PAUSE_MS = 10_000;
const JUNO_STATUS_MS = 10_000;
const JUNO_STATUSES = ['online', 'idle', 'dnd', 'offline'] as const;

/** Each demo user's presence at a moment: a pure function of the time since the demo started. */
export function demoPresences(startedAt: number, now: number): Map<string, RawPresence> {
  const elapsed = now - startedAt;
  return new Map([
    [DEMO_USERS.nova.id, novaAt(now, elapsed)],
    [DEMO_USERS.kai.id, kaiAt(now, elapsed)],
    [DEMO_USERS.mira.id, miraAt(startedAt)],
    [DEMO_USERS.juno.id, junoAt(startedAt, elapsed)],
  ]);
}

function novaAt(now: number, elapsed: number): RawPresence {
  const cycle = SPOTIFY_PLAYLIST.reduce((sum, track) => sum + track.ms, 0);
  let position = elapsed % cycle;
  let index = 0;
  while (position >= (SPOTIFY_PLAYLIST[index]?.ms ?? cycle)) {
    position -= SPOTIFY_PLAYLIST[index]?.ms ?? 0;
    index++;
  }
  const track = SPOTIFY_PLAYLIST[index] ?? SPOTIFY_PLAYLIST[0];
  const start = now - position;
  return {
    status: 'online',
    client_status: { desktop: 'online', mobile: 'online' },
    activities: [
      customStatusActivity({ text: 'on repeat', emoji: { name: '🎧' }, createdAt: now - elapsed }),
      spotifyActivity({ ...track, start, end: start + track.ms, userId: DEMO_USERS.nova.id }),
    ],
  };
}

function kaiAt(now: number, elapsed: number): RawPresence {
  const segment = YTM_TRACK_MS + YTM_PAUSE_MS;
  const index = Math.floor(elapsed / segment) % YOUTUBE_MUSIC_PLAYLIST.length;
  const track = YOUTUBE_MUSIC_PLAYLIST[index] ?? YOUTUBE_MUSIC_PLAYLIST[0];
  const intoSegment = elapsed % segment;
  const paused =
    intoSegment >= YTM_PLAY_BEFORE_PAUSE_MS && intoSegment < YTM_PLAY_BEFORE_PAUSE_MS + YTM_PAUSE_MS;
  const played = intoSegment < YTM_PLAY_BEFORE_PAUSE_MS ? intoSegment : intoSegment - YTM_PAUSE_MS;
  const start = now - played;
  return {
    status: paused ? 'idle' : 'online',
    client_status: { desktop: paused ? 'idle' : 'online' },
    activities: [
      youtubeMusicActivity(
        paused
          ? { ...track, paused: true, createdAt: now - elapsed }
          : { ...track, start, end: start + YTM_TRACK_MS },
      ),
    ],
  };
}

function miraAt(startedAt: number): RawPresence {
  return {
    status: 'dnd',
    client_status: { desktop: 'dnd', mobile: 'dnd' },
    activities: [
      customStatusActivity({ text: 'shipping things', emoji: { name: '🚀' }, createdAt: startedAt }),
      gameActivity({
        name: 'Celeste',
        applicationId: '512035578624524288',
        details: 'Chapter 7: The Summit',
        state: '1,204 deaths',
        start: startedAt,
        largeImage: '512036254624989184',
        largeText: 'Celeste',
      }),
    ],
  };
}

function junoAt(startedAt: number, elapsed: number): RawPresence {
  const status = JUNO_STATUSES[Math.floor(elapsed / JUNO_STATUS_MS) % JUNO_STATUSES.length] ?? 'online';
  if (status === 'offline') return { status, client_status: {}, activities: [] };
  return {
    status,
    client_status: { web: status },
    activities: [
      customStatusActivity({
        text: 'reading the docs',
        emoji: { name: 'blobreading', id: '887330474925178910', animated: true },
        createdAt: startedAt,
      }),
    ],
  };
}

export interface Demo {
  readonly simulator: DiscordSimulator;
  readonly users: readonly { id: string; name: string }[];
  stop(): Promise<void>;
}

/**
 * Demo mode: a simulated Discord on loopback with a server of demo users whose presences change on a
 * timer. The service connects to it exactly as it connects to Discord.
 */
export async function startDemo(logger: Logger): Promise<Demo> {
  const simulator = new DiscordSimulator({});
  await simulator.start();
  const startedAt = Date.now();
  const initial = demoPresences(startedAt, startedAt);
  const users = Object.values(DEMO_USERS);

  simulator.createGuild({
    id: DEMO_GUILD,
    name: 'Presently Demo',
    members: users.map((user) => ({ user: { ...user, discriminator: '0' }, presence: initial.get(user.id) })),
  });
  simulator.createGuild({
    id: DEMO_SECOND_GUILD,
    name: 'Listening Club',
    members: [DEMO_USERS.nova, DEMO_USERS.kai].map((user) => ({
      user: { ...user, discriminator: '0' },
      presence: initial.get(user.id),
    })),
  });
  simulator.setProfile(DEMO_USERS.nova.id, {
    banner: 'a_6f2d8c1e0b9a4f3e2d1c0b9a8f7e6d5c',
    accent_color: 0x5865f2,
  });
  simulator.setProfile(DEMO_USERS.kai.id, {
    banner: '0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f',
    accent_color: 0xff0033,
  });
  simulator.setProfile(DEMO_USERS.mira.id, { banner: null, accent_color: 0x2ecc71 });

  const timer = setInterval(() => {
    for (const [userId, presence] of demoPresences(startedAt, Date.now())) {
      simulator.setPresence(userId, presence, { jitterMs: 400 });
    }
  }, DEMO_TICK_MS);
  logger.debug({ users: users.length }, 'demo users created');

  return {
    simulator,
    users: users.map((user) => ({ id: user.id, name: user.global_name })),
    stop: async () => {
      clearInterval(timer);
      await simulator.stop();
    },
  };
}
