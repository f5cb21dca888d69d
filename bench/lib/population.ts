import type { GatewayActivity } from 'discord-api-types/v10';
import {
  customStatusActivity,
  gameActivity,
  spotifyActivity,
  youtubeMusicActivity,
} from '../../src/simulator/activities.js';
import type { PresenceInput, UserInput } from '../../src/simulator/index.js';
import { benchUserId, SONGS } from './workload.js';

/**
 * A population of users as a bot in big guilds sees it, for the scenarios that hold many users at once
 * (memory, startup). Each user's presence is fixed by their number n (deterministic, no Math.random), so
 * every run and every process sees the same population. The mix (POPULATION_MIX) is an estimate, not a
 * measurement of Discord: a third offline; of the rest, custom statuses, Spotify, games with and without
 * rich presence, YouTube Music, desktop and mobile clients, in the proportions below, drawn independently.
 */
export const POPULATION_MIX =
  '1/3 offline; of the others: status online 65% / idle 20% / dnd 15%; custom status 40% (emoji in most); ' +
  'Spotify 17%, YouTube Music 3%; a game 30% (2/3 of them rich presence with details, state and images); ' +
  'clients desktop 45%, mobile 25%, desktop+mobile 20%, web 5%, desktop+web 5%; ' +
  'avatars for 80% of users, a display name for 70%';

/** A draw in [0, 1) that depends only on (n, salt): splitmix-style integer hashing. */
function draw(n: number, salt: number): number {
  let x = (Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt + 1, 0xc2b2ae35)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return ((x ^ (x >>> 16)) >>> 0) / 2 ** 32;
}

function pick<T>(list: readonly T[], n: number, salt: number): T {
  return list[Math.floor(draw(n, salt) * list.length)] as T;
}

function hex(n: number, salt: number, digits: number): string {
  let text = '';
  for (let i = 0; text.length < digits; i++) text += Math.floor(draw(n, salt + i) * 2 ** 32).toString(16);
  return text.slice(0, digits);
}

const CUSTOM_TEXTS = [
  'shipping things',
  'in a meeting until 3',
  'do not disturb, deadline',
  'coffee first',
  'streaming later tonight!',
  'learning rust 🦀',
  'on vacation 🌴 back monday',
  'grinding ranked',
  'lurking',
  'commissions open — dm me',
  'hi :)',
  'building a keyboard',
] as const;
const EMOJIS = ['🚀', '☕', '🎧', '🔥', '💤', '🌙', '✨', '🎮'] as const;

const TRACKS = [
  ...SONGS,
  { song: 'As It Was', artists: ['Harry Styles'], album: "Harry's House", ms: 167_000 },
  { song: 'Espresso', artists: ['Sabrina Carpenter'], album: 'Espresso', ms: 175_000 },
  { song: 'Kill Bill', artists: ['SZA'], album: 'SOS', ms: 153_000 },
] as const;

const GAMES = [
  {
    name: 'League of Legends',
    applicationId: '401518684763586560',
    details: 'Summoner’s Rift (Ranked)',
    state: 'In Game',
    largeImage: '1190770964836728862',
    largeText: 'Jinx',
  },
  {
    name: 'Minecraft',
    applicationId: '1101201001297621022',
    details: 'Playing Survival',
    state: 'Multiplayer',
    largeImage: '1101201322925281310',
    largeText: 'Minecraft 1.21',
  },
  {
    name: 'Visual Studio Code',
    applicationId: '383226320970055681',
    details: 'Editing registry.ts',
    state: 'Workspace: presently',
    largeImage: '565944799296684033',
    largeText: 'Editing a TypeScript file',
    smallImage: '565945770067623946',
    smallText: 'Visual Studio Code',
  },
  {
    name: 'Counter-Strike 2',
    applicationId: '1158877933042143272',
    details: 'Competitive: Mirage',
    state: 'Score: 7:5',
    largeImage: '1158879386028736582',
    largeText: 'Mirage',
  },
] as const;
const PLAIN_GAMES = ['Stardew Valley', 'Factorio', 'Elden Ring', 'Terraria', 'Hades II'] as const;

