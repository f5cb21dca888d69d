import type { APIMessage, GatewayActivity } from 'discord-api-types/v10';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DiscordStatus, NowPlaying, Presence } from '../../src/presence/model.js';
import {
  customStatusActivity,
  spotifyActivity,
  spotifyLocalFileActivity,
  youtubeMusicActivity,
} from '../../src/simulator/activities.js';
import type { PresenceInput } from '../../src/simulator/index.js';
import { untilLive } from '../support/api-key.js';
import { clockPast, eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * History, stats and top tracks end to end: presences driven through the simulated Discord and the real
 * gateway client, commands through DMs and server channels, and everything read back over real HTTP.
 */

const GUILD_A = '300000000000000001';
const GUILD_B = '300000000000000002';
const USER = '80351110224678912';
const OTHER = '80351110224678913';
const UNKNOWN = '123456789012345678';
const SONG_MS = 200_000;
/** Per-guild copies of one update differ by this much, as on Discord. */
const JITTER = { jitterMs: 400 };

type StatusEntry = { status: DiscordStatus; ts: number };
type TrackEntry = NowPlaying & { ts: number };
type TopTrack = NowPlaying & { last_played: number; play_count: number };
type History = { status_history: StatusEntry[]; track_history: TrackEntry[] };
type Stats = {
  current_status: DiscordStatus;
  last_seen: number | null;
  tracks_today: number;
  track_history_count: number;
  is_monitored: boolean;
};

let harness: Harness | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  await harness?.close();
  harness = undefined;
});

// ---- the world ----------------------------------------------------------------------------------------

/** USER (in both guilds when `twoGuilds`) and OTHER (in guild A), both online, seen by the service. */
async function start(options: { twoGuilds?: boolean; env?: Record<string, string> } = {}): Promise<Harness> {
  harness = await startHarness({
    ...(options.env ? { env: options.env } : {}),
    setup: (sim) => {
      sim.createGuild({
        id: GUILD_A,
        name: 'Guild A',
        members: [
          { user: { id: USER, username: 'user' }, presence: { status: 'online' } },
          { user: { id: OTHER, username: 'other' }, presence: { status: 'online' } },
        ],
      });
      if (options.twoGuilds) {
        sim.createGuild({
          id: GUILD_B,
          name: 'Guild B',
          members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
        });
      }
    },
  });
  const h = harness;
  await eventually(() => {
    expect(h.app.registry.get(USER)?.presence.discord_status).toBe('online');
    expect(h.app.registry.get(OTHER)?.presence.discord_status).toBe('online');
  });
  return h;
}

function spotify(name: string, start: number, end = start + SONG_MS): GatewayActivity {
  const hex = Buffer.from(name).toString('hex');
  return spotifyActivity({
    song: `Song ${name}`,
    artists: [`Artist ${name}`, 'Guest'],
    album: `Album ${name}`,
    imageId: `ab67616d0000b273${hex.padEnd(24, '0').slice(0, 24)}`,
    trackId: `trk${name}`.padEnd(22, 'x'),
    start,
    end,
  });
}

function youtube(name: string, timing: { start?: number; end?: number; paused?: boolean }): GatewayActivity {
  return youtubeMusicActivity({
    title: `Video ${name}`,
    artist: `Channel ${name}`,
    album: `Record ${name}`,
    videoId: `vid${name}`.padEnd(11, '_'),
    imageUrl: `https://lh3.googleusercontent.com/${name}=w544-h544`,
    createdAt: 1_700_000_000_000,
    ...timing,
  });
}

/**
 * Sets the presence through the simulated Discord (per-guild copies jittered unless `jitter: false`) and
 * waits until the service's registry has taken it as a change, which the recorder observes at once.
 * Returns the time window around it, which holds the `ts` of whatever the change records.
 */
async function drive(
  h: Harness,
  userId: string,
  presence: PresenceInput,
  options: { jitter?: boolean } = {},
): Promise<{ before: number; after: number }> {
  const seen = h.changes.length;
  const before = Date.now();
  h.simulator.setPresence(userId, presence, options.jitter === false ? {} : JITTER);
  await eventually(() => {
    expect(h.changes.slice(seen).some((change) => change.userId === userId)).toBe(true);
  });
  return { before, after: Date.now() };
}

