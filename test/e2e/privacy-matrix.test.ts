import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { bodyDigest } from '../../src/collections/body-digest.js';
import { loadConfig } from '../../src/config.js';
import { digestEtag } from '../../src/http/etag.js';
import type { PrivacyPatch } from '../../src/presence/privacy.js';
import {
  APPLE_MUSIC_APPLICATION_ID,
  appleMusicActivity,
  customStatusActivity,
  gameActivity,
  spotifyActivity,
} from '../../src/simulator/activities.js';
import { DiscordSimulator, type MemberInput, type PresenceInput } from '../../src/simulator/index.js';
import { insertApiKey } from '../support/api-key.js';
import { startApiNode } from '../support/api-node.js';
import { comparableHeaders } from '../support/comparable-headers.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import {
  expectAll,
  expectNone,
  type Mark,
  type PresenceJson,
  SocketTap,
  SseTap,
  type Tap,
  WebhookTap,
} from '../support/privacy-taps.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * THE privacy matrix: every setting (a row, with marker strings of its own) against every consumer of a
 * presence (a column): REST and its ETag, bulk reads, the socket (plain JSON and zlib_json, subscribe_to_id
 * and subscribe_to_all: the INIT_STATE after the change and the PRESENCE_UPDATE the change itself sends),
 * event streams (live, newly opened, and resumed from before the change), webhooks, the SVG and PNG card,
 * history, stats and top tracks, and an API node of a scale-out deployment. Each cell searches the raw bytes
 * the consumer received for the row's markers, and checks the parsed presence field by field; each row
 * first shows its markers in every consumer (the positive control) and, once the setting is undone, shows
 * them coming back live.
 */

const NOW = Date.now();
const SONG_MS = 200_000;
/** Far enough ahead that the pause holds through the whole file. */
const PAUSED_UNTIL = NOW + 3_600_000;

const GUILD = '790000000000000001';
/** A user id whose creation time `n` seconds apart from the others; its twin is the next id (same default avatar). */
const userId = (n: number): string => String(((190_000_000_000n + BigInt(n) * 1_000n) << 22n) + 1n);
const twinOf = (id: string): string => String(BigInt(id) + 1n);

type Variant = 'original' | 'alt';

/** What a row's steps are given: the service under test. */
interface Service {
  base: string;
  sim: DiscordSimulator;
  key(userId: string): string;
  /** The long-lived `subscribe_to_all` sockets (plain JSON, zlib_json). */
  all: SocketTap[];
  receiver: WebhookReceiver | null;
  flushHistory: (() => Promise<void>) | null;
  /**
   * One process: a change is applied by the time its PATCH is answered. An API node applies what the
   * ingest node renders again, within a second.
   */
  settled: boolean;
}

/** The columns a service is tested in besides REST, bulk and the socket. */
interface Columns {
  sse: boolean;
  webhooks: boolean;
  card: boolean;
  history: boolean;
  /** The ETag check that swaps the hidden data while it is hidden. */
  variant: boolean;
}

interface Row {
  title: string;
  user: string;
  username: string;
  /** The twin's status (the user's before any data is given is `online`). */
  twinStatus: 'online' | 'offline';
  patch: PrivacyPatch;
  undo: PrivacyPatch;
  /** `privacy.hidden` while the setting holds. */
  hidden: string[];
  /** Strings that are in the data the setting hides and nowhere else. */
  markers: string[];
  /** The markers of the other version of the hidden data (the ETag check swaps it in while hidden). */
  altMarkers: string[];
  /** What the card shows of the data; empty: the card is no consumer of it. */
  cardMarkers: string[];
  /** What history and top tracks keep of the data; empty: they keep nothing of it. */
  historyMarkers: string[];
  /** Gives the user the data; resolves once a read shows it. */
  give(service: Service): Promise<void>;
  /** The user's presence with the data, once given. */
  presence(variant: Variant): PresenceInput;
  /** Puts the other version of data that is not in the presence (KV, profile) in place. */
  swap?(service: Service, variant: Variant): Promise<void>;
  /** Whether the ETag check applies (a paused presence shows no status to sync on). */
  variant: boolean;
  /** The presence with the data shown, field by field. */
  shown(presence: PresenceJson): void;
  /** The presence with the data hidden, field by field. */
  hiddenCheck(presence: PresenceJson): void;
}

// ---- reading presences ---------------------------------------------------------------------------------

type Activity = { type: number; name?: string; id?: string; application_id?: string };
const activitiesOf = (presence: PresenceJson): Activity[] => presence.activities as Activity[];
const field = <T>(presence: PresenceJson, name: string): T => presence[name] as T;

interface Read {
  status: number;
  bytes: Buffer;
  text: string;
  etag: string | null;
  response: Response;
}

async function read(base: string, path: string, headers: Record<string, string> = {}): Promise<Read> {
  // A redirect (the avatar link) is an answer of its own, not followed.
  const response = await fetch(`${base}${path}`, { headers, redirect: 'manual' });
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    status: response.status,
    bytes,
    text: bytes.toString('utf8'),
    etag: response.headers.get('etag'),
    response,
  };
}

const headersText = (read: Read): string => JSON.stringify([...read.response.headers]);
const dataOf = (read: Read): PresenceJson => (JSON.parse(read.text) as { data: PresenceJson }).data;

async function presenceRead(base: string, id: string): Promise<Read> {
  const answer = await read(base, `/v1/users/${id}`);
  expect(answer.status, answer.text).toBe(200);
  return answer;
}

/** A bulk read's ETag, as the service makes it from each presence's own tag (http/etag.ts). */
function bulkEtagOf(pairs: readonly [string, string][]): string {
  const parts = pairs.map(([id, etag]) => `${id}${etag}`).join('');
  return `"${createHash('sha256').update(parts).digest().toString('base64url', 0, 16)}"`;
}

