import { describe, expect, it } from 'vitest';
import type { TrackEntry } from '../../src/presence/history.js';
import type { HistoryWrite } from '../../src/store/ports.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';

const T0 = Date.UTC(2026, 10, 22, 12);
const LIMITS = { history: 100, trackedTracks: 1000 };

function entry(id: string | null, ts: number): TrackEntry {
  return {
    source: 'spotify',
    song: `Song ${id}`,
    artist: 'Artist',
    album: 'Album',
    album_art_url: null,
    track_id: id,
    track_url: null,
    timestamps: { start: ts, end: ts + 1000 },
    duration_ms: 1000,
    ts,
  };
}

const play = (userId: string, id: string | null, ts: number): HistoryWrite => ({
  userId,
  status: null,
  track: entry(id, ts),
  countsPlay: id !== null,
  lastSeen: null,
});

describe('SQLite history store', () => {
  it('keeps the 100 most recent entries of each list, newest first', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    const writes: HistoryWrite[] = [];
    for (let i = 0; i < 150; i++) {
      writes.push({
        userId: '1',
        status: { status: i % 2 ? 'idle' : 'online', ts: T0 + i },
        track: null,
        countsPlay: false,
        lastSeen: null,
      });
      writes.push(play('1', `t${i}`, T0 + i));
    }
    await store.history.appendHistory(writes.slice(0, 100), LIMITS);
    await store.history.appendHistory(writes.slice(100), LIMITS);
    const { status, tracks } = await store.history.history('1', 100);
    expect(status).toHaveLength(100);
    expect(tracks).toHaveLength(100);
    expect(status[0]).toEqual({ status: 'idle', ts: T0 + 149 });
    expect(tracks[0]?.track_id).toBe('t149');
    expect(tracks[99]?.track_id).toBe('t50');
    expect((await store.history.stats('1')).trackHistoryCount).toBe(100);
    await store.close();
  });

  it('orders top tracks by plays, then by last played; keeps the latest metadata', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    await store.history.appendHistory(
      [
        play('1', 'a', T0),
        play('1', 'b', T0 + 1),
        play('1', 'a', T0 + 2),
        play('1', 'c', T0 + 3),
        play('1', 'b', T0 + 4),
        play('1', 'c', T0 + 5),
        play('1', 'c', T0 + 6),
        play('1', 'once', T0 + 7),
        play('1', null, T0 + 8),
        play('1', null, T0 + 9),
      ],
      LIMITS,
    );
    const top = await store.history.topTracks('1', 2, 10);
    expect(top.map((t) => [t.track_id, t.play_count, t.last_played])).toEqual([
      ['c', 3, T0 + 6],
      ['b', 2, T0 + 4],
      ['a', 2, T0 + 2],
    ]);
    expect(top[0]).not.toHaveProperty('ts');
    expect(await store.history.topTracks('1', 2, 1)).toHaveLength(1);
    await store.close();
  });

  it('caps the tracks counted per user, evicting the least played and oldest', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    await store.history.appendHistory(
      [play('1', 'keep', T0), play('1', 'keep', T0 + 1), play('1', 'old', T0 + 2)],
      {
        history: 100,
        trackedTracks: 2,
      },
    );
    await store.history.appendHistory([play('1', 'new', T0 + 3)], { history: 100, trackedTracks: 2 });
    const rows = store.db.prepare('SELECT track_key FROM play_counts ORDER BY track_key').all();
    expect(rows).toEqual([{ track_key: 'spotify:keep' }, { track_key: 'spotify:new' }]);
    await store.close();
  });

  it('counts plays per UTC day and keeps the latest last_seen', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    const late = Date.UTC(2026, 10, 21, 23, 59);
    await store.history.appendHistory([play('1', 'a', late), play('1', 'b', late + 1)], LIMITS);
    expect(await store.history.stats('1')).toMatchObject({ playsDay: '2026-11-21', plays: 2 });
    await store.history.appendHistory([play('1', 'c', Date.UTC(2026, 10, 22, 0, 1))], LIMITS);
    expect(await store.history.stats('1')).toMatchObject({ playsDay: '2026-11-22', plays: 1 });
    const seen = (ts: number): HistoryWrite => ({
      userId: '1',
      status: null,
      track: null,
      countsPlay: false,
      lastSeen: ts,
    });
    await store.history.appendHistory([seen(T0 + 10), seen(T0)], LIMITS);
    expect((await store.history.stats('1')).lastSeen).toBe(T0 + 10);
    await store.close();
  });

  it('forgets one user entirely, and only that user', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    await store.kv.writeKv('1', { set: new Map([['k', 'v']]), delete: [] }, 512);
    await store.history.appendHistory(
      [
        { userId: '1', status: { status: 'online', ts: T0 }, track: null, countsPlay: false, lastSeen: T0 },
        play('1', 'a', T0),
        play('1', 'a', T0 + 1),
        play('2', 'a', T0),
      ],
      LIMITS,
    );
    expect(await store.history.forget('1')).toEqual({ statusEntries: 1, trackEntries: 2, playCounts: 1 });
    expect(await store.history.history('1', 100)).toEqual({ status: [], tracks: [] });
    expect(await store.history.stats('1')).toEqual({
      lastStatus: null,
      lastSeen: null,
      trackHistoryCount: 0,
      playsDay: null,
      plays: 0,
    });
    expect(await store.history.topTracks('1', 1, 10)).toEqual([]);
    expect((await store.history.history('2', 100)).tracks).toHaveLength(1);
    expect((await store.kv.getKv('1')).kv).toEqual({ k: 'v' });
    await store.close();
  });
});
