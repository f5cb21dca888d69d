import { ActivityFlags, ActivityType, StatusDisplayType } from 'discord-api-types/v10';
import type { RawPresence } from '../presence/model.js';
import {
  appleMusicActivity,
  attachmentKey,
  customStatusActivity,
  gameActivity,
  mediaProxyKey,
  premidBrowsingActivity,
  premidYouTubeMusicActivity,
  richPresenceActivity,
  spotifyActivity,
  streamingActivity,
  youtubeMusicActivity,
} from '../simulator/activities.js';
import { DEMO_USERS } from './cast.js';

/**
 * What the demo users do over time: playlists on repeat, a player paused and resumed, statuses in turn,
 * and the odd shapes real players send.
 */

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
    [DEMO_USERS.ada.id, adaAt(now, elapsed)],
    [DEMO_USERS.rio.id, rioAt(now, elapsed)],
    [DEMO_USERS.sol.id, solAt(now, elapsed)],
    [DEMO_USERS.theo.id, theoAt(startedAt, now, elapsed)],
  ]);
}

/**
 * The track playing `elapsed` ms into a playlist played on repeat, and how far into its turn; a turn is
 * the track's length unless `turnMs` says otherwise.
 */
function playing<Playlist extends readonly [{ ms: number }, ...{ ms: number }[]]>(
  playlist: Playlist,
  elapsed: number,
  turnMs: (track: Playlist[number]) => number = (track) => track.ms,
): { track: Playlist[number]; position: number } {
  const cycle = playlist.reduce((sum, track) => sum + turnMs(track), 0);
  let position = elapsed % cycle;
  for (const track of playlist) {
    if (position < turnMs(track)) return { track, position };
    position -= turnMs(track);
  }
  return { track: playlist[0], position: 0 };
}

function novaAt(now: number, elapsed: number): RawPresence {
  const { track, position } = playing(SPOTIFY_PLAYLIST, elapsed);
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

const APPLE_MUSIC_PLAYLIST = [
  {
    title: 'Everything In Its Right Place',
    artist: 'Radiohead',
    album: 'Kid A',
    artworkUrl:
      'https://is1-ssl.mzstatic.com/image/thumb/Music115/v4/4e/2c/6e/4e2c6ea4-7d4f-2a4b-5e0b-0a4f4b8c3d1e/634904078164.png/600x600bb.jpg',
    albumSlug: 'kid-a',
    albumId: '1097861387',
    trackId: '1097861389',
    ms: 40_000,
  },
  {
    title: 'Teardrop',
    artist: 'Massive Attack',
    album: 'Mezzanine',
    artworkUrl:
      'https://is1-ssl.mzstatic.com/image/thumb/Music125/v4/8a/0f/3c/8a0f3c2e-1b6d-9e4a-7c5f-2d8e0b4a6c19/00724384559953.rgb.jpg/600x600bb.jpg',
    albumSlug: 'mezzanine',
    albumId: '1025210938',
    trackId: '1025211221',
    ms: 35_000,
  },
  {
    title: 'Strobe',
    artist: 'deadmau5',
    album: 'For Lack of a Better Name',
    artworkUrl:
      'https://is1-ssl.mzstatic.com/image/thumb/Music124/v4/c3/5d/1e/c35d1e7a-4b2f-08d9-6a3e-f1b7c9d2e4a0/0808225001429.jpg/600x600bb.jpg',
    albumSlug: 'for-lack-of-a-better-name',
    albumId: '1440838039',
    trackId: '1440838478',
    ms: 45_000,
  },
] as const;

function adaAt(now: number, elapsed: number): RawPresence {
  const { track, position } = playing(APPLE_MUSIC_PLAYLIST, elapsed);
  const start = now - position;
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [appleMusicActivity({ ...track, start, end: start + track.ms })],
  };
}

/** Rio streams, then watches, then competes, each for this long. */
const RIO_PHASE_MS = 20_000;

/** Streaming with a Twitch URL, Watching (type 3) and Competing (type 5), in turn. */
function rioAt(now: number, elapsed: number): RawPresence {
  const phase = Math.floor(elapsed / RIO_PHASE_MS) % 3;
  const start = now - (elapsed % RIO_PHASE_MS);
  const activity =
    phase === 0
      ? streamingActivity({
          service: 'twitch',
          channel: 'rio_live',
          title: 'Celeste any% — PB attempts',
          game: 'Celeste',
          start,
        })
      : phase === 1
        ? richPresenceActivity({
            type: ActivityType.Watching,
            name: 'Crunchyroll',
            applicationId: '981509069309354054',
            details: 'Frieren: Beyond Journey’s End',
            state: 'Season 1, Episode 12',
            start,
            largeImage: mediaProxyKey('https://img1.ak.crunchyroll.com/i/spire3/frieren-s1e12.jpg'),
          })
        : richPresenceActivity({
            type: ActivityType.Competing,
            name: 'Rocket League',
            applicationId: '356877880938070016',
            details: 'Ranked Doubles',
            state: 'Champion II',
            start,
          });
  return {
    status: phase === 0 ? 'online' : 'idle',
    client_status: phase === 0 ? { desktop: 'online' } : { desktop: 'idle', mobile: 'online' },
    activities: [activity],
  };
}