async function patchPrivacy(service: Service, id: string, patch: PrivacyPatch): Promise<void> {
  const response = await fetch(`${service.base}/v1/users/@me/privacy`, {
    method: 'PATCH',
    headers: { authorization: service.key(id), 'content-type': 'application/json' },
    body: JSON.stringify(patch),
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  expect((JSON.parse(text) as { data: PrivacyPatch }).data).toMatchObject(patch);
}

async function putKv(service: Service, id: string, key: string, value: string): Promise<void> {
  const response = await fetch(`${service.base}/v1/users/@me/kv/${key}`, {
    method: 'PUT',
    headers: { authorization: service.key(id), 'content-type': 'text/plain' },
    body: value,
  });
  expect(response.status, await response.text()).toBe(204);
}

/** Sets a presence in the simulated Discord; resolves once REST answers something else than before. */
async function drive(service: Service, id: string, presence: PresenceInput): Promise<void> {
  const before = (await presenceRead(service.base, id)).text;
  service.sim.setPresence(id, presence);
  await eventually(async () => expect((await presenceRead(service.base, id)).text).not.toBe(before));
}

/** A presence's JSON with its `observed_at` left out, to compare what it shows. */
const apartFromObservedAt = (text: string): string => text.replace(/,"observed_at":\d+/, '');

/** Resolves once REST shows the user's status as `status`: a change the service has taken in. */
async function untilStatus(service: Service, id: string, status: string): Promise<void> {
  await eventually(async () =>
    expect(dataOf(await presenceRead(service.base, id)).discord_status).toBe(status),
  );
}

const cardOf = (service: Service, id: string, format: 'svg' | 'png') =>
  read(service.base, `/v1/users/${id}/card.${format}`);

interface HistoryTexts {
  history: string;
  stats: string;
  topTracks: string;
}

async function historyTexts(service: Service, id: string): Promise<HistoryTexts> {
  const [history, stats, topTracks] = await Promise.all(
    ['history', 'stats', 'top-tracks'].map(async (path) => {
      const answer = await read(service.base, `/v1/users/${id}/${path}`);
      expect(answer.status, answer.text).toBe(200);
      return answer.text;
    }),
  );
  return { history: history as string, stats: stats as string, topTracks: topTracks as string };
}

// ---- the live consumers --------------------------------------------------------------------------------

async function expectShownLive(
  taps: readonly Tap[],
  marks: ReadonlyMap<Tap, Mark>,
  row: Row,
  timeoutMs = 5_000,
): Promise<void> {
  await Promise.all(
    taps.map((tap) =>
      eventually(() => {
        const mark = marks.get(tap);
        const latest = tap.presences(row.user, mark).at(-1);
        expect(latest, `${tap.name}: the user's presence`).toBeDefined();
        row.shown(latest as PresenceJson);
        expect((latest as PresenceJson).privacy, tap.name).toBeUndefined();
        expectAll(tap.name, tap.text(mark), row.markers);
      }, timeoutMs),
    ),
  );
}

async function expectHiddenLive(
  taps: readonly Tap[],
  marks: ReadonlyMap<Tap, Mark>,
  row: Row,
  timeoutMs = 5_000,
): Promise<void> {
  await Promise.all(
    taps.map((tap) =>
      eventually(() => {
        const latest = tap.presences(row.user, marks.get(tap)).at(-1);
        expect(latest, `${tap.name}: the update the change sent`).toBeDefined();
        expect((latest as PresenceJson).privacy, tap.name).toEqual({ hidden: row.hidden });
      }, timeoutMs),
    ),
  );
  expectNothingSince(taps, marks, row);
}

/** Nothing any tap received since its mark carries the row's data, and every presence of the user is hidden. */
function expectNothingSince(taps: readonly Tap[], marks: ReadonlyMap<Tap, Mark>, row: Row): void {
  for (const tap of taps) {
    const mark = marks.get(tap);
    expectNone(`${tap.name} since the change`, tap.text(mark), [...row.markers, ...row.altMarkers]);
    for (const presence of tap.presences(row.user, mark)) {
      expect(presence.privacy, tap.name).toEqual({ hidden: row.hidden });
      row.hiddenCheck(presence);
    }
  }
}

/**
 * A cell, where its column applies to the row: a column that cannot show the data (the card shows no KV,
 * history keeps no custom status) has no cell, rather than one that passes by testing nothing.
 */
function cellIf(applies: boolean): (name: string, test: () => Promise<void>) => void {
  return (name, test) => {
    if (applies) it(name, test);
  };
}

const marksOf = (taps: readonly Tap[]): Map<Tap, Mark> => new Map(taps.map((tap) => [tap, tap.mark()]));
/** What is left of a deadline `ms` after `since` (performance.now()): the change must arrive within it. */
const left = (since: number, ms = 1_000): number => Math.max(1, ms - (performance.now() - since));

// ---- the rows ------------------------------------------------------------------------------------------

const PLAY_APP = '1402418491272900001';
const GAME_APP = '1402418491272900003';

function spotify(markers: { song: string; artist: string; album: string; track: string }, start: number) {
  return spotifyActivity({
    song: markers.song,
    artists: [markers.artist],
    album: markers.album,
    imageId: 'ab67616d0000b2730000000000000000',
    trackId: markers.track,
    start,
    end: start + SONG_MS,
    createdAt: start,
  });
}

/** A track played twice (so it is in top tracks, which count from two plays): the second is playing now. */
const FIRST_PLAY = NOW - 60_000 - SONG_MS;
const SECOND_PLAY = NOW - 60_000;

const noMusic = (presence: PresenceJson): void => {
  expect(presence).toMatchObject({
    now_playing: null,
    spotify: null,
    youtube_music: null,
    listening_to_spotify: false,
    listening_to_youtube_music: false,
    listening_to_music: false,
  });
};

const PLATFORMS = ['desktop', 'mobile', 'web', 'embedded', 'vr'] as const;
const noPlatforms = (presence: PresenceJson): void => {
  for (const platform of PLATFORMS) expect(presence[`active_on_discord_${platform}`], platform).toBe(false);
};

function playingRow(n: number): Row {
  const game = (variant: Variant) =>
    gameActivity({
      name: variant === 'alt' ? `MX-PLAYING-ALT-${n}` : `MX-PLAYING-${n}`,
      applicationId: PLAY_APP,
      details: `MX-PLAYING-DETAILS-${n}`,
      state: `MX-PLAYING-STATE-${n}`,
      largeText: `MX-PLAYING-ASSET-${n}`,
      createdAt: NOW,
    });
  const row: Row = {
    title: 'hide_activity_types ["playing"]',
    user: userId(n),
    username: `playing_${n}`,
    twinStatus: 'online',
    patch: { hide_activity_types: ['playing'] },
    undo: { hide_activity_types: [] },
    hidden: ['activities:playing'],
    markers: [
      `MX-PLAYING-${n}`,
      `MX-PLAYING-DETAILS-${n}`,
      `MX-PLAYING-STATE-${n}`,
      `MX-PLAYING-ASSET-${n}`,
      PLAY_APP,
    ],
    altMarkers: [`MX-PLAYING-ALT-${n}`],
    cardMarkers: [`MX-PLAYING-${n}`],
    historyMarkers: [],
    presence: (variant) => ({ status: 'online', activities: [game(variant)] }),
    give: (service) => drive(service, row.user, row.presence('original')),
    variant: true,
    shown: (presence) =>
      expect(activitiesOf(presence).map((activity) => activity.name)).toContain(`MX-PLAYING-${n}`),
    hiddenCheck: (presence) =>
      expect(activitiesOf(presence).filter((activity) => activity.type === 0)).toEqual([]),
  };
  return row;
}

function listeningRow(n: number): Row {
  const track = (variant: Variant) => ({
    song: variant === 'alt' ? `MX-LISTEN-ALT-${n}` : `MX-LISTEN-SONG-${n}`,
    artist: `MX-LISTEN-ARTIST-${n}`,
    album: `MX-LISTEN-ALBUM-${n}`,
    track: (variant === 'alt' ? `MXLISTENALT${n}` : `MXLISTENTRACK${n}`).padEnd(22, 'x'),
  });
  const apple = appleMusicActivity({
    title: `MX-LISTEN-APPLE-${n}`,
    artist: `MX-LISTEN-APPLE-ARTIST-${n}`,
    album: `MX-LISTEN-APPLE-ALBUM-${n}`,
    artworkUrl: 'https://is1-ssl.mzstatic.com/image/thumb/Music/2/100x100bb.jpg',
    albumSlug: 'album',
    albumId: '2000000002',
    trackId: '2000000003',
    start: SECOND_PLAY,
    end: SECOND_PLAY + SONG_MS,
    createdAt: SECOND_PLAY,
  });
  const row: Row = {
    title: 'hide_activity_types ["listening"] (now_playing, spotify, listening_to_* too)',
    user: userId(n),
    username: `listening_${n}`,
    twinStatus: 'online',
    patch: { hide_activity_types: ['listening'] },
    undo: { hide_activity_types: [] },
    hidden: ['activities:listening'],
    markers: [
      `MX-LISTEN-SONG-${n}`,
      `MX-LISTEN-ARTIST-${n}`,
      `MX-LISTEN-ALBUM-${n}`,
      track('original').track,
      `MX-LISTEN-APPLE-${n}`,
      `MX-LISTEN-APPLE-ARTIST-${n}`,
      `MX-LISTEN-APPLE-ALBUM-${n}`,
    ],
    altMarkers: [`MX-LISTEN-ALT-${n}`, track('alt').track],
    cardMarkers: [`MX-LISTEN-SONG-${n}`],
    historyMarkers: [`MX-LISTEN-SONG-${n}`, `MX-LISTEN-ARTIST-${n}`, track('original').track],
    presence: (variant) => ({ status: 'online', activities: [spotify(track(variant), SECOND_PLAY), apple] }),
    async give(service) {
      await drive(service, row.user, {
        status: 'online',
        activities: [spotify(track('original'), FIRST_PLAY), apple],
      });
      await drive(service, row.user, row.presence('original'));
    },
    variant: true,
    shown: (presence) => {
      expect(presence).toMatchObject({
        listening_to_spotify: true,
        listening_to_music: true,
        spotify: { track_id: track('original').track },
        now_playing: { song: `MX-LISTEN-SONG-${n}` },
      });
    },
    hiddenCheck: (presence) => {
      noMusic(presence);
      expect(activitiesOf(presence).filter((activity) => activity.type === 2)).toEqual([]);
    },
  };
  return row;
}

function applicationRow(n: number): Row {
  const song = (variant: Variant) => (variant === 'alt' ? `MX-APP-SONG-ALT-${n}` : `MX-APP-SONG-${n}`);
  const apple = (variant: Variant, start: number) =>
    appleMusicActivity({
      title: song(variant),
      artist: `MX-APP-ARTIST-${n}`,
      album: `MX-APP-ALBUM-${n}`,
      artworkUrl: 'https://is1-ssl.mzstatic.com/image/thumb/Music/3/100x100bb.jpg',
      albumSlug: `mx-app-slug-${n}`,
      albumId: '3000000002',
      trackId: '3000000003',
      start,
      end: start + SONG_MS,
      createdAt: start,
    });
  const game = (variant: Variant) =>
    gameActivity({
      name: variant === 'alt' ? `MX-APP-GAME-ALT-${n}` : `MX-APP-GAME-${n}`,
      applicationId: GAME_APP,
      createdAt: NOW,
    });
  const row: Row = {
    title: "hide_application_ids [a game's id, Apple Music's player]",
    user: userId(n),
    username: `application_${n}`,
    twinStatus: 'online',
    patch: { hide_application_ids: [GAME_APP, APPLE_MUSIC_APPLICATION_ID] },
    undo: { hide_application_ids: [] },
    hidden: ['applications'],
    markers: [
      `MX-APP-GAME-${n}`,
      GAME_APP,
      song('original'),
      `MX-APP-ARTIST-${n}`,
      `MX-APP-ALBUM-${n}`,
      `mx-app-slug-${n}`,
    ],
    altMarkers: [`MX-APP-GAME-ALT-${n}`, song('alt')],
    cardMarkers: [song('original')],
    historyMarkers: [song('original'), `MX-APP-ARTIST-${n}`],
    presence: (variant) => ({ status: 'online', activities: [game(variant), apple(variant, SECOND_PLAY)] }),
    async give(service) {
      await drive(service, row.user, {
        status: 'online',
        activities: [game('original'), apple('original', FIRST_PLAY)],
      });
      await drive(service, row.user, row.presence('original'));
    },
    variant: true,
    shown: (presence) => {
      const apps = activitiesOf(presence).map((activity) => activity.application_id);
      expect(apps).toEqual(expect.arrayContaining([GAME_APP, APPLE_MUSIC_APPLICATION_ID]));
      expect(presence).toMatchObject({ listening_to_music: true, now_playing: { song: song('original') } });
    },
    hiddenCheck: (presence) => {
      const apps = activitiesOf(presence).map((activity) => activity.application_id);
      expect(apps).not.toContain(GAME_APP);
      expect(apps).not.toContain(APPLE_MUSIC_APPLICATION_ID);
      noMusic(presence);
    },
  };
  return row;
}

function spotifyRow(n: number): Row {
  const track = (variant: Variant) => ({
    song: variant === 'alt' ? `MX-SPOTIFY-ALT-${n}` : `MX-SPOTIFY-SONG-${n}`,
    artist: `MX-SPOTIFY-ARTIST-${n}`,
    album: `MX-SPOTIFY-ALBUM-${n}`,
    track: (variant === 'alt' ? `MXSPOTIFYALT${n}` : `MXSPOTIFYTRACK${n}`).padEnd(22, 'x'),
  });
  const row: Row = {
    title: 'hide_music_sources ["spotify"]',
    user: userId(n),
    username: `spotify_${n}`,
    twinStatus: 'online',
    patch: { hide_music_sources: ['spotify'] },
    undo: { hide_music_sources: [] },
    hidden: ['activities:spotify'],
    markers: [
      `MX-SPOTIFY-SONG-${n}`,
      `MX-SPOTIFY-ARTIST-${n}`,
      `MX-SPOTIFY-ALBUM-${n}`,
      track('original').track,
    ],
    altMarkers: [`MX-SPOTIFY-ALT-${n}`, track('alt').track],
    cardMarkers: [`MX-SPOTIFY-SONG-${n}`],
    historyMarkers: [`MX-SPOTIFY-SONG-${n}`, `MX-SPOTIFY-ARTIST-${n}`, track('original').track],
    presence: (variant) => ({ status: 'online', activities: [spotify(track(variant), SECOND_PLAY)] }),
    async give(service) {
      await drive(service, row.user, {
        status: 'online',
        activities: [spotify(track('original'), FIRST_PLAY)],
      });
      await drive(service, row.user, row.presence('original'));
    },
    variant: true,
    shown: (presence) =>
      expect(presence).toMatchObject({
        listening_to_spotify: true,
        spotify: { track_id: track('original').track },
      }),
    hiddenCheck: (presence) => {
      noMusic(presence);
      expect(activitiesOf(presence).map((activity) => activity.id)).not.toContain('spotify:1');
    },
  };
  return row;
}

function customStatusRow(n: number): Row {
  const text = (variant: Variant) => (variant === 'alt' ? `MX-CUSTOM-ALT-${n}` : `MX-CUSTOM-${n}`);
  const row: Row = {
    title: 'hide_custom_status',
    user: userId(n),
    username: `custom_${n}`,
    twinStatus: 'online',
    patch: { hide_custom_status: true },
    undo: { hide_custom_status: false },
    hidden: ['custom_status'],
    markers: [text('original')],
    altMarkers: [text('alt')],
    cardMarkers: [text('original')],
    historyMarkers: [],
    presence: (variant) => ({
      status: 'online',
      activities: [customStatusActivity({ text: text(variant), createdAt: NOW })],
    }),
    give: (service) => drive(service, row.user, row.presence('original')),
    variant: true,
    shown: (presence) => expect(presence.custom_status).toMatchObject({ text: text('original') }),
    hiddenCheck: (presence) => {
      expect(presence.custom_status).toBeNull();
      expect(activitiesOf(presence).filter((activity) => activity.type === 4)).toEqual([]);
    },
  };
  return row;
}

/** Platforms nobody else in the world is on: their `true` is this row's marker. */
const RARE_PLATFORMS = ['mobile', 'web', 'embedded', 'vr'] as const;

function platformsRow(n: number): Row {
  const everywhere = Object.fromEntries(RARE_PLATFORMS.map((platform) => [platform, 'online']));
  const row: Row = {
    title: 'hide_platforms (every active_on_* false)',
    user: userId(n),
    username: `platforms_${n}`,
    twinStatus: 'online',
    patch: { hide_platforms: true },
    undo: { hide_platforms: false },
    hidden: ['platforms'],
    markers: RARE_PLATFORMS.map((platform) => `"active_on_discord_${platform}":true`),
    altMarkers: [],
    cardMarkers: [],
    historyMarkers: [],
    presence: (variant) => ({
      status: 'online',
      client_status: (variant === 'alt'
        ? { mobile: 'online' }
        : everywhere) as PresenceInput['client_status'],
    }),
    give: (service) => drive(service, row.user, row.presence('original')),
    variant: true,
    shown: (presence) => {
      for (const platform of RARE_PLATFORMS)
        expect(presence[`active_on_discord_${platform}`], platform).toBe(true);
    },
    hiddenCheck: noPlatforms,
  };
  return row;
}

const PROFILE_FIELDS_OF_USER = [
  'banner',
  'banner_color',
  'accent_color',
  'avatar_decoration_data',
  'collectibles',
  'primary_guild',
  'clan',
];

function profileRow(n: number): Row {
  const badge = `bad6e0${String(n % 10).repeat(26)}`;
  const decoration = `deca1de0${String(n % 10).repeat(24)}`;
  // A server tag is four characters at most (the card shows no more); a dash is in no base64 image or font.
  const tag = (variant: Variant) => (variant === 'alt' ? `MX~${n}` : `MX-${n}`);
  const accent = 0x6a5b00 + n;
  const profileUser = (variant: Variant) => ({
    id: userId(n),
    primary_guild: { identity_guild_id: GUILD, identity_enabled: true, tag: tag(variant), badge },
    avatar_decoration_data: { asset: decoration, sku_id: '1144058844004233369', expires_at: null },
    collectibles: {
      nameplate: {
        asset: `nameplates/nameplates/mxprofileplate${n}/`,
        label: '',
        palette: 'cobalt',
        sku_id: '1349486948942745691',
        expires_at: null,
      },
    },
  });
  const row: Row = {
    title: 'hide_profile (server tag, decoration, nameplate, banner, accent, member_since)',
    user: userId(n),
    username: `profile_${n}`,
    twinStatus: 'online',
    patch: { hide_profile: true },
    undo: { hide_profile: false },
    hidden: ['profile'],
    markers: [
      tag('original'),
      badge,
      decoration,
      `mxprofileplate${n}`,
      `mxprofilebanner${n}`,
      `"accent_color":${accent}`,
    ],
    altMarkers: [tag('alt')],
    cardMarkers: [tag('original')],
    historyMarkers: [],
    presence: () => ({ status: 'online' }),
    async give(service) {
      // The banner and accent colour come from GET /users/:id, fetched as the user is first seen.
      await eventually(async () =>
        expect(dataOf(await presenceRead(service.base, row.user)).banner).toBe(`mxprofilebanner${n}`),
      );
      const before = (await presenceRead(service.base, row.user)).text;
      service.sim.updateUser(profileUser('original') as never);
      await eventually(async () =>
        expect((await presenceRead(service.base, row.user)).text).not.toBe(before),
      );
    },
    async swap(service, variant) {
      service.sim.updateUser(profileUser(variant) as never);
    },
    variant: true,
    shown: (presence) => {
      expect(presence).toMatchObject({
        banner: `mxprofilebanner${n}`,
        accent_color: accent,
        member_since: expect.any(Number),
        discord_user: {
          primary_guild: { tag: tag('original') },
          avatar_decoration_data: { asset: decoration },
        },
      });
    },
    hiddenCheck: (presence) => {
      expect(presence).toMatchObject({
        banner: null,
        banner_url: null,
        accent_color: null,
        member_since: null,
      });
      const user = Object.keys(field<object>(presence, 'discord_user'));
      for (const name of PROFILE_FIELDS_OF_USER) expect(user, name).not.toContain(name);
    },
  };
  return row;
}

function kvRow(n: number): Row {
  const key = `MX_KV_KEY_${n}`;
  const value = (variant: Variant) => (variant === 'alt' ? `MX-KV-ALT-${n}` : `MX-KV-VALUE-${n}`);
  const row: Row = {
    title: 'hide_kv (written with PUT /v1/users/@me/kv/:key)',
    user: userId(n),
    username: `kv_${n}`,
    twinStatus: 'online',
    patch: { hide_kv: true },
    undo: { hide_kv: false },
    hidden: ['kv'],
    markers: [key, value('original')],
    altMarkers: [value('alt')],
    cardMarkers: [],
    historyMarkers: [],
    presence: () => ({ status: 'online' }),
    async give(service) {
      const before = (await presenceRead(service.base, row.user)).text;
      await putKv(service, row.user, key, value('original'));
      await eventually(async () =>
        expect((await presenceRead(service.base, row.user)).text).not.toBe(before),
      );
    },
    swap: (service, variant) => putKv(service, row.user, key, value(variant)),
    variant: true,
    shown: (presence) => expect(presence.kv).toEqual({ [key]: value('original') }),
    hiddenCheck: (presence) => expect(presence.kv).toEqual({}),
  };
  return row;
}

function pauseRow(n: number): Row {
  const track = {
    song: `MX-PAUSE-SONG-${n}`,
    artist: `MX-PAUSE-ARTIST-${n}`,
    album: `MX-PAUSE-ALBUM-${n}`,
    track: `MXPAUSETRACK${n}`.padEnd(22, 'x'),
  };
  const others = [
    gameActivity({ name: `MX-PAUSE-GAME-${n}`, applicationId: PLAY_APP, createdAt: NOW }),
    customStatusActivity({ text: `MX-PAUSE-STATUS-${n}`, createdAt: NOW }),
  ];
  const row: Row = {
    title: 'paused_until (in the future: offline, nothing shown)',
    user: userId(n),
    username: `paused_${n}`,
    twinStatus: 'offline',
    patch: { paused_until: PAUSED_UNTIL },
    undo: { paused_until: null },
    hidden: ['paused'],
    markers: [
      track.song,
      track.artist,
      track.album,
      track.track,
      `MX-PAUSE-GAME-${n}`,
      `MX-PAUSE-STATUS-${n}`,
    ],
    altMarkers: [],
    cardMarkers: [`MX-PAUSE-STATUS-${n}`, track.song],
    historyMarkers: [track.song, track.artist, track.track],
    presence: () => ({ status: 'online', activities: [spotify(track, SECOND_PLAY), ...others] }),
    async give(service) {
      await drive(service, row.user, {
        status: 'online',
        activities: [spotify(track, FIRST_PLAY), ...others],
      });
      await drive(service, row.user, row.presence('original'));
    },
    variant: false,
    shown: (presence) => {
      expect(presence.discord_status).toBe('online');
      expect(presence.active_on_discord_desktop).toBe(true);
      expect(activitiesOf(presence)).toHaveLength(3);
    },
    hiddenCheck: (presence) => {
      expect(presence).toMatchObject({ discord_status: 'offline', activities: [], custom_status: null });
      noMusic(presence);
      noPlatforms(presence);
    },
  };
  return row;
}

// ---- one row, every column -----------------------------------------------------------------------------

/** The member as the world starts: online, nothing given yet. */
const memberOf = (id: string, username: string, status: 'online' | 'offline' = 'online'): MemberInput => ({
  user: { id, username, global_name: username.toUpperCase(), avatar: null },
  ...(status === 'online' ? { presence: { status: 'online' } } : {}),
});

interface RowState {
  twin: string;
  idSockets: SocketTap[];
  streams: SseTap[];
  webhook: WebhookTap | null;
  /** Every consumer that is open through the row: the row's own and the `subscribe_to_all` sockets. */
  live: Tap[];
  hideMarks: Map<Tap, Mark>;
  patchedAt: number;
  /** Before the setting. */
  etag: string;
  body: Buffer;
  bulkEtag: string;
  /** The multi-user stream's last event id before the data was given: a resume from there replays it. */
  resumeFrom: string;
}

function matrixRow(row: Row, service: () => Service, columns: Columns): void {
  const card = columns.card && row.cardMarkers.length > 0;
  const history = columns.history && row.historyMarkers.length > 0;
  describe(row.title, () => {
    const s = { idSockets: [], streams: [], webhook: null, live: [] } as unknown as RowState;
    const opened: Tap[] = [];
    afterAll(() => {
      for (const tap of opened) tap.close();
    });
    const socketsOf = (svc: Service): Tap[] => [...svc.all, ...s.idSockets];
    const liveStreams = (): Tap[] => [...s.streams];

    it('before the setting, the data is in every consumer (positive control)', async () => {
      const svc = service();
      s.twin = twinOf(row.user);
      for (const [name, zlib] of [
        ['socket subscribe_to_id (JSON)', false],
        ['socket subscribe_to_id (zlib_json)', true],
      ] as const) {
        s.idSockets.push(await SocketTap.open(svc.base, name, zlib, { subscribe_to_id: row.user }));
      }
      if (columns.sse) {
        s.streams.push(
          await SseTap.opened(svc.base, 'SSE /v1/users/:id/events', `/v1/users/${row.user}/events`),
        );
        const multi = await SseTap.opened(
          svc.base,
          'SSE /v1/events?ids=',
          `/v1/events?ids=${row.user},${s.twin}`,
        );
        s.streams.push(multi);
        s.resumeFrom = multi.reader.lastEventId;
      }
      if (columns.webhooks) s.webhook = new WebhookTap('webhooks', svc.receiver as WebhookReceiver, row.user);
      opened.push(...s.idSockets, ...s.streams);
      s.live = [...socketsOf(svc), ...liveStreams(), ...(s.webhook ? [s.webhook] : [])];
      const start = marksOf(s.live);

      await row.give(svc);

      const rest = await presenceRead(svc.base, row.user);
      expectAll('REST body', rest.text, row.markers);
      row.shown(dataOf(rest));
      s.etag = rest.etag as string;
      s.body = rest.bytes;
      const bulk = await read(svc.base, `/v1/users?ids=${row.user},${s.twin}`);
      expectAll('bulk body', bulk.text, row.markers);
      s.bulkEtag = bulk.etag as string;
      await expectShownLive(s.live, start, row);

      if (card) {
        expectAll('card.svg', (await cardOf(svc, row.user, 'svg')).text, row.cardMarkers);
        const [own, twin] = await Promise.all([cardOf(svc, row.user, 'png'), cardOf(svc, s.twin, 'png')]);
        expect(own.bytes.equals(twin.bytes), 'card.png differs from the twin without the data').toBe(false);
      }
      if (history) {
        await eventually(async () => {
          await svc.flushHistory?.();
          const texts = await historyTexts(svc, row.user);
          expectAll('history', texts.history, row.historyMarkers);
          expectAll('top tracks', texts.topTracks, row.historyMarkers);
          expect(JSON.parse(texts.stats).data.track_history_count).toBeGreaterThan(0);
        });
      }
    });

    it('PATCH: every live socket and stream gets the update it causes within a second, without the data (socket JSON and zlib_json, subscribe_to_id and subscribe_to_all; SSE of one id and of several)', async () => {
      const svc = service();
      s.hideMarks = marksOf(s.live);
      s.patchedAt = performance.now();
      await patchPrivacy(svc, row.user, row.patch);
      await expectHiddenLive([...socketsOf(svc), ...liveStreams()], s.hideMarks, row, left(s.patchedAt));
    });

    it('REST GET /v1/users/:id: the body, and an ETag that is the digest of the bytes answered', async () => {
      const svc = service();
      const rest = svc.settled
        ? await presenceRead(svc.base, row.user)
        : await eventually(async () => {
            const answer = await presenceRead(svc.base, row.user);
            expect(dataOf(answer).privacy).toEqual({ hidden: row.hidden });
            return answer;
          }, left(s.patchedAt));
      expectNone('REST body', rest.text, row.markers);
      expectNone('REST headers', headersText(rest), row.markers);
      const data = dataOf(rest);
      expect(data.privacy).toEqual({ hidden: row.hidden });
      row.hiddenCheck(data);
      expect(rest.etag, 'the ETag changed when the data was hidden').not.toBe(s.etag);
      // A digest of what was answered, nothing else: the hidden data cannot be in it.
      expect(rest.etag).toBe(digestEtag(bodyDigest(rest.bytes).toString('base64url')));
      expect((await read(svc.base, `/v1/users/${row.user}`, { 'if-none-match': s.etag })).status).toBe(200);
      expect(
        (await read(svc.base, `/v1/users/${row.user}`, { 'if-none-match': rest.etag as string })).status,
      ).toBe(304);
    });

    it('bulk GET /v1/users?ids=: the body, and an ETag made of the two users’ own', async () => {
      const svc = service();
      const [bulk, own, twin] = await Promise.all([
        read(svc.base, `/v1/users?ids=${row.user},${s.twin}`),
        presenceRead(svc.base, row.user),
        presenceRead(svc.base, s.twin),
      ]);
      expect(bulk.status).toBe(200);
      expectNone('bulk body', bulk.text, row.markers);
      const data = (JSON.parse(bulk.text) as { data: Record<string, PresenceJson> }).data;
      expect(Object.keys(data)).toEqual([row.user, s.twin]);
      row.hiddenCheck(data[row.user] as PresenceJson);
      // Each user's part is the bytes their own read answers.
      expect(bulk.text).toContain(JSON.stringify(dataOf(own)));
      expect(bulk.etag).not.toBe(s.bulkEtag);
      expect(bulk.etag).toBe(
        bulkEtagOf([
          [row.user, own.etag as string],
          [s.twin, twin.etag as string],
        ]),
      );
    });

    it('socket INIT_STATE after the change (JSON and zlib_json; subscribe_to_id and subscribe_to_all)', async () => {
      const svc = service();
      for (const zlib of [false, true]) {
        for (const d of [{ subscribe_to_id: row.user }, { subscribe_to_all: true }]) {
          const name = `INIT_STATE ${JSON.stringify(d)} (${zlib ? 'zlib_json' : 'JSON'})`;
          const tap = await SocketTap.open(svc.base, name, zlib, d);
          try {
            expectNone(name, tap.initText(), row.markers);
            expectNone(`${name}, the bytes on the wire`, tap.text(), row.markers);
            const presences = tap.presences(row.user);
            expect(presences, name).toHaveLength(1);
            expect((presences[0] as PresenceJson).privacy).toEqual({ hidden: row.hidden });
            row.hiddenCheck(presences[0] as PresenceJson);
          } finally {
            tap.close();
          }
        }
      }
    });

    cellIf(columns.sse)(
      'SSE: a stream opened after the change, of one id and of several, without the data',
      async () => {
        const svc = service();
        for (const [name, path] of [
          ['new SSE /v1/users/:id/events', `/v1/users/${row.user}/events`],
          ['new SSE /v1/events?ids=', `/v1/events?ids=${row.user},${s.twin}`],
        ] as const) {
          const tap = await SseTap.opened(svc.base, name, path);
          try {
            expectNone(name, tap.text(), row.markers);
            const presences = tap.presences(row.user);
            expect(presences, name).toHaveLength(1);
            row.hiddenCheck(presences[0] as PresenceJson);
          } finally {
            tap.close();
          }
        }
      },
    );

    cellIf(columns.sse)(
      'SSE: a stream resuming (Last-Event-ID) from before the data was given is not replayed it',
      async () => {
        const svc = service();
        // The newest event id now, from a stream of someone else: a resumed stream's opening ends there.
        const probe = await SseTap.opened(svc.base, 'probe', `/v1/events?ids=${s.twin}`);
        const head = probe.reader.lastEventId;
        probe.close();
        const name = `SSE /v1/events resumed from ${s.resumeFrom}`;
        const resumed = await SseTap.open(
          svc.base,
          name,
          `/v1/events?ids=${row.user},${s.twin}&last_event_id=${encodeURIComponent(s.resumeFrom)}`,
        );
        try {
          expect(resumed.reader.status).toBe(200);
          await resumed.reader.waitFor(
            () => resumed.reader.lastEventId === head,
            'the end of the resumed opening',
          );
          expectNone(name, resumed.text(), row.markers);
          // It missed the change, so it is sent the user: as they are now.
          expect(resumed.presences(row.user).length, name).toBeGreaterThan(0);
          for (const presence of resumed.presences(row.user)) row.hiddenCheck(presence);
        } finally {
          resumed.close();
        }
      },
    );

    cellIf(columns.webhooks)(
      'webhooks: the events delivered after the change (presence, now_playing, kv)',
      async () => {
        const webhook = s.webhook as WebhookTap;
        // The change renders the presence again: its owner's webhook hears of it, without the data.
        await eventually(() => {
          const latest = webhook.presences(row.user, s.hideMarks.get(webhook)).at(-1);
          expect(latest, 'the presence event the change caused').toBeDefined();
          expect((latest as PresenceJson).privacy).toEqual({ hidden: row.hidden });
        });
        expectNothingSince([webhook], s.hideMarks, row);
      },
    );

    cellIf(card)('card: SVG without the data, PNG as the card of a twin who never had it', async () => {
      const svc = service();
      const svg = await cardOf(svc, row.user, 'svg');
      expect(svg.status).toBe(200);
      expectNone('card.svg', svg.text, row.markers);
      expectNone('card.svg headers', headersText(svg), row.markers);
      await eventually(async () => {
        const [own, twin] = await Promise.all([cardOf(svc, row.user, 'png'), cardOf(svc, s.twin, 'png')]);
        expect(own.response.headers.get('content-type')).toBe('image/png');
        expect(own.bytes.equals(twin.bytes), 'card.png equals the twin’s, who never had the data').toBe(true);
      });
    });

    cellIf(history)('history, stats and top tracks leave the hidden plays out', async () => {
      const svc = service();
      await svc.flushHistory?.();
      const texts = await historyTexts(svc, row.user);
      expectNone('history', texts.history, row.markers);
      expectNone('top tracks', texts.topTracks, row.markers);
      const history = JSON.parse(texts.history).data;
      expect(history.track_history).toEqual([]);
      expect(JSON.parse(texts.topTracks).data.top_tracks).toEqual([]);
      expect(JSON.parse(texts.stats).data).toMatchObject({ track_history_count: 0, tracks_today: 0 });
    });

    cellIf(columns.variant && row.variant)(
      'ETag: the body and its ETag are the same whatever the hidden data is',
      async () => {
        const svc = service();
        const before = await presenceRead(svc.base, row.user);
        // Swaps the hidden data, then steps the twin's status away and back: its updates follow the user's
        // on the same connection, so once the step back is read, the swap has been taken in. (Stepping the
        // user's own status would be a change Discord reported: a new `observed_at`, a new ETag.)
        const swapTo = async (variant: Variant) => {
          await row.swap?.(svc, variant);
          svc.sim.setPresence(row.user, row.presence(variant));
          svc.sim.setPresence(s.twin, { status: 'dnd' });
          await untilStatus(svc, s.twin, 'dnd');
          svc.sim.setPresence(s.twin, { status: row.twinStatus });
          await untilStatus(svc, s.twin, row.twinStatus);
        };
        await swapTo('alt');
        const during = await presenceRead(svc.base, row.user);
        expect(during.text).toBe(before.text);
        expect(during.etag).toBe(before.etag);
        await swapTo('original');
        expect((await presenceRead(svc.base, row.user)).etag).toBe(before.etag);
      },
    );

    it('undo: nothing leaked meanwhile, and the data comes back live everywhere', async () => {
      const svc = service();
      // Everything every live consumer received while the setting held, the swapped data included.
      expectNothingSince(s.live, s.hideMarks, row);
      const undoMarks = marksOf(s.live);
      const patchedAt = performance.now();
      await patchPrivacy(svc, row.user, row.undo);
      await expectShownLive([...socketsOf(svc), ...liveStreams()], undoMarks, row, left(patchedAt));
      if (s.webhook) await expectShownLive([s.webhook], undoMarks, row);
      await eventually(
        async () => {
          const rest = await presenceRead(svc.base, row.user);
          // Byte for byte what it was before the setting, and so its ETag.
          expect(rest.text).toBe(s.body.toString('utf8'));
          expect(rest.etag).toBe(s.etag);
        },
        svc.settled ? 1 : left(patchedAt),
      );
      if (card) {
        expectAll('card.svg after the undo', (await cardOf(svc, row.user, 'svg')).text, row.cardMarkers);
      }
      if (history) {
        expectAll('history after the undo', (await historyTexts(svc, row.user)).history, row.historyMarkers);
      }
      if (s.webhook && row.hidden.includes('kv')) {
        // The KV writes made while it was hidden sent no kv event: the first after the undo is the next one.
        const webhook = s.webhook;
        const [key = ''] = row.markers;
        await putKv(svc, row.user, key, 'after the undo');
        await eventually(() => expect(webhook.kvEvents(s.hideMarks.get(webhook)).length).toBeGreaterThan(0));
        expect(webhook.kvEvents(s.hideMarks.get(webhook))).toEqual([{ [key]: 'after the undo' }]);
      }
      for (const tap of [...s.idSockets, ...s.streams]) tap.close();
    });
  });
}

// ---- the private row -----------------------------------------------------------------------------------

interface PrivateRow {
  user: string;
  /** A neighbour in the same guild, asked for beside the user. */
  other: string;
  markers: string[];
  kv: [string, string];
  historyMarkers: string[];
  cardMarkers: string[];
  presence: PresenceInput;
  firstPlay: PresenceInput;
  member: MemberInput;
}

function privateRowData(n: number): PrivateRow {
  const track = {
    song: `MX-PRIVATE-SONG-${n}`,
    artist: `MX-PRIVATE-ARTIST-${n}`,
    album: `MX-PRIVATE-ALBUM-${n}`,
    track: `MXPRIVATETRACK${n}`.padEnd(22, 'x'),
  };
  const others = [
    gameActivity({ name: `MX-PRIVATE-GAME-${n}`, applicationId: PLAY_APP, createdAt: NOW }),
    customStatusActivity({ text: `MX-PRIVATE-STATUS-${n}`, createdAt: NOW }),
  ];
  const user = userId(n);
  return {
    user,
    other: twinOf(user),
    markers: [
      `mx_private_user_${n}`,
      `MX PRIVATE NAME ${n}`,
      track.song,
      track.artist,
      track.album,
      track.track,
      `MX-PRIVATE-GAME-${n}`,
      `MX-PRIVATE-STATUS-${n}`,
      `MX_PRIVATE_KEY_${n}`,
      `MX-PRIVATE-VALUE-${n}`,
    ],
    kv: [`MX_PRIVATE_KEY_${n}`, `MX-PRIVATE-VALUE-${n}`],
    historyMarkers: [track.song, track.artist, track.track],
    cardMarkers: [`mx_private_user_${n}`, `MX-PRIVATE-STATUS-${n}`],
    presence: { status: 'online', activities: [spotify(track, SECOND_PLAY), ...others] },
    firstPlay: { status: 'online', activities: [spotify(track, FIRST_PLAY), ...others] },
    member: {
      user: { id: user, username: `mx_private_user_${n}`, global_name: `MX PRIVATE NAME ${n}`, avatar: null },
      presence: { status: 'online' },
    },
  };
}

interface Unmonitored {
  rest: Read;
  /** The avatar link, `/:id.png`. */
  avatar: Read;
  initState: string[];
  stream: Read | null;
  svg: Buffer | null;
  png: Buffer | null;
  history: HistoryTexts | null;
}

/** What anyone is answered for `id` while nobody monitors it. */
async function unmonitoredAnswers(svc: Service, id: string, columns: Columns): Promise<Unmonitored> {
  const rest = await read(svc.base, `/v1/users/${id}`);
  expect(rest.status).toBe(404);
  const avatar = await read(svc.base, `/${id}.png`);
  expect(avatar.status).toBe(404);
  const initState: string[] = [];
  for (const zlib of [false, true]) {
    const tap = await SocketTap.open(svc.base, 'baseline', zlib, { subscribe_to_id: id });
    initState.push(tap.initText());
    tap.close();
  }
  return {
    rest,
    avatar,
    initState,
    stream: columns.sse ? await read(svc.base, `/v1/users/${id}/events`) : null,
    svg: columns.card ? (await cardOf(svc, id, 'svg')).bytes : null,
    png: columns.card ? (await cardOf(svc, id, 'png')).bytes : null,
    history: columns.history ? await historyTexts(svc, id) : null,
  };
}

function privateRow(row: PrivateRow, service: () => Service, columns: Columns): void {
  describe('visibility "private" (the user vanishes: answered as an id nobody monitors)', () => {
    let baseline: Unmonitored;
    const idSockets: SocketTap[] = [];
    const streams: SseTap[] = [];
    let webhook: WebhookTap | null = null;
    let live: Tap[] = [];
    let hideMarks: Map<Tap, Mark>;
    let body: string;
    let resumeFrom = '';
    /** The user's id is no marker where it was asked for; everywhere else it is one. */
    const markersAndId = [...row.markers, row.user];
    afterAll(() => {
      for (const tap of [...idSockets, ...streams]) tap.close();
    });
    const streamsOf = (taps: readonly Tap[]) => taps.filter((tap) => tap instanceof SseTap);

    it('before it is monitored: what its id is answered (the baseline it must be answered again)', async () => {
      const svc = service();
      baseline = await unmonitoredAnswers(svc, row.user, columns);
      svc.sim.addMember(GUILD, row.member);
      await eventually(async () => expect((await read(svc.base, `/v1/users/${row.user}`)).status).toBe(200));
    });

    it('before the setting, the data is in every consumer (positive control)', async () => {
      const svc = service();
      for (const zlib of [false, true]) {
        const name = `socket subscribe_to_id (${zlib ? 'zlib_json' : 'JSON'})`;
        idSockets.push(await SocketTap.open(svc.base, name, zlib, { subscribe_to_id: row.user }));
      }
      if (columns.sse) {
        streams.push(
          await SseTap.opened(svc.base, 'SSE /v1/users/:id/events', `/v1/users/${row.user}/events`),
        );
        const multi = await SseTap.opened(
          svc.base,
          'SSE /v1/events?ids=',
          `/v1/events?ids=${row.user},${row.other}`,
        );
        streams.push(multi);
        resumeFrom = multi.reader.lastEventId;
      }
      if (columns.webhooks) webhook = new WebhookTap('webhooks', svc.receiver as WebhookReceiver, row.user);
      live = [...svc.all, ...idSockets, ...streams, ...(webhook ? [webhook] : [])];
      const start = marksOf(live);

      await drive(svc, row.user, row.firstPlay);
      await drive(svc, row.user, row.presence);
      const before = (await presenceRead(svc.base, row.user)).text;
      await putKv(svc, row.user, row.kv[0], row.kv[1]);
      await eventually(async () => expect((await presenceRead(svc.base, row.user)).text).not.toBe(before));

      const rest = await presenceRead(svc.base, row.user);
      expectAll('REST body', rest.text, row.markers);
      body = rest.text;
      expectAll(
        'bulk body',
        (await read(svc.base, `/v1/users?ids=${row.user},${row.other}`)).text,
        row.markers,
      );
      await Promise.all(
        live.map((tap) =>
          eventually(() => {
            expectAll(tap.name, tap.text(start.get(tap)), row.markers);
            expect(tap.presences(row.user, start.get(tap)).length, tap.name).toBeGreaterThan(0);
          }),
        ),
      );
      if (columns.card) expectAll('card.svg', (await cardOf(svc, row.user, 'svg')).text, row.cardMarkers);
      if (columns.history) {
        await eventually(async () => {
          await svc.flushHistory?.();
          const texts = await historyTexts(svc, row.user);
          expectAll('history', texts.history, row.historyMarkers);
          expectAll('top tracks', texts.topTracks, row.historyMarkers);
        });
      }
    });

    it('PATCH: no socket or stream is sent anything more of the user, nor anything naming them', async () => {
      const svc = service();
      hideMarks = marksOf(live);
      await patchPrivacy(svc, row.user, { visibility: 'private' });
      // Whatever the change made the service write was written before the PATCH was answered: a ping
      // answered after it, and the neighbour's next update, come after it on the same connections.
      for (const tap of idSockets) await tap.barrier();
      const sentinel = marksOf(live);
      svc.sim.setPresence(row.other, { status: 'dnd' });
      const hearOther = [...svc.all, ...streamsOf(live).filter((tap) => tap.name.includes('ids='))];
      await Promise.all(
        hearOther.map((tap) =>
          eventually(() =>
            expect(tap.presences(row.other, sentinel.get(tap)).at(-1)?.discord_status).toBe('dnd'),
          ),
        ),
      );
      svc.sim.setPresence(row.other, { status: 'online' });
      await untilStatus(svc, row.other, 'online');
      for (const tap of live.filter((tap) => tap !== webhook)) {
        expect(tap.presences(row.user, hideMarks.get(tap)), tap.name).toEqual([]);
        expectNone(`${tap.name} since the change`, tap.text(hideMarks.get(tap)), markersAndId);
      }
    });

    it('REST GET /v1/users/:id and the avatar link: 404, byte for byte and header for header as before it was monitored', async () => {
      const svc = service();
      for (const [path, before] of [
        [`/v1/users/${row.user}`, baseline.rest],
        [`/${row.user}.png`, baseline.avatar],
      ] as const) {
        const answer = await read(svc.base, path);
        expect(answer.status, path).toBe(404);
        expect(answer.text, path).toBe(before.text);
        expect(comparableHeaders(answer.response), path).toEqual(comparableHeaders(before.response));
        expectNone(path, answer.text, row.markers);
      }
    });

    it('bulk GET /v1/users?ids=: left out, with the ETag of a read that never asked for it', async () => {
      const svc = service();
      const [bulk, alone] = await Promise.all([
        read(svc.base, `/v1/users?ids=${row.user},${row.other}`),
        read(svc.base, `/v1/users?ids=${row.other}`),
      ]);
      expect(Object.keys((JSON.parse(bulk.text) as { data: object }).data)).toEqual([row.other]);
      expectNone('bulk body', bulk.text, markersAndId);
      expect(bulk.text).toBe(alone.text);
      expect(bulk.etag).toBe(alone.etag);
    });

    it('socket INIT_STATE: as for an id nobody monitors (JSON and zlib_json), and left out of subscribe_to_all', async () => {
      const svc = service();
      for (const [index, zlib] of [false, true].entries()) {
        const single = await SocketTap.open(svc.base, 'INIT_STATE subscribe_to_id', zlib, {
          subscribe_to_id: row.user,
        });
        const all = await SocketTap.open(svc.base, 'INIT_STATE subscribe_to_all', zlib, {
          subscribe_to_all: true,
        });
        try {
          expect(single.initText()).toBe(baseline.initState[index]);
          expectNone(`${all.name} (${zlib ? 'zlib_json' : 'JSON'})`, all.initText(), markersAndId);
          expectNone(`${all.name}, the bytes on the wire`, all.text(), markersAndId);
          expect(Object.keys(all.init.d as object)).toContain(row.other);
        } finally {
          single.close();
          all.close();
        }
      }
    });

    cellIf(columns.sse)(
      'SSE: its stream is refused as an unknown id’s, and /v1/events leaves it out',
      async () => {
        const svc = service();
        const stream = baseline.stream as Read;
        const refused = await read(svc.base, `/v1/users/${row.user}/events`);
        expect(refused.status).toBe(stream.status);
        expect(refused.text).toBe(stream.text);
        const fresh = await SseTap.opened(
          svc.base,
          'new SSE /v1/events?ids=',
          `/v1/events?ids=${row.user},${row.other}`,
        );
        try {
          expectNone(fresh.name, fresh.text(), markersAndId);
          expect(fresh.presences(row.other)).toHaveLength(1);
        } finally {
          fresh.close();
        }
      },
    );

    cellIf(columns.sse)(
      'SSE: a stream resuming (Last-Event-ID) from before it went private is not replayed it',
      async () => {
        const svc = service();
        const probe = await SseTap.opened(svc.base, 'probe', `/v1/events?ids=${row.other}`);
        const head = probe.reader.lastEventId;
        probe.close();
        const name = `SSE /v1/events resumed from ${resumeFrom}`;
        const resumed = await SseTap.open(
          svc.base,
          name,
          `/v1/events?ids=${row.user},${row.other}&last_event_id=${encodeURIComponent(resumeFrom)}`,
        );
        try {
          await resumed.reader.waitFor(
            () => resumed.reader.lastEventId === head,
            'the end of the resumed opening',
          );
          expectNone(name, resumed.text(), markersAndId);
        } finally {
          resumed.close();
        }
      },
    );

    cellIf(columns.webhooks)(
      'webhooks: its own keep delivering (documented: they are the user’s), and nothing reaches anyone else',
      async () => {
        const svc = service();
        const hook = webhook as WebhookTap;
        const mark = hook.mark();
        svc.sim.setPresence(row.user, { ...row.presence, status: 'dnd' });
        await eventually(() => expect(hook.presences(row.user, mark).at(-1)?.discord_status).toBe('dnd'));
        svc.sim.setPresence(row.user, row.presence);
        await eventually(() => expect(hook.presences(row.user, mark).at(-1)?.discord_status).toBe('online'));
        // Those two changes went to the owner alone: no socket or stream heard of them.
        for (const tap of live.filter((tap) => tap !== hook)) {
          expect(tap.presences(row.user, hideMarks.get(tap)), tap.name).toEqual([]);
        }
      },
    );

    cellIf(columns.card)('card: the not-monitored card, SVG and PNG byte for byte', async () => {
      const svc = service();
      const [svg, png] = await Promise.all([cardOf(svc, row.user, 'svg'), cardOf(svc, row.user, 'png')]);
      expectNone('card.svg', svg.text, row.markers);
      expect(svg.bytes.equals(baseline.svg as Buffer), 'card.svg is the not-monitored card').toBe(true);
      expect(png.bytes.equals(baseline.png as Buffer), 'card.png is the not-monitored card').toBe(true);
    });

    cellIf(columns.history)('history, stats and top tracks: as for an unknown id', async () => {
      const svc = service();
      await svc.flushHistory?.();
      const texts = await historyTexts(svc, row.user);
      expectNone('history', texts.history, row.markers);
      expectNone('top tracks', texts.topTracks, row.markers);
      expect(texts).toEqual(baseline.history);
    });

    it('undo ("public"): nothing leaked meanwhile, and the user comes back live everywhere', async () => {
      const svc = service();
      for (const tap of live.filter((tap) => tap !== webhook)) {
        expect(tap.presences(row.user, hideMarks.get(tap)), tap.name).toEqual([]);
        expectNone(`${tap.name} while private`, tap.text(hideMarks.get(tap)), markersAndId);
      }
      const marks = marksOf(live);
      const patchedAt = performance.now();
      await patchPrivacy(svc, row.user, { visibility: 'public' });
      await Promise.all(
        live
          .filter((tap) => tap !== webhook)
          .map((tap) =>
            eventually(() => {
              expectAll(tap.name, tap.text(marks.get(tap)), row.markers);
              expect(tap.presences(row.user, marks.get(tap)).length, tap.name).toBeGreaterThan(0);
            }, left(patchedAt)),
          ),
      );
      // As it was, but for `observed_at`: changes while private (the webhook cell's) are changes all the same.
      await eventually(
        async () =>
          expect(apartFromObservedAt((await presenceRead(svc.base, row.user)).text)).toBe(
            apartFromObservedAt(body),
          ),
        svc.settled ? 1 : left(patchedAt),
      );
      expect(dataOf(await presenceRead(svc.base, row.user)).observed_at).toBeGreaterThanOrEqual(
        JSON.parse(body).data.observed_at,
      );
      expect((await read(svc.base, `/${row.user}.png`)).status).toBe(302);
      expectAll(
        'bulk body',
        (await read(svc.base, `/v1/users?ids=${row.user},${row.other}`)).text,
        row.markers,
      );
      if (columns.card) expectAll('card.svg', (await cardOf(svc, row.user, 'svg')).text, row.cardMarkers);
      if (columns.history) {
        expectAll('history', (await historyTexts(svc, row.user)).history, row.historyMarkers);
      }
    });
  });
}

// ---- one process ---------------------------------------------------------------------------------------

const EVERY_COLUMN: Columns = { sse: true, webhooks: true, card: true, history: true, variant: true };
/** On an API node: REST, bulk reads and sockets (the replica is what they read). */
const API_NODE_COLUMNS: Columns = {
  sse: false,
  webhooks: false,
  card: false,
  history: false,
  variant: false,
};

const ROWS: Row[] = [
  playingRow(1),
  listeningRow(2),
  applicationRow(3),
  spotifyRow(4),
  customStatusRow(5),
  platformsRow(6),
  profileRow(7),
  kvRow(8),
  pauseRow(9),
];
const PRIVATE = privateRowData(10);

describe('the privacy matrix, one process (ROLE all)', () => {
  let h: Harness;
  let receiver: WebhookReceiver;
  const keys = new Map<string, string>();
  const all: SocketTap[] = [];
  let svc: Service;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    h = await startHarness({
      env: { WEBHOOKS_ALLOW_PRIVATE: 'true' },
      webhooks: { worker: { pollMs: 20 } },
      setup: (sim) => {
        sim.createGuild({
          id: GUILD,
          name: 'Matrix',
          members: [
            ...ROWS.flatMap((row) => [
              memberOf(row.user, row.username),
              memberOf(twinOf(row.user), row.username, row.twinStatus),
            ]),
            memberOf(PRIVATE.other, 'private_neighbour'),
          ],
        });
        const profile = ROWS.find((row) => row.hidden.includes('profile')) as Row;
        sim.setProfile(profile.user, { banner: `mxprofilebanner7`, accent_color: 0x6a5b00 + 7 });
      },
    });
    const members = ROWS.length * 2 + 1;
    await eventually(() => {
      for (const row of ROWS) expect(h.app.registry.isMonitored(twinOf(row.user))).toBe(true);
      expect(h.app.sse.knowsEveryMember).toBe(true);
      expect(h.simulator.requestCount('GET /users/:id')).toBeGreaterThanOrEqual(members);
    }, 10_000);
    // SUBSCRIBE_TO_ALL is on unless turned off (config.ts): its sockets are a column.
    expect(h.app.config.subscribeToAll).toBe(true);
    for (const id of [...ROWS.map((row) => row.user), PRIVATE.user])
      keys.set(id, await insertApiKey(h.app.store, id));
    for (const id of [...ROWS.map((row) => row.user), PRIVATE.user]) {
      const response = await fetch(`${h.base}/v1/users/@me/webhooks`, {
        method: 'POST',
        headers: { authorization: keys.get(id) as string, 'content-type': 'application/json' },
        body: JSON.stringify({
          url: `${receiver.url}/hook/${id}`,
          events: ['presence', 'now_playing', 'kv'],
        }),
      });
      expect(response.status, await response.text()).toBe(201);
    }
    all.push(
      await SocketTap.open(h.base, 'socket subscribe_to_all (JSON)', false, { subscribe_to_all: true }),
      await SocketTap.open(h.base, 'socket subscribe_to_all (zlib_json)', true, { subscribe_to_all: true }),
    );
    svc = {
      base: h.base,
      sim: h.simulator,
      key: (id) => keys.get(id) as string,
      all,
      receiver,
      flushHistory: () => h.app.history.flush(),
      settled: true,
    };
  }, 30_000);

  afterAll(async () => {
    for (const tap of all) tap.close();
    await h?.close();
    await receiver?.close();
  });

  for (const row of ROWS) matrixRow(row, () => svc, EVERY_COLUMN);
  privateRow(PRIVATE, () => svc, EVERY_COLUMN);
});

