import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { HistoryRecorder } from '../../src/history/recorder.js';
import type { DiscordStatus, RawPresence } from '../../src/presence/model.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { DEFAULT_PRIVACY, type PrivacySettings, recordsHistory } from '../../src/presence/privacy.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';

/**
 * The recorder under a user's privacy settings (`records`): what it does not record leaves no trace in
 * the store, and recording picks up again from what was last recorded.
 */

const GUILD = '1';
const USER = { id: '80351110224678912', username: 'alice' };
const T0 = Date.UTC(2026, 10, 22, 12);
const SONG_MS = 180_000;

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

function openStore(): SqliteStore {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  stores.push(store);
  return store;
}

/**
 * A registry rendering under `settings` (as the service's does: a pause shows the user offline) and a
 * recorder recording what they allow, as side.ts wires them.
 */
function setup(store = openStore(), start = T0) {
  let now = start;
  let settings: PrivacySettings | undefined;
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    now: () => now,
    privacy: () => settings,
  });
  const recorder = new HistoryRecorder({
    store: store.history,
    logger: pino({ level: 'silent' }),
    now: () => now,
    flushMs: 60_000,
    records: (_userId, at) => recordsHistory(settings, at),
  });
  registry.onChange(recorder.observe);
  return {
    store,
    registry,
    recorder,
    advance: (ms: number) => (now += ms),
    now: () => now,
    /** New settings, rendered at once as the directory's listener makes the registry do. */
    set: (patch: Partial<PrivacySettings> | undefined) => {
      settings = patch && { ...DEFAULT_PRIVACY, ...patch };
      registry.privacyChanged(USER.id);
    },
  };
}

function listening(trackId: string, start: number, status: DiscordStatus = 'online'): RawPresence {
  return {
    status,
    client_status: { desktop: status },
    activities: [
      spotifyActivity({
        song: trackId,
        artists: ['A'],
        album: 'B',
        imageId: 'x',
        trackId,
        start,
        end: start + SONG_MS,
      }),
    ],
  };
}

const OFFLINE: RawPresence = { status: 'offline', client_status: {}, activities: [] };
const turn = () => new Promise((resolve) => setImmediate(resolve));

async function stored(store: SqliteStore) {
  const { status, tracks } = await store.history.history(USER.id, 100);
  const stats = await store.history.stats(USER.id);
  const top = await store.history.topTracks(USER.id, 1, 50);
  return {
    status,
    tracks: tracks.map((track) => ({ id: track.track_id, ts: track.ts })),
    plays: Object.fromEntries(top.map((track) => [track.track_id, track.play_count])),
    stats,
  };
}