// ---- HTTP ---------------------------------------------------------------------------------------------

async function getData<T>(h: Harness, path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(`${h.base}${path}`, init);
  const body = (await response.json()) as { success: boolean; data: T };
  expect({ status: response.status, success: body.success }).toEqual({ status: 200, success: true });
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return body.data;
}

const history = (h: Harness, id = USER) => getData<History>(h, `/v1/users/${id}/history`);
const stats = (h: Harness, id = USER) => getData<Stats>(h, `/v1/users/${id}/stats`);
const topTracks = async (h: Harness, query = '', id = USER) =>
  (await getData<{ top_tracks: TopTrack[] }>(h, `/v1/users/${id}/top-tracks${query}`)).top_tracks;
const presenceOf = (h: Harness, id = USER) => getData<Presence>(h, `/v1/users/${id}`);

async function expectError(h: Harness, path: string, status: number, code: string): Promise<void> {
  const response = await fetch(`${h.base}${path}`);
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
}

// ---- bot ----------------------------------------------------------------------------------------------

/** A user writes to the bot (DM unless guildId); resolves with the bot's reply to that very message. */
async function command(h: Harness, userId: string, content: string, guildId?: string): Promise<APIMessage> {
  const sent = h.simulator.sendMessage(
    guildId === undefined ? { author: userId, content } : { guildId, author: userId, content },
  );
  return h.simulator.waitForMessage(
    (message) => message.channel_id === sent.channel_id && message.message_reference?.message_id === sent.id,
  );
}

// ---- a listening session ------------------------------------------------------------------------------

interface Play {
  nowPlaying: NowPlaying;
  before: number;
  after: number;
}

/**
 * USER, in two guilds with jittered per-guild copies, listens to:
 * A · B · B seeked (no play) · B replay · A · A replay · C · C replay · Y (YouTube Music) · Y paused ·
 * Y resumed (no plays). Returns the plays in order, with the now_playing the service showed for each.
 * Play counts: A 3, B 2, C 2 (C played last), Y 1.
 */
async function listeningSession(h: Harness): Promise<{ plays: Play[]; playing: GatewayActivity[] }> {
  const t0 = Date.now() - 60_000;
  const plays: Play[] = [];
  const play = async (activities: GatewayActivity[]) => {
    const window = await drive(h, USER, { status: 'online', activities });
    const { now_playing } = await presenceOf(h);
    expect(now_playing).not.toBeNull();
    plays.push({ nowPlaying: now_playing as NowPlaying, ...window });
  };
  const notAPlay = async (activities: GatewayActivity[]) => {
    await drive(h, USER, { status: 'online', activities });
  };

  await play([spotify('A', t0)]);
  await play([spotify('B', t0 + SONG_MS)]);
  // A seek 30 s forward: the start moves by more than a copy's jitter, still before the end.
  await notAPlay([spotify('B', t0 + SONG_MS + 30_000)]);
  // The replay starts at the (seeked) end of the play before.
  await play([spotify('B', t0 + 2 * SONG_MS + 30_000)]);
  await play([spotify('A', t0 + 3 * SONG_MS + 30_000)]);
  await play([spotify('A', t0 + 4 * SONG_MS + 30_000)]);
  await play([spotify('C', t0 + 5 * SONG_MS + 30_000)]);
  await play([spotify('C', t0 + 6 * SONG_MS + 30_000)]);
  const y = t0 + 7 * SONG_MS + 30_000;
  await play([youtube('Y', { start: y, end: y + SONG_MS })]);
  await notAPlay([youtube('Y', { paused: true })]);
  const playing = [youtube('Y', { start: y + 60_000, end: y + 60_000 + SONG_MS })];
  await notAPlay(playing);
  return { plays, playing };
}

function expectTs(ts: number, window: { before: number; after: number }): void {
  expect(Number.isInteger(ts)).toBe(true);
  expect(ts).toBeGreaterThanOrEqual(window.before);
  expect(ts).toBeLessThanOrEqual(window.after);
}

// ---- tests --------------------------------------------------------------------------------------------

