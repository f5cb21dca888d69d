import type { GatewayActivity } from 'discord-api-types/v10';
import {
  customStatusActivity,
  gameActivity,
  spotifyActivity,
} from '../../src/discord/simulator/activities.js';
import type { PresenceInput } from '../../src/discord/simulator/index.js';

/** The guild every benchmark user is in. */
export const BENCH_GUILD = '400000000000000001';

/** The n-th benchmark user's id: plausible snowflakes, all distinct. */
export function benchUserId(n: number): string {
  return String(81_000_000_000_000_000n + BigInt(n));
}

/** A presence as a busy user has it: Spotify, a custom status with emoji, a game, two clients (~1.5 KB served). */
export function realisticPresence(n: number, songIndex = 0, now = Date.now()): PresenceInput {
  const start = now - 30_000;
  const activities: GatewayActivity[] = [
    customStatusActivity({
      text: `shipping things, day ${n % 365}`,
      emoji: { name: '🚀' },
      createdAt: start,
    }),
    spotifyActivity({
      song: `Song number ${songIndex} with a reasonably long title`,
      artists: ['First Artist', 'Second Artist'],
      album: `Album ${songIndex % 50}`,
      imageId: `ab67616d0000b273${(songIndex % 4096).toString(16).padStart(24, '0')}`,
      trackId: `${songIndex.toString(36).padStart(22, '0')}`,
      start,
      end: start + 215_000,
      createdAt: start,
      userId: benchUserId(n),
    }),
    gameActivity({
      name: 'Visual Studio Code',
      applicationId: '383226320970055681',
      details: 'Editing presence.ts',
      state: 'Workspace: presently',
      start: now - 3_600_000,
      largeImage: '565944799011487754',
      largeText: 'Editing a TypeScript file',
      smallImage: '565945770067623946',
      smallText: 'Visual Studio Code',
    }),
  ];
  return { status: 'online', client_status: { desktop: 'online', mobile: 'online' }, activities };
}
