import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import type { Bus } from '../../src/bus/ports.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import type { RawPresence } from '../../src/presence/model.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';

const GUILD_A = '1';
const GUILD_B = '2';
const USER = { id: '80351110224678912', username: 'alice' };
const T0 = Date.UTC(2026, 10, 22, 12);

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

function setup(bus?: Bus) {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  stores.push(store);
  let now = T0;
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    now: () => now,
  });
  const recorder = new HistoryRecorder({
    store: store.history,
    logger: pino({ level: 'silent' }),
    now: () => now,
    flushMs: 60_000,
    ...(bus ? { bus } : {}),
  });
  registry.onChange(recorder.observe);
  return { store, registry, recorder, now: () => now, advance: (ms: number) => (now += ms) };
}

function listening(trackId: string, start: number): RawPresence {
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [
      spotifyActivity({
        song: trackId,
        artists: ['A'],
        album: 'B',
        imageId: 'x',
        trackId,
        start,
        end: start + 180_000,
      }),
    ],
  };
}

describe('HistoryRecorder', () => {
  it('batches writes: nothing is written until a flush, then everything at once', async () => {
    const { store, registry, recorder } = setup();
    registry.memberSeen(GUILD_A, USER, listening('t1', T0));
    await new Promise((resolve) => setImmediate(resolve));
    expect((await store.history.history(USER.id, 100)).tracks).toHaveLength(0);
    await recorder.flush();
    const { status, tracks } = await store.history.history(USER.id, 100);
    expect(status).toEqual([{ status: 'online', ts: T0 }]);
    expect(tracks.map((t) => t.track_id)).toEqual(['t1']);
  });

  it('writes nothing for a presence taken back after a restart, and follows it: its leave writes last_seen', async () => {
    const { store, registry, recorder, advance } = setup();
    registry.restore({
      userId: USER.id,
      guildIds: [GUILD_A],
      stale: false,
      text: JSON.stringify([T0 - 60_000, USER, listening('t1', T0 - 60_000)]),
    });
    registry.get(USER.id);
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.flush();
    expect(await store.history.history(USER.id, 100)).toEqual({ status: [], tracks: [] });

    advance(5_000);
    registry.memberRemoved(GUILD_A, USER.id);
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.flush();
    expect((await store.history.stats(USER.id)).lastSeen).toBe(T0 + 5_000);
    expect((await store.history.history(USER.id, 100)).tracks).toEqual([]);
  });

  it('records one play when two guilds send the same update', async () => {
    const { store, registry, recorder, advance } = setup();
    registry.memberSeen(GUILD_A, USER);
    registry.memberSeen(GUILD_B, USER);
    advance(1000);
    registry.memberSeen(GUILD_A, USER, listening('t1', T0 + 1000));
    registry.memberSeen(GUILD_B, USER, listening('t1', T0 + 1400));
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.flush();
    expect((await store.history.history(USER.id, 100)).tracks).toHaveLength(1);
  });

  it('forget drops pending writes and waits for a batch in flight, so nothing erased comes back', async () => {
    const { store, registry, recorder, advance } = setup();
    registry.memberSeen(GUILD_A, USER, listening('t1', T0));
    await new Promise((resolve) => setImmediate(resolve));
    const flushing = recorder.flush();
    advance(200_000);
    registry.memberSeen(GUILD_A, USER, listening('t2', T0 + 200_000));
    await recorder.forget(USER.id);
    await flushing;
    await recorder.flush();
    expect(await store.history.history(USER.id, 100)).toEqual({ status: [], tracks: [] });
    expect((await store.history.stats(USER.id)).plays).toBe(0);
  });

  it('forget while the stored history is still being read: nothing before it is written, the user stays live', async () => {
    const { store, registry, recorder, advance } = setup();
    registry.memberSeen(GUILD_A, USER, listening('t1', T0));
    const forgotten = recorder.forget(USER.id);
    await new Promise((resolve) => setImmediate(resolve));
    await forgotten;
    advance(10_000);
    registry.memberSeen(GUILD_A, USER, { ...listening('t1', T0), status: 'offline', client_status: {} });
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.flush();
    const { status, tracks } = await store.history.history(USER.id, 100);
    expect(status.map((entry) => entry.status)).toEqual(['offline']);
    expect(tracks).toEqual([]);
    // Seen online before the forget and offline after it: that is going offline now.
    expect((await store.history.stats(USER.id)).lastSeen).toBe(T0 + 10_000);
  });

  it('after forget, records new changes but not the track already playing', async () => {
    const { store, registry, recorder, advance } = setup();
    registry.memberSeen(GUILD_A, USER, listening('t1', T0));
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.forget(USER.id);
    advance(10_000);
    registry.memberSeen(GUILD_A, USER, { ...listening('t1', T0 - 50_000), status: 'idle' });
    advance(200_000);
    registry.memberSeen(GUILD_A, USER, { ...listening('t2', T0 + 210_000), status: 'idle' });
    await recorder.flush();
    const { status, tracks } = await store.history.history(USER.id, 100);
    expect(status.map((s) => s.status)).toEqual(['idle']);
    expect(tracks.map((t) => t.track_id)).toEqual(['t2']);
  });

  it('drops what it holds queued of a user whose history another node erased, told by the bus', async () => {
    const bus = new LocalBus();
    const { store, registry, recorder, now, advance } = setup(bus);
    registry.memberSeen(GUILD_A, USER, listening('t1', T0));
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.flush();
    advance(1_000);
    registry.memberSeen(GUILD_A, USER, { ...listening('t1', T0), status: 'idle' });
    advance(200_000);
    registry.memberSeen(GUILD_A, USER, { ...listening('t2', T0 + 201_000), status: 'idle' });

    // `?forget confirm` handled by another node: its recorder shares the store and the bus, not the queue.
    const elsewhere = new HistoryRecorder({
      store: store.history,
      logger: pino({ level: 'silent' }),
      now,
      bus,
    });
    await elsewhere.forget(USER.id);
    await elsewhere.close();
    advance(1_000);
    registry.memberSeen(GUILD_A, USER, { ...listening('t2', T0 + 201_000), status: 'dnd' });
    const written = vi.spyOn(store.history, 'appendHistory');
    await recorder.flush();
    // Dropped here, not left for the store to refuse.
    expect(written.mock.calls.flatMap(([batch]) => batch.map((write) => write.status?.status))).toEqual([
      'dnd',
    ]);
    const { status, tracks } = await store.history.history(USER.id, 100);
    expect(status).toEqual([{ status: 'dnd', ts: T0 + 202_000 }]);
    expect(tracks).toEqual([]);
  });

  it('picks up from stored history after a restart', async () => {
    const { store, registry, recorder } = setup();
    registry.memberSeen(GUILD_A, USER, listening('t1', T0));
    await new Promise((resolve) => setImmediate(resolve));
    await recorder.close();

    let now = T0 + 5_000;
    const restarted = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
      now: () => now,
    });
    const second = new HistoryRecorder({
      store: store.history,
      logger: pino({ level: 'silent' }),
      now: () => now,
      flushMs: 60_000,
    });
    restarted.onChange(second.observe);
    restarted.memberSeen(GUILD_A, USER, listening('t1', T0 + 300));
    now += 1;
    await new Promise((resolve) => setImmediate(resolve));
    await second.close();
    const { status, tracks } = await store.history.history(USER.id, 100);
    expect(status).toHaveLength(1);
    expect(tracks).toHaveLength(1);
    expect((await store.history.stats(USER.id)).lastSeen).toBe(T0 + 5_001);
  });

  it('reads the stored history of users first seen together in one go, and records each from where it was', async () => {
    const { store, registry, recorder } = setup();
    const users = Array.from({ length: 50 }, (_, n) => ({
      id: String(80351110224678912n + BigInt(n)),
      username: `u${n}`,
    }));
    for (const user of users)
      registry.memberSeen(GUILD_A, user, { status: 'dnd', client_status: {}, activities: [] });
    await recorder.close();

    const restarted = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
      now: () => T0 + 10_000,
    });
    const reads: number[] = [];
    const latest = store.history.latest.bind(store.history);
    const second = new HistoryRecorder({
      store: Object.assign(Object.create(store.history), {
        latest: (userIds: readonly string[]) => {
          reads.push(userIds.length);
          return latest(userIds);
        },
      }),
      logger: pino({ level: 'silent' }),
      now: () => T0 + 10_000,
      flushMs: 60_000,
    });
    restarted.onChange(second.observe);
    // Half come back still dnd (no new status entry), half come back idle (one new entry each).
    for (const [n, user] of users.entries()) {
      restarted.memberSeen(GUILD_A, user, {
        status: n % 2 ? 'idle' : 'dnd',
        client_status: {},
        activities: [],
      });
    }
    await second.close();
    expect(reads).toEqual([50]);
    for (const [n, user] of users.entries()) {
      const { status } = await store.history.history(user.id, 100);
      expect(status.map((entry) => entry.status)).toEqual(n % 2 ? ['idle', 'dnd'] : ['dnd']);
    }
  });

  it("records the others of a batch when one user's stored history cannot be read", async () => {
    const { store } = setup();
    const users = ['80351110224678930', '80351110224678931', '80351110224678932'].map((id) => ({
      id,
      username: `u${id}`,
    }));
    const latest = store.history.latest.bind(store.history);
    const recorder = new HistoryRecorder({
      store: Object.assign(Object.create(store.history), {
        latest: async (userIds: readonly string[]) => {
          const found = await latest(userIds);
          // A stored track without its timestamps, and a status Discord has not: what a store edited by
          // hand could hold.
          found.set(users[1]?.id as string, { status: null, track: { song: 'x' } as never });
          found.set(users[2]?.id as string, { status: { status: 'away' as never, ts: T0 - 1 }, track: null });
          return found;
        },
      }),
      logger: pino({ level: 'silent' }),
      now: () => T0,
      flushMs: 60_000,
    });
    const registry = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
      now: () => T0,
    });
    registry.onChange(recorder.observe);
    for (const user of users)
      registry.memberSeen(GUILD_A, user, { status: 'dnd', client_status: {}, activities: [] });
    await recorder.close();
    for (const user of users) {
      expect((await store.history.history(user.id, 100)).status.map((entry) => entry.status)).toEqual([
        'dnd',
      ]);
    }
  });

  it('after release (another node records the user now), forgets the user: no last_seen at shutdown, memory read again', async () => {
    const { store, registry, recorder, advance } = setup();
    registry.memberSeen(GUILD_A, USER, listening('t1', T0));
    await recorder.flush();
    recorder.release(USER.id);
    advance(60_000);
    await recorder.close();
    expect((await store.history.stats(USER.id)).lastSeen).toBeNull();
  });

  it('writes last_seen once for a user who leaves online, also when they leave before their history is read', async () => {
    for (const leaveWhileLoading of [false, true]) {
      const { store, registry, recorder, advance } = setup();
      registry.memberSeen(GUILD_A, USER, listening('t1', T0));
      if (!leaveWhileLoading) await new Promise((resolve) => setImmediate(resolve));
      advance(1_000);
      registry.memberRemoved(GUILD_A, USER.id);
      await new Promise((resolve) => setImmediate(resolve));
      await recorder.flush();
      expect((await store.history.stats(USER.id)).lastSeen).toBe(T0 + 1_000);

      // Back offline: not seen online since coming back, so no going offline either, now or at shutdown.
      advance(1_000);
      registry.memberSeen(GUILD_A, USER);
      await new Promise((resolve) => setImmediate(resolve));
      advance(1_000);
      await recorder.close();
      expect((await store.history.stats(USER.id)).lastSeen).toBe(T0 + 1_000);
    }
  });
});