describe('GET /v1/users/:id/history', () => {
  it('has one entry per play (not per seek, pause, resume or guild copy) and one per status change', async () => {
    const h = await start({ twoGuilds: true });
    expect((await history(h)).track_history).toEqual([]);

    const { plays, playing: music } = await listeningSession(h);
    expect(plays.map((p) => `${p.nowPlaying.source}:${p.nowPlaying.song}`)).toEqual([
      'spotify:Song A',
      'spotify:Song B',
      'spotify:Song B',
      'spotify:Song A',
      'spotify:Song A',
      'spotify:Song C',
      'spotify:Song C',
      'youtube_music:Video Y',
    ]);

    // Status flaps; updates that keep the status (a custom status, a verbatim repeat) add nothing.
    const resumed = h.app.registry.get(USER)?.presence.now_playing;
    const custom = customStatusActivity({ text: 'listening', createdAt: 1_700_000_000_000 });
    const flaps: { status: DiscordStatus; before: number; after: number }[] = [];
    await drive(h, USER, { status: 'online', activities: [...music, custom] });
    flaps.push({
      status: 'idle',
      ...(await drive(h, USER, { status: 'idle', activities: [...music, custom] })),
    });
    h.simulator.setPresence(USER, { status: 'idle', activities: [...music, custom] }, JITTER); // verbatim
    flaps.push({ status: 'online', ...(await drive(h, USER, { status: 'online', activities: music })) });
    await drive(h, USER, { status: 'online', activities: [...music, customStatusActivity({ text: 'hi' })] });
    flaps.push({ status: 'dnd', ...(await drive(h, USER, { status: 'dnd', activities: music })) });
    expect(h.app.registry.get(USER)?.presence.now_playing).toEqual(resumed);

    await h.app.history.flush();
    const { status_history, track_history } = await history(h);

    expect(track_history).toEqual(plays.map((p) => ({ ...p.nowPlaying, ts: expect.any(Number) })).reverse());
    for (const [index, p] of plays.slice().reverse().entries()) {
      expectTs((track_history[index] as TrackEntry).ts, p);
    }

    expect(status_history.map((entry) => entry.status)).toEqual(['dnd', 'online', 'idle', 'online']);
    for (const [index, flap] of flaps.slice().reverse().entries()) {
      expectTs((status_history[index] as StatusEntry).ts, flap);
    }
    const initial = status_history[3] as StatusEntry;
    expect(initial.ts).toBeLessThanOrEqual(plays[0]?.before as number);

    // Nothing new is written by a flush with nothing waiting.
    await h.app.history.flush();
    expect(await history(h)).toEqual({ status_history, track_history });
  });

  it('stays readable after the user goes offline and leaves every guild', async () => {
    const h = await start();
    const window = await drive(h, USER, { status: 'online', activities: [spotify('A', Date.now())] });
    const nowPlaying = (await presenceOf(h)).now_playing as NowPlaying;
    const offline = await drive(h, USER, { status: 'offline' });
    h.simulator.removeMember(GUILD_A, USER);
    await eventually(() => expect(h.app.registry.get(USER)).toBeUndefined());
    await h.app.history.flush();

    await expectError(h, `/v1/users/${USER}`, 404, 'user_not_monitored');
    const { status_history, track_history } = await history(h);
    expect(track_history).toEqual([{ ...nowPlaying, ts: expect.any(Number) }]);
    expectTs((track_history[0] as TrackEntry).ts, window);
    expect(status_history.map((entry) => entry.status)).toEqual(['offline', 'online']);
    expectTs((status_history[0] as StatusEntry).ts, offline);
    expect(await stats(h)).toEqual({
      current_status: 'offline',
      last_seen: status_history[0]?.ts,
      tracks_today: 1,
      track_history_count: 1,
      is_monitored: false,
    });
  });

  // BUG (src/model/history.ts isNewPlay): a resume after a pause longer than the rest of the song is
  // counted as a replay, because the resumed activity's start (resume time − position) lands past the
  // previous play's end. The contract says a pause/resume is never a play.
  it('does not count a resume as a play, however long the pause', async () => {
    const h = await start({ twoGuilds: true });
    const t0 = Date.now() - 10 * 60_000;
    // YouTube Music: the player shows the track paused (no timestamps), 4 min at 1:00 into a 3:20 song.
    await drive(h, USER, { status: 'online', activities: [youtube('Y', { start: t0, end: t0 + SONG_MS })] });
    await drive(h, USER, { status: 'online', activities: [youtube('Y', { paused: true })] });
    const resumed = t0 + 240_000;
    await drive(h, USER, {
      status: 'online',
      activities: [youtube('Y', { start: resumed, end: resumed + SONG_MS })],
    });
    // Spotify: the activity goes away while paused, and comes back with the start moved by the pause.
    await drive(h, USER, { status: 'online', activities: [spotify('S', t0)] });
    await drive(h, USER, { status: 'online', activities: [] });
    await drive(h, USER, { status: 'online', activities: [spotify('S', resumed)] });
    await h.app.history.flush();

    const { track_history } = await history(h);
    // One entry per track: its first start (the copies shift the timestamps by at most the jitter).
    expect(
      track_history.map((track) => [track.source, Math.abs((track.timestamps.start as number) - t0) <= 400]),
    ).toEqual([
      ['spotify', true],
      ['youtube_music', true],
    ]);
    expect(await topTracks(h)).toEqual([]);
  });

  it('counts tracks without a track id (local files) by their title and artist in top tracks', async () => {
    const h = await start();
    const t0 = Date.now() - 10 * 60_000;
    const local = (start: number) =>
      spotifyLocalFileActivity({ song: 'demo.mp3', album: 'Tapes', start, end: start + SONG_MS });
    await drive(h, USER, { status: 'online', activities: [local(t0)] }, { jitter: false });
    await drive(h, USER, { status: 'online', activities: [local(t0 + SONG_MS)] }, { jitter: false }); // replay
    await h.app.history.flush();

    const { track_history } = await history(h);
    expect(track_history.map((track) => [track.song, track.track_id, track.timestamps.start])).toEqual([
      ['demo.mp3', null, t0 + SONG_MS],
      ['demo.mp3', null, t0],
    ]);
    expect((await topTracks(h)).map((track) => [track.song, track.track_id, track.play_count])).toEqual([
      ['demo.mp3', null, 2],
    ]);
    expect((await stats(h)).track_history_count).toBe(2);
  });
});