const CLIENTS: ReadonlyArray<readonly ('desktop' | 'mobile' | 'web')[]> = [
  ...Array<readonly ['desktop']>(9).fill(['desktop']),
  ...Array<readonly ['mobile']>(5).fill(['mobile']),
  ...Array<readonly ['desktop', 'mobile']>(4).fill(['desktop', 'mobile']),
  ['web'],
  ['desktop', 'web'],
];

/** The n-th user as the gateway lists them: a username, most with an avatar and a display name. */
export function populationUser(n: number): UserInput {
  return {
    id: benchUserId(n),
    username: `member_${n.toString(36)}`,
    global_name: draw(n, 1) < 0.7 ? `Member ${n}` : null,
    avatar: draw(n, 2) < 0.8 ? `${draw(n, 3) < 0.1 ? 'a_' : ''}${hex(n, 4, 32)}` : null,
  };
}

/** Whether user n is offline in the population (no presence in member listings). */
export function isOfflineInPopulation(n: number): boolean {
  return draw(n, 10) < 1 / 3;
}

/** The n-th user's presence (offline for a third of them). `start`: when their activities began. */
export function populationPresence(n: number, start: number): PresenceInput {
  if (isOfflineInPopulation(n)) return { status: 'offline', activities: [], client_status: {} };
  const s = draw(n, 11);
  const status = s < 0.65 ? 'online' : s < 0.85 ? 'idle' : 'dnd';
  const activities: GatewayActivity[] = [];
  const since = start - Math.floor(draw(n, 12) * 3_600_000);
  if (draw(n, 13) < 0.4) {
    const e = draw(n, 14);
    activities.push(
      customStatusActivity({
        ...(e < 0.85 ? { text: pick(CUSTOM_TEXTS, n, 15) } : {}),
        ...(e > 0.25
          ? {
              emoji:
                e < 0.9
                  ? { name: pick(EMOJIS, n, 16) }
                  : {
                      name: 'pepe_hype',
                      id: String(900_000_000_000_000_000n + BigInt(n % 5000)),
                      animated: true,
                    },
            }
          : {}),
        createdAt: since,
      }),
    );
  }
  const music = draw(n, 17);
  if (music < 0.17) {
    const track = pick(TRACKS, n, 18);
    activities.push(
      spotifyActivity({
        song: track.song,
        artists: track.artists,
        album: track.album,
        imageId: `ab67616d0000b273${hex(n, 19, 24)}`,
        trackId: hex(n, 20, 22),
        start: since,
        end: since + track.ms,
        createdAt: since,
        userId: benchUserId(n),
      }),
    );
  } else if (music < 0.2) {
    activities.push(
      youtubeMusicActivity({
        title: pick(TRACKS, n, 21).song,
        artist: pick(TRACKS, n, 21).artists[0],
        album: pick(TRACKS, n, 21).album,
        videoId: hex(n, 22, 11),
        imageUrl: `https://lh3.googleusercontent.com/${hex(n, 23, 40)}=w544-h544-l90-rj`,
        start: since,
        end: since + 200_000,
        createdAt: since,
      }),
    );
  }
  const game = draw(n, 24);
  if (game < 0.2) {
    activities.push(gameActivity({ ...pick(GAMES, n, 25), start: since, createdAt: since }));
  } else if (game < 0.3) {
    const name = pick(PLAIN_GAMES, n, 26);
    activities.push(
      gameActivity({
        name,
        applicationId: String(700_000_000_000_000_000n + BigInt(name.length)),
        start: since,
      }),
    );
  }
  const client_status = Object.fromEntries(pick(CLIENTS, n, 27).map((client) => [client, status]));
  return { status, client_status, activities };
}
