import { afterEach, describe, expect, it, vi } from 'vitest';
import { RECENT_STATUS_MS, RecentStatuses } from '../../src/history/recent-status.js';
import { type StatusEntry, statsFrom, statusHistoryWith } from '../../src/presence/history.js';
import type { DiscordStatus } from '../../src/presence/model.js';
import type { PresenceChange } from '../../src/presence/registry.js';
import { PresenceSnapshot } from '../../src/presence/snapshot.js';

const USER = '80351110224678912';
const snapshot = (status: DiscordStatus): PresenceSnapshot => new PresenceSnapshot(null, '{}', 1, status, 0);
const updated = (from: DiscordStatus, to: DiscordStatus, at: number): PresenceChange => ({
  kind: 'updated',
  userId: USER,
  previous: snapshot(from),
  current: snapshot(to),
  at,
});
const STORED_STATS = {
  lastStatus: 'online' as const,
  lastSeen: 100,
  trackHistoryCount: 0,
  playsDay: null,
  plays: 0,
};

describe('RecentStatuses', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('remembers status changes and when the user went offline, with the moment of the change', () => {
    let now = 1_000;
    const recent = new RecentStatuses(() => now);
    recent.observe(updated('online', 'idle', 1_000));
    recent.observe(updated('idle', 'idle', 1_050));
    recent.observe(updated('idle', 'offline', 1_100));
    expect(recent.get(USER)).toEqual(
      expect.objectContaining({
        entries: [
          { status: 'offline', ts: 1_100 },
          { status: 'idle', ts: 1_000 },
        ],
        lastSeen: 1_100,
      }),
    );
    now += RECENT_STATUS_MS + 1;
    expect(recent.get(USER)).toBeUndefined();
  });

  it('lets everyone go once the time has passed, though nobody asks', () => {
    vi.useFakeTimers();
    const recent = new RecentStatuses();
    recent.observe({ kind: 'monitored', userId: USER, current: snapshot('dnd'), at: Date.now() });
    vi.advanceTimersByTime(RECENT_STATUS_MS / 2);
    recent.observe({
      kind: 'monitored',
      userId: '80351110224678913',
      current: snapshot('idle'),
      at: Date.now(),
    });
    vi.advanceTimersByTime(RECENT_STATUS_MS / 2);
    expect(recent.size).toBe(2);
    vi.advanceTimersByTime(1);
    expect(recent.size).toBe(1);
    vi.advanceTimersByTime(RECENT_STATUS_MS / 2);
    expect(recent.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a user who leaves while online was last seen then; ?forget drops what came before it', () => {
    const recent = new RecentStatuses(() => 2_000);
    recent.observe({ kind: 'monitored', userId: USER, current: snapshot('dnd'), at: 1_900 });
    recent.observe({ kind: 'unmonitored', userId: USER, previous: snapshot('dnd'), at: 2_000 });
    expect(recent.get(USER)?.lastSeen).toBe(2_000);
    recent.forget(USER, 1_950);
    expect(recent.get(USER)).toEqual(expect.objectContaining({ entries: [], lastSeen: 2_000 }));
    recent.forget(USER, 2_000);
    expect(recent.get(USER)).toBeUndefined();
  });
});

describe('statusHistoryWith and statsFrom', () => {
  const stored: StatusEntry[] = [
    { status: 'online', ts: 500 },
    { status: 'idle', ts: 400 },
  ];

  it('adds what was seen after the newest stored entry, an entry only where the status changes', () => {
    const recent = {
      entries: [
        { status: 'offline' as const, ts: 900 },
        { status: 'online' as const, ts: 800 },
        { status: 'idle' as const, ts: 700 },
        { status: 'online' as const, ts: 500 },
      ],
      lastSeen: 900,
    };
    expect(statusHistoryWith(stored, recent)).toEqual([
      { status: 'offline', ts: 900 },
      { status: 'online', ts: 800 },
      { status: 'idle', ts: 700 },
      ...stored,
    ]);
    // Once the store holds them, nothing is added twice.
    const later = statusHistoryWith(stored, recent);
    expect(statusHistoryWith(later, recent)).toEqual(later);
    expect(statusHistoryWith(stored, undefined)).toBe(stored);
  });

  it('a first sight with the stored status adds nothing', () => {
    expect(statusHistoryWith(stored, { entries: [{ status: 'online', ts: 600 }], lastSeen: null })).toBe(
      stored,
    );
  });

  it('last_seen is the later of the stored one and the one seen live; the newest status stands in for the live one', () => {
    const recent = { entries: [{ status: 'offline' as const, ts: 900 }], lastSeen: 900 };
    expect(statsFrom('offline', STORED_STATS, 1_000, recent)).toEqual(
      expect.objectContaining({ current_status: 'offline', last_seen: 900 }),
    );
    expect(statsFrom(undefined, STORED_STATS, 1_000, recent)).toEqual(
      expect.objectContaining({ current_status: 'offline', last_seen: 900, is_monitored: false }),
    );
    expect(statsFrom('offline', { ...STORED_STATS, lastSeen: null }, 1_000)).toEqual(
      expect.objectContaining({ last_seen: null }),
    );
  });
});