describe('GET /v1/users/:id/stats', () => {
  it('is live while online, keeps last_seen from going offline, and outlives monitoring', async () => {
    const h = await start();
    await drive(h, USER, { status: 'online', activities: [spotify('A', Date.now())] });
    await drive(h, USER, { status: 'online', activities: [spotify('B', Date.now() + SONG_MS)] });
    await h.app.history.flush();

    let before = Date.now();
    let read = await stats(h);
    expect(read).toEqual({
      current_status: 'online',
      last_seen: expect.any(Number),
      tracks_today: 2,
      track_history_count: 2,
      is_monitored: true,
    });
    expectTs(read.last_seen as number, { before, after: Date.now() });

    // current_status is live: no flush needed.
    await drive(h, USER, { status: 'dnd', activities: [spotify('B', Date.now() + SONG_MS)] });
    before = Date.now();
    read = await stats(h);
    expect(read.current_status).toBe('dnd');
    expectTs(read.last_seen as number, { before, after: Date.now() });

    const offline = await drive(h, USER, { status: 'offline' });
    await h.app.history.flush();
    // Read once the clock is past the change: a live value would be now, not when they went.
    await clockPast(offline.after);
    read = await stats(h);
    expect(read).toEqual({
      current_status: 'offline',
      last_seen: expect.any(Number),
      tracks_today: 2,
      track_history_count: 2,
      is_monitored: true,
    });
    expectTs(read.last_seen as number, offline);
    expect(read.last_seen).toBeLessThan(Date.now());
    const wentOffline = read.last_seen;

    h.simulator.removeMember(GUILD_A, USER);
    await eventually(() => expect(h.app.registry.get(USER)).toBeUndefined());
    await h.app.history.flush();
    expect(await stats(h)).toEqual({
      current_status: 'offline',
      last_seen: wentOffline,
      tracks_today: 2,
      track_history_count: 2,
      is_monitored: false,
    });
  });

  it('keeps the last recorded status and the time of removal for a user removed while online', async () => {
    const h = await start();
    await drive(h, OTHER, { status: 'idle' });
    await drive(h, OTHER, { status: 'dnd' });
    const before = Date.now();
    h.simulator.removeMember(GUILD_A, OTHER);
    await eventually(() => expect(h.app.registry.get(OTHER)).toBeUndefined());
    const after = Date.now();
    await h.app.history.flush();

    const read = await stats(h, OTHER);
    expect(read).toEqual({
      current_status: 'dnd',
      last_seen: expect.any(Number),
      tracks_today: 0,
      track_history_count: 0,
      is_monitored: false,
    });
    expectTs(read.last_seen as number, { before, after });
    expect((await history(h, OTHER)).status_history.map((entry) => entry.status)).toEqual([
      'dnd',
      'idle',
      'online',
    ]);
  });
});