/** YouTube Music through PreMiD; the second track has no album, so PreMiD shows its own name there. */
const PREMID_PLAYLIST = [
  {
    title: 'Genesis',
    artist: 'Grimes',
    album: 'Visions',
    videoId: '1RKqOmSkGgM',
    imageUrl: 'https://lh3.googleusercontent.com/genesis-visions=w544-h544-l90-rj',
    ms: 40_000,
  },
  {
    title: 'Kids',
    artist: 'MGMT',
    album: null,
    videoId: 'fe4EK4HSPkI',
    imageUrl: 'https://i.ytimg.com/vi/fe4EK4HSPkI/hqdefault.jpg',
    ms: 35_000,
  },
  {
    title: 'Redbone',
    artist: 'Childish Gambino',
    album: 'Awaken, My Love!',
    videoId: 'Kp7eSUU9oy8',
    imageUrl: 'https://lh3.googleusercontent.com/redbone-awaken=w544-h544-l90-rj',
    ms: 45_000,
  },
] as const;
/** Between tracks Sol browses YouTube Music this long. */
const SOL_BROWSING_MS = 10_000;

function solAt(now: number, elapsed: number): RawPresence {
  const { track, position } = playing(PREMID_PLAYLIST, elapsed, (played) => played.ms + SOL_BROWSING_MS);
  const start = now - position;
  return {
    status: 'online',
    client_status: { web: 'online' },
    activities: [
      position < track.ms
        ? premidYouTubeMusicActivity({ ...track, start, end: start + track.ms })
        : premidBrowsingActivity({ details: 'Browsing Home', createdAt: start + track.ms }),
    ],
  };
}

/** Sent as a JSON number, as older payloads sent application ids: past 2^53 a double holds only this much. */
const LUMEN_DRIFT_APPLICATION_ID = 1087212339117940700;
const FOOBAR_RADIO_APPLICATION_ID = '1200000000000000001';
const FOOBAR_RADIO_PLAYLIST = [
  { title: 'Night Drive', artist: 'Cassette Hours', album: 'Late Shift FM', ms: 30_000 },
  { title: 'Paper Moons', artist: 'The Quiet Hours', album: 'Low Tide Sessions', ms: 40_000 },
] as const;

/**
 * A game whose rich-presence library sends what Discord's documentation does not promise (microsecond
 * timestamps, a numeric application id, no id or created_at, an attachment image, a null image key, every
 * optional field), while an app nobody knows plays music beside it.
 */
function theoAt(startedAt: number, now: number, elapsed: number): RawPresence {
  const { track, position } = playing(FOOBAR_RADIO_PLAYLIST, elapsed);
  const start = now - position;
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [
      richPresenceActivity({
        type: ActivityType.Playing,
        name: 'Lumen Drift',
        applicationId: LUMEN_DRIFT_APPLICATION_ID,
        details: 'Sector 7 · Hard',
        detailsUrl: 'https://lumendrift.example/sectors/7',
        state: 'In a squad',
        stateUrl: 'https://lumendrift.example/squads/4411',
        statusDisplayType: StatusDisplayType.State,
        start: startedAt,
        microsecondTimestamps: true,
        largeImage: attachmentKey({
          channelId: '1100000000000000101',
          messageId: '1100000000000000102',
          file: 'sector-7.png',
          expiresAt: startedAt + 24 * 60 * 60 * 1000,
        }),
        largeText: 'Sector 7',
        smallImage: null,
        smallText: 'Level 12',
        buttons: [
          { label: 'Join the squad', url: 'https://lumendrift.example/join/4411' },
          { label: 'Get Lumen Drift', url: 'https://lumendrift.example/' },
        ],
        party: { id: 'squad-4411', size: [3, 4] },
        secrets: { join: 'c3F1YWQtNDQxMQ' },
        flags: ActivityFlags.Instance | ActivityFlags.Join,
        platform: 'desktop',
        sessionId: '5f0e1d2c3b4a69788796a5b4c3d2e1f0',
        bare: true,
      }),
      richPresenceActivity({
        type: ActivityType.Listening,
        name: 'Foobar Radio',
        applicationId: FOOBAR_RADIO_APPLICATION_ID,
        details: track.title,
        state: track.artist,
        largeText: track.album,
        largeImage: 'https://foobar-radio.example/covers/late-shift.png',
        start,
        end: start + track.ms,
      }),
    ],
  };
}