describe('HistoryRecorder with privacy settings', () => {
  it('records nothing of a change it is told not to: no status, track, play count, stats or last_seen', async () => {
    const { store, registry, recorder, advance, set } = setup();
    registry.memberSeen(GUILD, USER, listening('t1', T0));
    await turn();
    await recorder.flush();
    const before = await stored(store);
    expect(before.tracks).toEqual([{ id: 't1', ts: T0 }]);

    set({ record_history: false });
    advance(200_000);
    registry.memberSeen(GUILD, USER, listening('t2', T0 + 200_000, 'dnd'));
    advance(200_000);
    registry.memberSeen(GUILD, USER, listening('t1', T0 + 400_000, 'dnd'));
    advance(10_000);
    // Going offline, then leaving while online: each would write last_seen.
    registry.memberSeen(GUILD, USER, OFFLINE);
    advance(10_000);
    registry.memberSeen(GUILD, USER, listening('t3', T0 + 420_000));
    advance(10_000);
    registry.memberRemoved(GUILD, USER.id);
    await recorder.flush();
    expect(await stored(store)).toEqual(before);
    expect(before.stats.lastSeen).toBeNull();
  });

  it('when recording resumes, records the status and track it finds against what was last recorded, counting no phantom play', async () => {
    const { store, registry, recorder, advance, now, set } = setup();
    registry.memberSeen(GUILD, USER, listening('t1', T0));
    await turn();
    set({ record_history: false });
    // Played and gone while not recording: never counted.
    advance(200_000);
    registry.memberSeen(GUILD, USER, listening('t2', T0 + 200_000, 'dnd'));
    // Started while not recording, still playing when recording resumes.
    advance(200_000);
    registry.memberSeen(GUILD, USER, listening('t3', T0 + 400_000, 'dnd'));
    advance(1_000);
    registry.memberSeen(GUILD, USER, OFFLINE);
    advance(1_000);
    registry.memberSeen(GUILD, USER, listening('t3', T0 + 400_000, 'dnd'));
    set({ record_history: true });
    // The first change recorded again: a seek within t3, still dnd.
    advance(5_000);
    const resumedAt = now();
    registry.memberSeen(GUILD, USER, listening('t3', T0 + 420_000, 'dnd'));
    // After that, as ever: the same play of t3 is not counted again.
    advance(5_000);
    registry.memberSeen(GUILD, USER, listening('t3', T0 + 440_000, 'dnd'));
    await recorder.flush();
    const after = await stored(store);
    expect(after.status).toEqual([
      { status: 'dnd', ts: resumedAt },
      { status: 'online', ts: T0 },
    ]);
    expect(after.tracks).toEqual([
      { id: 't3', ts: resumedAt },
      { id: 't1', ts: T0 },
    ]);
    expect(after.plays).toEqual({ t1: 1, t3: 1 });
    // Offline and back while not recording: not seen going offline.
    expect(after.stats.lastSeen).toBeNull();

    // Live status is known all along: going offline now is going offline from dnd.
    advance(1_000);
    registry.memberSeen(GUILD, USER, OFFLINE);
    await recorder.close();
    expect((await stored(store)).stats.lastSeen).toBe(now());
  });

  it('after a pause, a track merely resumed is the same play, a track seen starting over is a new one', async () => {
    for (const startedOver of [false, true]) {
      const { store, registry, recorder, advance, now, set } = setup();
      registry.memberSeen(GUILD, USER, listening('t1', T0));
      await turn();
      advance(10_000);
      set({ paused_until: T0 + 600_000 });
      // Paused: the registry shows the user offline, and takes in what they do meanwhile.
      advance(100_000);
      registry.memberSeen(GUILD, USER, listening('t2', T0 + 110_000, 'idle'));
      advance(300_000);
      // t1 again, past its end: resumed after a long stop (started long ago) or started over (just now).
      const start = startedOver ? T0 + 595_000 : T0 + 300_000;
      registry.memberSeen(GUILD, USER, listening('t1', start, 'idle'));
      advance(190_001);
      const endedAt = now();
      set({ paused_until: T0 + 600_000 });
      await recorder.flush();
      const after = await stored(store);
      expect(after.status).toEqual([
        { status: 'idle', ts: endedAt },
        { status: 'online', ts: T0 },
      ]);
      expect(after.tracks).toEqual(
        startedOver
          ? [
              { id: 't1', ts: endedAt },
              { id: 't1', ts: T0 },
            ]
          : [{ id: 't1', ts: T0 }],
      );
      expect(after.plays).toEqual({ t1: startedOver ? 2 : 1 });
      // The offline shown while paused was not going offline.
      expect(after.stats.lastSeen).toBeNull();
      await recorder.close();
    }
  });

  it('tells going offline, when recording resumes, from the live status seen while it did not', async () => {
    // Online all along while not recording: going offline once it records again is going offline.
    {
      const { store, registry, recorder, advance, now, set } = setup();
      registry.memberSeen(GUILD, USER, listening('t1', T0));
      await turn();
      set({ record_history: false });
      advance(1_000);
      registry.memberSeen(GUILD, USER, listening('t1', T0, 'idle'));
      set({ record_history: true });
      advance(1_000);
      registry.memberSeen(GUILD, USER, OFFLINE);
      await recorder.flush();
      const after = await stored(store);
      expect(after.status).toEqual([
        { status: 'offline', ts: now() },
        { status: 'online', ts: T0 },
      ]);
      expect(after.stats.lastSeen).toBe(now());
      await recorder.close();
    }
    // Gone offline during a pause, still offline when it ends: not seen going offline then.
    {
      const { store, registry, recorder, advance, now, set } = setup();
      registry.memberSeen(GUILD, USER, listening('t1', T0));
      await turn();
      set({ paused_until: T0 + 60_000 });
      advance(1_000);
      registry.memberSeen(GUILD, USER, OFFLINE);
      advance(60_000);
      set({ paused_until: T0 + 60_000 });
      await recorder.close();
      const after = await stored(store);
      expect(after.status).toEqual([
        { status: 'offline', ts: now() },
        { status: 'online', ts: T0 },
      ]);
      expect(after.stats.lastSeen).toBeNull();
    }
  });

  it('writes last_seen at shutdown only for users whose settings let it be recorded then', async () => {
    for (const records of [false, true]) {
      const { store, registry, recorder, advance, now, set } = setup();
      registry.memberSeen(GUILD, USER, listening('t1', T0));
      await turn();
      if (!records) set({ record_history: false });
      advance(60_000);
      await recorder.close();
      expect((await stored(store)).stats.lastSeen).toBe(records ? now() : null);
    }
  });

  it('writes no last_seen at shutdown for a user paused until after it', async () => {
    const { store, registry, recorder, advance, set } = setup();
    registry.memberSeen(GUILD, USER, listening('t1', T0));
    await turn();
    set({ paused_until: T0 + 3_600_000 });
    advance(60_000);
    await recorder.close();
    expect((await stored(store)).stats.lastSeen).toBeNull();
  });

  it('applies each change waiting for the stored history as its settings were when it came', async () => {
    const first = setup();
    first.registry.memberSeen(GUILD, USER, listening('t1', T0));
    await first.recorder.close();

    // A restart: the first two changes come before the stored history has been read.
    const { store, registry, recorder, advance, now, set } = setup(first.store, T0 + 10_000);
    set({ record_history: false });
    registry.memberSeen(GUILD, USER, listening('t2', T0 + 10_000, 'dnd'));
    advance(1_000);
    set({ record_history: true });
    registry.memberSeen(GUILD, USER, listening('t2', T0 + 30_000, 'dnd'));
    const resumedAt = now();
    await recorder.flush();
    await turn();
    await recorder.flush();
    const after = await stored(store);
    expect(after.status).toEqual([
      { status: 'dnd', ts: resumedAt },
      { status: 'online', ts: T0 },
    ]);
    expect(after.tracks).toEqual([
      { id: 't2', ts: resumedAt },
      { id: 't1', ts: T0 },
    ]);
    expect(after.plays).toEqual({ t1: 1, t2: 1 });
  });
});