describe('history and stats agree with the live presence', () => {
  it('at every moment: before the batch holding the change is written, and after', async () => {
    const h = await start();
    await h.app.history.flush();
    // The store takes the next batches only when told: until then they are on their way, not stored.
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const store = h.app.store.history;
    const append = store.appendHistory.bind(store);
    vi.spyOn(store, 'appendHistory').mockImplementation(async (...args) => {
      await gate;
      return append(...args);
    });

    await drive(h, USER, { status: 'idle' });
    const offline = await drive(h, USER, { status: 'offline' });
    const early = { stats: await stats(h), history: await history(h) };
    expect(early.stats.current_status).toBe('offline');
    expectTs(early.stats.last_seen as number, offline);
    expect(early.history.status_history.map((entry) => entry.status)).toEqual(['offline', 'idle', 'online']);
    expect(early.history.status_history[0]?.ts).toBe(early.stats.last_seen);

    release();
    await h.app.history.flush();
    expect(store.appendHistory).toHaveBeenCalled();
    expect(await stats(h)).toEqual(early.stats);
    expect(await history(h)).toEqual(early.history);
  });
  it('of a member listed and not rendered yet: their first status, as their presence says', async () => {
    const h = await start();
    const listed = '80351110224678914';
    // As a member chunk has it: nothing renders it before this read.
    h.app.registry.memberListed(
      GUILD_A,
      { id: listed, username: 'listed' },
      { status: 'dnd', client_status: { desktop: 'dnd' }, activities: [] },
    );
    const seen = await history(h, listed);
    expect(seen.status_history.map((entry) => entry.status)).toEqual(['dnd']);
    expect((await stats(h, listed)).current_status).toBe('dnd');
    h.app.registry.memberRemoved(GUILD_A, listed);
  });
});

describe('GET /v1/users/:id/top-tracks', () => {
  it('lists tracks played at least twice, by play count then last played, with limit clamped', async () => {
    const h = await start({ twoGuilds: true });
    const { plays } = await listeningSession(h);
    await h.app.history.flush();

    const { track_history } = await history(h);
    const latest = (song: string) => {
      const entry = track_history.find((track) => track.song === song) as TrackEntry;
      const count = plays.filter((p) => p.nowPlaying.song === song).length;
      const { ts, ...nowPlaying } = entry;
      return { ...nowPlaying, last_played: ts, play_count: count };
    };
    const expected = [latest('Song A'), latest('Song C'), latest('Song B')];
    expect(expected.map((track) => track.play_count)).toEqual([3, 2, 2]);

    expect(await topTracks(h)).toEqual(expected);
    expect(await topTracks(h, '?limit=2')).toEqual(expected.slice(0, 2));
    expect(await topTracks(h, '?limit=1')).toEqual(expected.slice(0, 1));
    expect(await topTracks(h, '?limit=0')).toEqual(expected.slice(0, 1));
    expect(await topTracks(h, '?limit=-3')).toEqual(expected.slice(0, 1));
    expect(await topTracks(h, '?limit=999')).toEqual(expected);
    expect(await topTracks(h, '?limit=50')).toEqual(expected);

    for (const limit of ['abc', '1.5', '2x']) {
      await expectError(h, `/v1/users/${USER}/top-tracks?limit=${limit}`, 400, 'invalid_query');
    }
  });

  it('answers at most 50, most played first, however large the limit', async () => {
    const h = await start();
    const t0 = Date.now() - 1_000_000_000;
    const listen = (i: number, round: number) => {
      h.app.registry.memberSeen(
        GUILD_A,
        { id: USER },
        {
          status: 'online',
          activities: [spotify(`T${i}`, t0 + (round * 100 + i) * SONG_MS)],
          client_status: { desktop: 'online' },
        },
      );
    };
    for (let i = 0; i < 60; i++) listen(i, 0);
    for (let i = 0; i < 60; i++) listen(i, 1);
    // A third play for three of them, each on a later millisecond (the time stamped is the clock's) so
    // that last_played orders them.
    for (let i = 0; i < 3; i++) {
      await clockPast(Date.now());
      listen(i, 2);
    }
    await h.app.history.flush();

    const top = await topTracks(h, '?limit=999');
    expect(top).toHaveLength(50);
    expect(top.slice(0, 3).map((track) => [track.song, track.play_count])).toEqual([
      ['Song T2', 3],
      ['Song T1', 3],
      ['Song T0', 3],
    ]);
    expect(top.slice(3).every((track) => track.play_count === 2)).toBe(true);
    for (let i = 1; i < top.length; i++) {
      const [a, b] = [top[i - 1] as TopTrack, top[i] as TopTrack];
      expect(a.play_count > b.play_count || a.last_played >= b.last_played).toBe(true);
    }
    expect(await topTracks(h)).toHaveLength(10);
    expect(await topTracks(h, '?limit=51')).toHaveLength(50);
    expect((await stats(h)).tracks_today).toBe(123);
  });
});

