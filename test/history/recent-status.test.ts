import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RECENT_STATUS_MS, RecentStatuses } from '../../src/history/recent-status.js';
import {
  type RecentStatus,
  type StatusEntry,
  statsFrom,
  statusHistoryWith,
} from '../../src/model/history.js';
import type { DiscordStatus, Snowflake } from '../../src/presence/model.js';
import type { PresenceChange } from '../../src/presence/registry/registry.js';
import { PresenceSnapshot } from '../../src/presence/registry/snapshot.js';

const USER = '80351110224678912';
const snapshot = (status: DiscordStatus): PresenceSnapshot => new PresenceSnapshot(null, '{}', 1, status, 0);
const updated = (from: DiscordStatus, to: DiscordStatus, at: number): PresenceChange => ({
  kind: 'updated',
  userId: USER,
  previous: snapshot(from),
  current: snapshot(to),
  at,
});
const monitored = (userId: Snowflake, status: DiscordStatus, at: number): PresenceChange => ({
  kind: 'monitored',
  userId,
  current: snapshot(status),
  at,
});
const changed = (userId: Snowflake, from: DiscordStatus, to: DiscordStatus, at: number): PresenceChange => ({
  ...updated(from, to, at),
  userId,
});
/** A user id of 17 digits for each number. */
const idOf = (n: number): Snowflake => String(10n ** 16n + BigInt(n));
const STATUSES: DiscordStatus[] = ['online', 'idle', 'dnd', 'offline'];

/** The rules of RecentStatuses over a map of objects, to compare with. */
class Model {
  private readonly users = new Map<Snowflake, RecentStatus & { touched: number }>();
  /** When each user was last erased. */
  private readonly forgotten = new Map<Snowflake, number>();
  constructor(
    private readonly now: () => number,
    private readonly keepMs: number,
  ) {}

  observe(change: PresenceChange): void {
    // Seen before an erasure of the last keepMs: not held.
    const forgotten = this.forgotten.get(change.userId);
    if (forgotten !== undefined && change.at <= forgotten && forgotten >= this.now() - this.keepMs) return;
    const held = this.users.get(change.userId);
    if (change.kind === 'unmonitored') {
      if (change.previous.status !== 'offline') this.hold(change.userId, held?.entries ?? [], change.at);
      return;
    }
    const { status } = change.current;
    if (change.kind === 'updated' && change.previous.status === status) return;
    const wentOffline = change.kind === 'updated' && status === 'offline';
    const entries = [{ status, ts: change.at }, ...(held?.entries ?? [])].slice(0, 20);
    this.hold(change.userId, entries, wentOffline ? change.at : (held?.lastSeen ?? null));
  }

  get(userId: Snowflake, keepMs: number): RecentStatus | undefined {
    for (const [id, held] of this.users) {
      if (held.touched >= this.now() - keepMs) break;
      this.users.delete(id);
    }
    const held = this.users.get(userId);
    return held && { entries: held.entries, lastSeen: held.lastSeen };
  }

  forget(userId: Snowflake, at: number): void {
    this.forgotten.set(userId, Math.max(at, this.forgotten.get(userId) ?? at));
    const held = this.users.get(userId);
    if (!held) return;
    const entries = held.entries.filter((entry) => entry.ts > at);
    const lastSeen = held.lastSeen !== null && held.lastSeen > at ? held.lastSeen : null;
    if (entries.length === 0 && lastSeen === null) this.users.delete(userId);
    else this.users.set(userId, { ...held, entries, lastSeen });
  }