// ---- scale-out -----------------------------------------------------------------------------------------

const redisUp = await redisAvailable('the privacy matrix on an API node');
const SCALE_OUT_ROWS: Row[] = [customStatusRow(21), listeningRow(22), kvRow(23)];
const SCALE_OUT_PRIVATE = privateRowData(24);

describe.skipIf(!redisUp)(
  'the privacy matrix on an API node of a scale-out deployment (REST, bulk, socket)',
  () => {
    const prefix = uniquePrefix();
    const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    const apps: App[] = [];
    const keys = new Map<string, string>();
    const all: SocketTap[] = [];
    let svc: Service;

    beforeAll(async () => {
      await simulator.start();
      simulator.createGuild({
        id: GUILD,
        name: 'Matrix',
        members: [
          ...SCALE_OUT_ROWS.flatMap((row) => [
            memberOf(row.user, row.username),
            memberOf(twinOf(row.user), row.username),
          ]),
          memberOf(SCALE_OUT_PRIVATE.other, 'private_neighbour'),
        ],
      });
      const limits = { HOST: '127.0.0.1', PORT: '0', RATE_LIMIT_READ: '0', RATE_LIMIT_WRITE: '0' };
      apps.push(
        await startApp(loadConfig(scaleOutEnv('ingest', simulator, prefix, limits)), {
          logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
        }),
      );
      const api = await startApiNode(prefix, { RATE_LIMIT_READ: '0', RATE_LIMIT_WRITE: '0' });
      apps.push(api);
      await eventually(async () => {
        for (const row of SCALE_OUT_ROWS) {
          expect((await read(api.url, `/v1/users/${row.user}`)).status).toBe(200);
          expect((await read(api.url, `/v1/users/${twinOf(row.user)}`)).status).toBe(200);
        }
      }, 15_000);
      for (const id of [...SCALE_OUT_ROWS.map((row) => row.user), SCALE_OUT_PRIVATE.user]) {
        keys.set(id, await insertApiKey(api.store, id));
      }
      all.push(
        await SocketTap.open(api.url, 'API node socket subscribe_to_all (JSON)', false, {
          subscribe_to_all: true,
        }),
        await SocketTap.open(api.url, 'API node socket subscribe_to_all (zlib_json)', true, {
          subscribe_to_all: true,
        }),
      );
      svc = {
        base: api.url,
        sim: simulator,
        key: (id) => keys.get(id) as string,
        all,
        receiver: null,
        flushHistory: null,
        settled: false,
      };
    }, 30_000);

    afterAll(async () => {
      for (const tap of all) tap.close();
      for (const app of apps.reverse()) await app.close();
      await simulator.stop();
      const redis = new Redis(REDIS_TEST_URL);
      await dropPrefix(redis, prefix);
      redis.disconnect();
    }, 30_000);

    for (const row of SCALE_OUT_ROWS) matrixRow(row, () => svc, API_NODE_COLUMNS);
    privateRow(SCALE_OUT_PRIVATE, () => svc, API_NODE_COLUMNS);
  },
);