describe('ids', () => {
  it('answers 200 with nothing known for a valid id nobody has seen', async () => {
    const h = await start();
    for (const id of [UNKNOWN, '1', '18446744073709551615']) {
      expect(await history(h, id)).toEqual({ status_history: [], track_history: [] });
      expect(await stats(h, id)).toEqual({
        current_status: 'offline',
        last_seen: null,
        tracks_today: 0,
        track_history_count: 0,
        is_monitored: false,
      });
      expect(await topTracks(h, '', id)).toEqual([]);
      expect(await topTracks(h, '?limit=5', id)).toEqual([]);
    }
  });

  it.each(['@me', 'abc', '18446744073709551616', '123456789012345678901'])(
    '400 invalid_user_id for %j on history, stats and top-tracks',
    async (id) => {
      const h = await start();
      for (const route of ['history', 'stats', 'top-tracks', 'top-tracks?limit=5']) {
        await expectError(h, `/v1/users/${id}/${route}`, 400, 'invalid_user_id');
      }
    },
  );
});

describe('?forget', () => {
  it('warns, then erases history, plays and stats but not KV or the API key', async () => {
    const h = await start();
    const t0 = Date.now() - 10 * SONG_MS;
    await drive(h, USER, { status: 'online', activities: [spotify('A', t0)] });
    await drive(h, USER, { status: 'online', activities: [spotify('A', t0 + SONG_MS)] });
    await drive(h, USER, { status: 'online', activities: [spotify('B', t0 + 2 * SONG_MS)] });
    await drive(h, USER, { status: 'idle', activities: [spotify('B', t0 + 2 * SONG_MS)] });

    const set = await command(h, USER, '?set greeting hello there');
    expect(set.content.length).toBeGreaterThan(0);
    const issued = await command(h, USER, '?apikey');
    const key = /`(prs_[A-Za-z0-9_-]{43})`/.exec(issued.content)?.[1] as string;
    expect(key).toBeDefined();
    await untilLive(h.base, key);
    await eventually(async () => expect((await presenceOf(h)).kv).toEqual({ greeting: 'hello there' }));
    await h.app.history.flush();
    const stored = await history(h);
    expect(stored.track_history).toHaveLength(3);
    expect(stored.status_history.map((entry) => entry.status)).toEqual(['idle', 'online']);
    expect((await topTracks(h)).map((track) => track.song)).toEqual(['Song A']);

    // Without "confirm": a warning, nothing erased.
    const warning = await command(h, USER, '?forget');
    expect(warning.channel_id).toBe(h.simulator.dmChannelFor(USER));
    expect(warning.content).toContain('?forget confirm');
    expect(warning.content).not.toMatch(/^Done/);
    await h.app.history.flush();
    expect(await history(h)).toEqual(stored);
    expect((await stats(h)).track_history_count).toBe(3);

    // A change just before the confirmation, still waiting to be written: the user goes offline (a status
    // entry and last_seen). The periodic flush is held so it surely is still waiting.
    const recorder = h.app.history;
    const flush = recorder.flush.bind(recorder);
    let hold = true;
    vi.spyOn(recorder, 'flush').mockImplementation(() => (hold ? Promise.resolve() : flush()));
    await drive(h, USER, { status: 'offline' });
    const done = await command(h, USER, '?forget confirm');
    hold = false;
    expect(done.channel_id).toBe(h.simulator.dmChannelFor(USER));
    expect(done.content).toMatch(/erased 2 status entries, 3 tracks and 2 play counts/);
    expect(done.content).toMatch(/KV and API key are untouched/);

    await h.app.history.flush();
    expect(await history(h)).toEqual({ status_history: [], track_history: [] });
    expect(await stats(h)).toEqual({
      current_status: 'offline',
      last_seen: null,
      tracks_today: 0,
      track_history_count: 0,
      is_monitored: true,
    });
    expect(await topTracks(h)).toEqual([]);

    // KV and key untouched.
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({ greeting: 'hello there' });
    const me = await getData<Presence>(h, '/v1/users/@me', { headers: { authorization: key } });
    expect(me.discord_user.id).toBe(USER);
    expect(me.kv).toEqual({ greeting: 'hello there' });

    // New plays after the forget are recorded again.
    const back = await drive(h, USER, { status: 'online', activities: [spotify('C', Date.now())] });
    const nowPlaying = (await presenceOf(h)).now_playing as NowPlaying;
    await h.app.history.flush();
    const after = await history(h);
    expect(after.track_history).toEqual([{ ...nowPlaying, ts: expect.any(Number) }]);
    expectTs((after.track_history[0] as TrackEntry).ts, back);
    expect(after.status_history.map((entry) => entry.status)).toEqual(['online']);
    expect(await stats(h)).toMatchObject({
      current_status: 'online',
      tracks_today: 1,
      track_history_count: 1,
    });
  });

  it('in a server channel (MESSAGE_CONTENT on) says to use a DM or /presently, and erases nothing', async () => {
    const h = await start({ env: { MESSAGE_CONTENT: 'on' } });
    await drive(h, USER, { status: 'online', activities: [spotify('A', Date.now())] });
    await h.app.history.flush();
    const before = await history(h);
    expect(before.track_history).toHaveLength(1);

    // What an erasure took is the user's to read: a server channel is not where it is said.
    const reply = await command(h, USER, '?forget confirm', GUILD_A);
    expect(reply.channel_id).not.toBe(h.simulator.dmChannelFor(USER));
    expect(reply.content).toContain('works in DMs only');
    expect(reply.content).toContain('`/presently forget`');

    await h.app.history.flush();
    expect(await history(h)).toEqual(before);
  });
});

describe('the 100 most recent entries', () => {
  it('keeps 100 of 105 plays, newest first', async () => {
    const h = await start();
    const t0 = Date.now() - 1_000_000_000;
    for (let i = 0; i < 105; i++) {
      // The path the gateway takes for a PRESENCE_UPDATE.
      h.app.registry.memberSeen(
        GUILD_A,
        { id: USER },
        {
          status: 'online',
          activities: [spotify(`T${i}`, t0 + i * SONG_MS)],
          client_status: { desktop: 'online' },
        },
      );
    }
    await h.app.history.flush();

    const { track_history } = await history(h);
    expect(track_history).toHaveLength(100);
    expect(track_history.map((track) => track.song)).toEqual(
      Array.from({ length: 100 }, (_, index) => `Song T${104 - index}`),
    );
    for (let i = 1; i < track_history.length; i++) {
      expect((track_history[i - 1] as TrackEntry).ts).toBeGreaterThanOrEqual(
        (track_history[i] as TrackEntry).ts,
      );
    }
    expect(await stats(h)).toMatchObject({ tracks_today: 105, track_history_count: 100 });
  });
});