  private hold(userId: Snowflake, entries: StatusEntry[], lastSeen: number | null): void {
    this.users.delete(userId);
    this.users.set(userId, { entries, lastSeen, touched: this.now() });
  }
}

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

  it('holds nothing of a change history does not record, and holds the status recorded when it resumes', () => {
    let records = true;
    const recent = new RecentStatuses(
      () => 1_000,
      RECENT_STATUS_MS,
      () => records,
    );
    recent.observe(updated('offline', 'online', 100));
    records = false;
    recent.observe(updated('online', 'dnd', 200));
    recent.observe(updated('dnd', 'offline', 300));
    recent.observe(updated('offline', 'dnd', 400));
    expect(recent.get(USER)).toEqual({ entries: [{ status: 'online', ts: 100 }], lastSeen: null });
    // Recorded again while still dnd: history compares it with the online it last recorded.
    records = true;
    recent.observe(updated('dnd', 'dnd', 500));
    recent.observe(updated('dnd', 'dnd', 600));
    expect(recent.get(USER)).toEqual({
      entries: [
        { status: 'dnd', ts: 500 },
        { status: 'online', ts: 100 },
      ],
      lastSeen: null,
    });
    // Offline while not recorded, still offline when it resumes: not seen going offline.
    records = false;
    recent.observe(updated('dnd', 'offline', 700));
    records = true;
    recent.observe(updated('offline', 'offline', 800));
    expect(recent.get(USER)?.lastSeen).toBeNull();
    expect(recent.get(USER)?.entries[0]).toEqual({ status: 'offline', ts: 800 });
    // Leaving while not recorded is not going offline either.
    recent.observe(updated('offline', 'online', 900));
    records = false;
    recent.observe({ kind: 'unmonitored', userId: USER, previous: snapshot('online'), at: 950 });
    expect(recent.get(USER)?.lastSeen).toBeNull();
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

  it('after the clock goes back a year, lets go of what was touched ahead of it RECENT_STATUS_MS later, not a year', () => {
    vi.useFakeTimers();
    const recent = new RecentStatuses();
    recent.observe({ kind: 'monitored', userId: USER, current: snapshot('dnd'), at: Date.now() });
    vi.setSystemTime(Date.now() - 365 * 24 * 60 * 60 * 1000);
    // Touched after the clock went back: behind the user touched "later", yet both go together.
    recent.observe({ kind: 'monitored', userId: idOf(1), current: snapshot('idle'), at: Date.now() });
    vi.advanceTimersByTime(RECENT_STATUS_MS);
    expect(recent.size).toBe(2);
    expect(recent.get(USER)?.entries).toEqual([{ status: 'dnd', ts: expect.any(Number) }]);
    vi.advanceTimersByTime(1);
    expect(recent.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('after the clock goes back with nothing new to hold, the sweep still lets go within RECENT_STATUS_MS of noticing', () => {
    vi.useFakeTimers();
    const recent = new RecentStatuses();
    recent.observe({ kind: 'monitored', userId: USER, current: snapshot('dnd'), at: Date.now() });
    vi.setSystemTime(Date.now() - 365 * 24 * 60 * 60 * 1000);
    // The sweep due now finds the user a year ahead of the clock, counts them as touched now…
    vi.advanceTimersByTime(RECENT_STATUS_MS);
    expect(recent.size).toBe(1);
    // …and lets them go RECENT_STATUS_MS later, no timer left behind.
    vi.advanceTimersByTime(RECENT_STATUS_MS + 1);
    expect(recent.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('close stops the sweep: nothing of it outlives the service', () => {
    vi.useFakeTimers();
    const recent = new RecentStatuses();
    recent.observe({ kind: 'monitored', userId: USER, current: snapshot('dnd'), at: Date.now() });
    recent.forget(idOf(2), Date.now());
    expect(vi.getTimerCount()).toBe(1);
    recent.close();
    expect(vi.getTimerCount()).toBe(0);
    // A change heard while the service shuts down sets none again.
    recent.observe({ kind: 'monitored', userId: idOf(3), current: snapshot('idle'), at: Date.now() });
    recent.forget(idOf(4), Date.now());
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

  it('after ?forget, a change seen before it and heard only now is not held; one seen after it is', () => {
    let now = 2_000;
    const recent = new RecentStatuses(() => now);
    recent.forget(USER, 2_000);
    // A member listed at 1_500 and rendered after the erasure: announced with the moment it was listed.
    recent.observe({
      kind: 'monitored',
      userId: USER,
      current: snapshot('online'),
      at: 1_500,
      wasPending: true,
    });
    expect(recent.get(USER)).toBeUndefined();
    recent.observe(updated('online', 'idle', 2_001));
    expect(recent.get(USER)?.entries).toEqual([{ status: 'idle', ts: 2_001 }]);
    // What it remembers of the erasure goes with the time it keeps anything.
    now += RECENT_STATUS_MS + 2;
    recent.observe({ kind: 'monitored', userId: USER, current: snapshot('dnd'), at: 1_999 });
    expect(recent.get(USER)?.entries[0]).toEqual({ status: 'dnd', ts: 1_999 });
  });
});

describe('RecentStatuses held in typed arrays', () => {
  it('holds tens of thousands of users past its first arrays and lets them go oldest first', () => {
    const users = 50_000;
    const start = 1_000_000;
    /** Two users a millisecond, all within RECENT_STATUS_MS. */
    const touched = (n: number): number => start + n / 2;
    let now = start;
    const recent = new RecentStatuses(() => now);
    for (let n = 0; n < users; n++) {
      now = touched(n);
      recent.observe(monitored(idOf(n), STATUSES[n % 4] as DiscordStatus, now));
    }
    expect(recent.size).toBe(users);
    for (let n = 0; n < users; n += 997) {
      expect(recent.get(idOf(n))).toEqual({
        entries: [{ status: STATUSES[n % 4], ts: touched(n) }],
        lastSeen: null,
      });
    }
    for (const gone of [1, 1_000, 20_000, 49_999]) {
      now = touched(gone) + RECENT_STATUS_MS;
      expect(recent.get(idOf(gone - 1))).toBeUndefined();
      expect(recent.get(idOf(gone))?.entries).toEqual([{ status: STATUSES[gone % 4], ts: touched(gone) }]);
      expect(recent.size).toBe(users - gone);
    }
    now += 1;
    expect(recent.get(idOf(users - 1))).toBeUndefined();
    expect(recent.size).toBe(0);
  });

  it('a user flapping more than twenty times keeps the newest twenty, newest first', () => {
    const recent = new RecentStatuses(() => 5_000);
    recent.observe(monitored(USER, 'online', 1_000));
    for (let n = 1; n <= 45; n++) {
      recent.observe(changed(USER, n % 2 ? 'online' : 'idle', n % 2 ? 'idle' : 'online', 1_000 + n));
    }
    expect(recent.get(USER)?.entries).toEqual(
      Array.from({ length: 20 }, (_, i) => ({ status: (45 - i) % 2 ? 'idle' : 'online', ts: 1_045 - i })),
    );
  });

  it('a user touched again after others is let go after them', () => {
    let now = 0;
    const recent = new RecentStatuses(() => now);
    recent.observe(monitored(idOf(1), 'online', now));
    now = 10;
    recent.observe(monitored(idOf(2), 'online', now));
    now = 20;
    recent.observe(monitored(idOf(3), 'online', now));
    now = 30;
    recent.observe(changed(idOf(1), 'online', 'dnd', now));
    now = RECENT_STATUS_MS + 15;
    expect(recent.get(idOf(2))).toBeUndefined();
    expect(recent.get(idOf(1))?.entries).toEqual([
      { status: 'dnd', ts: 30 },
      { status: 'online', ts: 0 },
    ]);
    now = RECENT_STATUS_MS + 25;
    expect(recent.get(idOf(3))).toBeUndefined();
    expect(recent.size).toBe(1);
    now = RECENT_STATUS_MS + 31;
    expect(recent.get(idOf(1))).toBeUndefined();
  });

  it('a user is touched only when something is held for them', () => {
    let now = 0;
    const recent = new RecentStatuses(() => now);
    recent.observe(monitored(idOf(1), 'online', now));
    recent.observe(monitored(idOf(2), 'online', now));
    now = 10;
    recent.observe(changed(idOf(1), 'online', 'online', now));
    recent.observe({ kind: 'unmonitored', userId: idOf(2), previous: snapshot('online'), at: now });
    now = RECENT_STATUS_MS + 5;
    expect(recent.get(idOf(1))).toBeUndefined();
    expect(recent.get(idOf(2))).toEqual({ entries: [{ status: 'online', ts: 0 }], lastSeen: 10 });
  });

  it('?forget of a user in the middle leaves the others and their order', () => {
    let now = 0;
    const recent = new RecentStatuses(() => now);
    for (let n = 1; n <= 3; n++) {
      now = n * 100;
      recent.observe(monitored(idOf(n), 'online', now));
      recent.observe(changed(idOf(n), 'online', 'idle', now + 10));
      recent.observe(changed(idOf(n), 'idle', 'offline', now + 20));
    }
    recent.forget(idOf(2), 210);
    expect(recent.get(idOf(2))).toEqual({ entries: [{ status: 'offline', ts: 220 }], lastSeen: 220 });
    recent.forget(idOf(2), 220);
    expect(recent.get(idOf(2))).toBeUndefined();
    recent.forget(idOf(2), 1_000);
    expect(recent.size).toBe(2);
    now = RECENT_STATUS_MS + 150;
    expect(recent.get(idOf(1))).toBeUndefined();
    expect(recent.get(idOf(3))?.entries).toHaveLength(3);
    now = RECENT_STATUS_MS + 301;
    expect(recent.size).toBe(1);
    expect(recent.get(idOf(3))).toBeUndefined();
    expect(recent.size).toBe(0);
  });

  it('a user arriving after another was let go has nothing of theirs', () => {
    let now = 0;
    const recent = new RecentStatuses(() => now);
    recent.observe(monitored(idOf(1), 'online', now));
    recent.observe(changed(idOf(1), 'online', 'offline', now));
    now = RECENT_STATUS_MS + 1;
    expect(recent.get(idOf(1))).toBeUndefined();
    recent.observe(monitored(idOf(2), 'dnd', now));
    expect(recent.get(idOf(2))).toEqual({ entries: [{ status: 'dnd', ts: now }], lastSeen: null });
    recent.observe({ kind: 'unmonitored', userId: idOf(3), previous: snapshot('idle'), at: now });
    expect(recent.get(idOf(3))).toEqual({ entries: [], lastSeen: now });
    expect(recent.get(idOf(1))).toBeUndefined();
  });

  it('ids of 17 to 20 digits are told apart and kept when a burst around them has gone', () => {
    const ids = [
      '99999999999999999',
      '80351110224678912',
      '123456789012345678',
      '999999999999999999',
      '1000000000000000000',
      '1234567890123456789',
      '18446744073709551615',
      '00000000000000000001',
      '0000000000000000001',
    ];
    let now = 0;
    const recent = new RecentStatuses(() => now);
    for (let n = 0; n < 20_000; n++) recent.observe(monitored(idOf(n), 'online', now));
    now = 10;
    ids.forEach((id, i) => {
      recent.observe(monitored(id, 'online', i));
      recent.observe(changed(id, 'online', 'offline', 100 + i));
    });
    // The burst goes; what is left is copied into arrays of its size.
    now = RECENT_STATUS_MS + 5;
    expect(recent.get(idOf(0))).toBeUndefined();
    expect(recent.size).toBe(ids.length);
    ids.forEach((id, i) => {
      expect(recent.get(id)).toEqual({
        entries: [
          { status: 'offline', ts: 100 + i },
          { status: 'online', ts: i },
        ],
        lastSeen: 100 + i,
      });
    });
    expect(recent.get('1')).toBeUndefined();
    expect(recent.get('18446744073709551614')).toBeUndefined();
  });

  it('a steady flow of users is held as a map of objects would hold it', () => {
    const keepMs = 50;
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.oneof(
              {
                weight: 30,
                arbitrary: fc.constantFrom('monitored', 'updated', 'unmonitored', 'forget', 'wait'),
              },
              // A member listing: past the first arrays, which go again once it has gone.
              { weight: 1, arbitrary: fc.constant('listing') },
            ),
            fc.integer({ min: 0, max: 2_999 }),
            fc.constantFrom(...STATUSES),
            fc.constantFrom(...STATUSES),
            fc.integer({ min: 0, max: 30 }),
          ),
          { maxLength: 400, size: 'max' },
        ),
        (operations) => {
          let now = 0;
          const recent = new RecentStatuses(() => now, keepMs);
          const model = new Model(() => now, keepMs);
          for (const [kind, n, from, to, step] of operations) {
            // Few users flap a lot, many come once: both the entries and the slots grow and shrink.
            const userId = idOf(n % 3 === 0 ? n % 9 : n);
            if (kind === 'listing') {
              for (let k = 0; k < 1_500; k++) {
                const change = monitored(idOf(10_000 + k), to, now);
                recent.observe(change);
                model.observe(change);
              }
            } else if (kind === 'wait') now += step;
            else if (kind === 'forget') {
              recent.forget(userId, now - step);
              model.forget(userId, now - step);
            } else {
              const at = now - (step % 3);
              const change: PresenceChange =
                kind === 'monitored'
                  ? monitored(userId, to, at)
                  : kind === 'updated'
                    ? changed(userId, from, to, at)
                    : { kind, userId, previous: snapshot(from), at };
              recent.observe(change);
              model.observe(change);
            }
            expect(recent.get(userId)).toEqual(model.get(userId, keepMs));
          }
          for (const n of [...Array(3_000).keys(), 10_000, 10_777, 11_499]) {
            expect(recent.get(idOf(n))).toEqual(model.get(idOf(n), keepMs));
          }
        },
      ),
      { numRuns: 60 },
    );
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
