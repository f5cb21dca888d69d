import type { GatewayActivity } from 'discord-api-types/v10';
import { customStatusActivity, spotifyActivity } from '../../src/simulator/activities.js';
import type { PresenceInput, UserInput } from '../../src/simulator/index.js';

/** The guild every bench user is in, and a second one, whose copies of an update are no change. */
export const BENCH_GUILD = '400000000000000001';
export const SECOND_GUILD = '400000000000000002';

/** The n-th bench user's id: plausible snowflakes, all distinct. */
export function benchUserId(n: number): string {
  return String(81_000_000_000_000_000n + BigInt(n));
}

export function benchUser(n: number): UserInput {
  return { id: benchUserId(n), username: `bench_user_${n}`, global_name: `Bench User ${n}` };
}

/** Real tracks with their lengths, as Spotify reports them. */
export const SONGS = [
  { song: 'Midnight City', artists: ['M83'], album: "Hurry Up, We're Dreaming", ms: 243_000 },
  {
    song: 'Get Lucky',
    artists: ['Daft Punk', 'Pharrell Williams', 'Nile Rodgers'],
    album: 'Random Access Memories',
    ms: 369_000,
  },
  { song: 'Blinding Lights', artists: ['The Weeknd'], album: 'After Hours', ms: 200_000 },
  { song: 'Nude', artists: ['Radiohead'], album: 'In Rainbows', ms: 255_000 },
  {
    song: 'Dreams - 2004 Remaster',
    artists: ['Fleetwood Mac'],
    album: 'Rumours (Super Deluxe)',
    ms: 257_000,
  },
] as const;

export interface PresenceShape {
  /** Which track (any integer): each index is a different track id. */
  song?: number;
  status?: PresenceInput['status'];
  customText?: string;
  /** When the track started (epoch ms). */
  start?: number;
}

/**
 * A presence as a busy user has it: a custom status with an emoji, Spotify, desktop and mobile clients.
 * Served as the REST envelope it is about 1.5 KB, Lanyard's usual size for such a user.
 */
export function realisticPresence(n: number, shape: PresenceShape = {}): PresenceInput {
  const index = shape.song ?? 0;
  const track = SONGS[index % SONGS.length] as (typeof SONGS)[number];
  const start = shape.start ?? Date.now() - 30_000;
  const activities: GatewayActivity[] = [
    customStatusActivity({
      text: shape.customText ?? 'shipping things',
      emoji: { name: '🚀' },
      createdAt: start,
    }),
    spotifyActivity({
      song: track.song,
      artists: track.artists,
      album: track.album,
      imageId: `ab67616d0000b273${(index % 65_536).toString(16).padStart(24, '0')}`,
      trackId: index.toString(36).padStart(22, '0'),
      start,
      end: start + track.ms,
      createdAt: start,
      userId: benchUserId(n),
    }),
  ];
  const status = shape.status ?? 'online';
  return { status, client_status: { desktop: status, mobile: status }, activities };
}
