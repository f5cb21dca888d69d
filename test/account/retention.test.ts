import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RetentionSweep, type RetentionSweepOptions, retentionTiming } from '../../src/account/retention.js';
import { AccountService } from '../../src/account/service.js';
import { LocalBus } from '../../src/bus/local.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import type { HistoryWrite, Store } from '../../src/store/ports.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';
import { KV_LIMITS } from '../support/kv.js';
import { profileOf } from '../support/profiles.js';

/**
 * Retention's sweep on a real SQLite store, a real registry and the real erasure, on a clock the test
 * moves: who is erased, when, and who never is.
 */

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 11, 1);
const GUILD = '600000000000000001';
const OTHER_GUILD = '600000000000000002';
const ALICE = '600000000000000101';
const BOB = '600000000000000102';
const CAROL = '600000000000000103';
const UNKNOWN = '600000000000000199';
const LIMITS = { history: 100, trackedTracks: 1000 };

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const closing of opened.splice(0).reverse()) await closing.close();
});

/** Everything a user can have kept: KV, a key, a webhook, settings, a profile, history and a play. */
async function give(store: Store, userId: string, at: number): Promise<void> {
  await store.kv.writeKv(userId, { set: new Map([['mood', 'ok']]), delete: [] }, KV_LIMITS);
  await store.apiKeys.replaceKey(userId, Buffer.alloc(32, Number(userId.slice(-2))), at);
  await store.webhooks.addWebhook(
    {
      id: `wh_${userId}`,
      userId,
      url: `https://example.com/${userId}`,
      events: ['presence'],
      secret: 'secret',
      createdAt: at,
      disabledAt: null,
      disabledReason: null,
    },
    5,
  );
  await store.privacy.patchPrivacy(userId, { hide_kv: true });
  await store.profiles.putProfiles(
    new Map([[userId, { profile: { banner: 'a_1', accent_color: 1 }, fetchedAt: at }]]),
  );
  const write: HistoryWrite = {
    userId,
    status: { status: 'online', ts: at },
    track: {
      source: 'spotify',
      song: 'Song',
      artist: 'Artist',
      album: 'Album',
      album_art_url: null,
      track_id: 'track',
      track_url: null,
      timestamps: { start: at, end: at + 1_000 },
      duration_ms: 1_000,
      ts: at,
    },
    countsPlay: true,
    lastSeen: at,
  };
  await store.history.appendHistory([write], LIMITS);
}

/** What the store holds of a user, as the API reads it. */
async function held(store: Store, userId: string) {
  return {
    kv: (await store.kv.getKv(userId)).kv,
    key: (await store.accounts.details(userId)).key,
    webhooks: await store.webhooks.webhooksOf(userId),
    privacy: await store.privacy.getPrivacy(userId),
    profile: await profileOf(store, userId),
    history: await store.history.history(userId, 100),
    stats: await store.history.stats(userId),
    topTracks: await store.history.topTracks(userId, 1, 10),
  };
}

/** History, stats and top tracks: what the routes answer from. */
async function answers(store: Store, userId: string) {
  const { history, stats, topTracks } = await held(store, userId);
  return { history, stats, topTracks };
}

function setup(retentionDays: number, options: Partial<RetentionSweepOptions> = {}) {
  let clock = T0;
  const now = () => clock;
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  opened.push(store);
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: { applicationIds: new Set(), names: new Set() },
    now,
  });
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const account = new AccountService({
    store: store.accounts,
    bus: new LocalBus(),
    kv: { erased: async () => {} },
    webhooks: { erased: async () => {} },
    privacy: { erased: async () => {} },
    logger,
    now,
  });
  let erasedCount = 0;
  const sweep = new RetentionSweep({
    store: store.retention,
    registry,
    account,
    retentionDays,
    logger,
    now,
    onErased: (users) => {
      erasedCount += users;
    },
    ...options,
  });
  opened.push(sweep);
  registry.onChange(sweep.observe);
  const join = (userId: string, guildId = GUILD) =>
    registry.memberSeen(guildId, { id: userId, username: userId });
  return {
    store,
    registry,
    sweep,
    lines,
    join,
    leave: (userId: string, guildId = GUILD) => registry.memberRemoved(guildId, userId),
    /** Moves the clock to `at`. */
    at: (at: number) => {
      clock = at;
    },
    erased: () => erasedCount,
  };
}

describe('retention sweep', () => {
  it('erases a user who left once the retention has passed since, and not a moment before', async () => {
    const { store, sweep, join, leave, at, lines, erased } = setup(30);
    join(ALICE);
    join(BOB);
    await sweep.refresh();
    await give(store, ALICE, T0);
    await give(store, BOB, T0);
    const bobs = await held(store, BOB);
    const left = T0 + 60_000;
    at(left);
    leave(ALICE);
    await sweep.flush();

    at(left + 30 * DAY);
    // Bob's moment is the first refresh's, older than Alice's: he is monitored, so he is kept and given now.
    expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 1 });
    expect((await held(store, ALICE)).kv).toEqual({ mood: 'ok' });

    at(left + 30 * DAY + 1);
    expect(await sweep.sweep()).toEqual({ erased: 1, monitored: 0 });
    expect(erased()).toBe(1);
    expect(await held(store, ALICE)).toEqual({
      kv: {},
      key: null,
      webhooks: [],
      privacy: undefined,
      profile: undefined,
      ...(await answers(store, UNKNOWN)),
    });
    expect(await answers(store, ALICE)).toEqual(await answers(store, UNKNOWN));
    expect(await held(store, BOB)).toEqual(bobs);
    // Alice's moment is gone; Bob's is the first sweep's.
    expect(await store.retention.due(left + 30 * DAY, 10)).toEqual([]);
    expect(await store.retention.due(left + 30 * DAY + 1, 10)).toEqual([BOB]);
    expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 0 });

    // One line per sweep, with the counts and no user id.
    const sweeps = lines.filter((line) => line.msg === 'retention sweep');
    expect(sweeps.map(({ erased, monitored }) => ({ erased, monitored }))).toEqual([
      { erased: 0, monitored: 1 },
      { erased: 1, monitored: 0 },
      { erased: 0, monitored: 0 },
    ]);
    expect(JSON.stringify(lines.filter((line) => line.level === 30))).not.toMatch(/60{14}1\d\d/);
  });

  it('keeps a user who came back, and counts their retention from their next leave', async () => {
    const { store, sweep, join, leave, at } = setup(30);
    join(ALICE);
    await sweep.refresh();
    await give(store, ALICE, T0);
    at(T0 + 1_000);
    leave(ALICE);
    await sweep.flush();
    at(T0 + 10 * DAY);
    join(ALICE, OTHER_GUILD);
    await sweep.flush();
    at(T0 + 20 * DAY);
    leave(ALICE, OTHER_GUILD);
    await sweep.flush();

    at(T0 + 31 * DAY);
    expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 0 });
    expect((await held(store, ALICE)).kv).toEqual({ mood: 'ok' });
    at(T0 + 50 * DAY + 1);
    expect(await sweep.sweep()).toEqual({ erased: 1, monitored: 0 });
    expect((await held(store, ALICE)).kv).toEqual({});
  });

  it('never finds due a user monitored for months: each day refreshes their moment', async () => {
    const { store, sweep, join, at } = setup(30);
    join(BOB);
    await give(store, BOB, T0);
    for (let day = 0; day <= 120; day++) {
      at(T0 + day * DAY);
      await sweep.refresh();
      expect(await store.retention.due(T0 + day * DAY - 30 * DAY, 10)).toEqual([]);
      expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 0 });
    }
    expect((await held(store, BOB)).kv).toEqual({ mood: 'ok' });
  });

  it('with a retention of 0, erases a user as soon as their leave is written, not one who came back', async () => {
    const { store, sweep, join, leave, at, registry } = setup(0);
    join(ALICE);
    join(BOB);
    join(CAROL);
    await sweep.refresh();
    for (const userId of [ALICE, BOB, CAROL]) await give(store, userId, T0);
    at(T0 + 5_000);
    leave(ALICE);
    // Bob leaves and is back before anything is written.
    leave(BOB);
    join(BOB, OTHER_GUILD);
    // Carol opts out (MONITOR=opt-in): let go as if she had left.
    registry.stopMonitoring(CAROL);
    await sweep.flush();
    expect((await held(store, ALICE)).kv).toEqual({});
    expect(await answers(store, ALICE)).toEqual(await answers(store, UNKNOWN));
    expect((await held(store, CAROL)).kv).toEqual({});
    expect((await held(store, BOB)).kv).toEqual({ mood: 'ok' });
    expect(await store.retention.due(T0 + 100 * DAY, 10)).toEqual([BOB]);
    // A sweep then finds nobody else to erase.
    at(T0 + 10_000);
    expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 1 });
  });

  it('with a retention of 0, only records a leave heard before every guild is listed', async () => {
    const { store, sweep, join, leave, at } = setup(0);
    join(ALICE);
    await give(store, ALICE, T0);
    at(T0 + 1);
    // Her other guild may not be listed yet: the sweep after the listing decides.
    leave(ALICE);
    await sweep.flush();
    expect((await held(store, ALICE)).kv).toEqual({ mood: 'ok' });
    expect(await store.retention.due(T0 + 2, 10)).toEqual([ALICE]);
    at(T0 + 2);
    await sweep.refresh();
    expect(await sweep.sweep()).toEqual({ erased: 1, monitored: 0 });
    expect((await held(store, ALICE)).kv).toEqual({});
  });

  it('adopts a user with data and no moment, and erases them a retention later', async () => {
    const { store, sweep, at } = setup(30);
    // Data from before moments were kept, of a user no longer monitored.
    await give(store, CAROL, T0 - 400 * DAY);
    at(T0);
    expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 0 });
    expect(await sweep.adopt()).toBe(1);
    expect(await sweep.adopt()).toBe(0);
    at(T0 + 30 * DAY);
    expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 0 });
    at(T0 + 30 * DAY + 1);
    expect(await sweep.sweep()).toEqual({ erased: 1, monitored: 0 });
    expect(await answers(store, CAROL)).toEqual(await answers(store, UNKNOWN));
    expect(await sweep.adopt()).toBe(0);
  });

  it('in scale-out, keeps a user another node monitors and never takes a moment younger than a day', async () => {
    const elsewhere = new Set([BOB]);
    const { store, sweep, at } = setup(0, {
      clustered: { monitored: async (userId) => elsewhere.has(userId) },
    });
    await give(store, ALICE, T0);
    await give(store, BOB, T0);
    await store.retention.seen(
      new Map([
        [ALICE, T0],
        [BOB, T0],
      ]),
    );
    at(T0 + DAY);
    expect(await sweep.sweep()).toEqual({ erased: 0, monitored: 0 });
    at(T0 + DAY + 1);
    expect(await sweep.sweep()).toEqual({ erased: 1, monitored: 1 });
    expect((await held(store, ALICE)).kv).toEqual({});
    expect((await held(store, BOB)).kv).toEqual({ mood: 'ok' });
    expect(await store.retention.due(T0 + DAY + 1, 10)).toEqual([]);
  });

  it('stops at an erasure that fails, keeping the moment; the next sweep erases the user', async () => {
    let failing = true;
    const { store, sweep, at } = setup(30, {
      account: {
        erase: async (userId) => {
          if (failing) throw new Error('store away');
          return store.accounts.erase(userId, T0);
        },
      },
    });
    await give(store, ALICE, T0);
    await store.retention.seen(new Map([[ALICE, T0]]));
    at(T0 + 31 * DAY);
    await expect(sweep.sweep()).rejects.toThrow('store away');
    expect(await store.retention.due(T0 + 31 * DAY, 10)).toEqual([ALICE]);
    failing = false;
    expect(await sweep.sweep()).toEqual({ erased: 1, monitored: 0 });
    expect((await held(store, ALICE)).kv).toEqual({});
  });

  it('refreshes and sweeps on its own once every guild is listed, then every hour', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const { store, sweep, join, leave, at } = setup(30);
    join(BOB);
    join(CAROL);
    await give(store, ALICE, T0);
    await give(store, CAROL, T0);
    await store.retention.seen(new Map([[ALICE, T0]]));
    at(T0 + 31 * DAY);
    let listed = (): void => undefined;
    sweep.start(
      new Promise<void>((resolve) => {
        listed = resolve;
      }),
    );
    await settle();
    expect((await held(store, ALICE)).kv).toEqual({ mood: 'ok' });
    listed();
    // The first refresh and sweep: Alice, gone for 31 days, is erased; Bob and Carol have moments now.
    await eventually(async () => expect((await held(store, ALICE)).kv).toEqual({}));
    expect(await store.retention.due(T0 + 31 * DAY + 1, 10)).toEqual([BOB, CAROL]);

    // Carol leaves: her moment is written after a second, and she is erased by a sweep 30 days on.
    leave(CAROL);
    await vi.advanceTimersByTimeAsync(retentionTiming(30, false).flushMs);
    await settle();
    at(T0 + 61 * DAY + 1);
    await vi.advanceTimersByTimeAsync(retentionTiming(30, false).sweepMs);
    await eventually(async () => expect((await held(store, CAROL)).kv).toEqual({}));
    expect(await store.retention.due(T0 + 62 * DAY, 10)).toEqual([BOB]);
  });
});

/** Lets the sweep's work (store calls, its turns between batches) run to its end. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 100; turn++) await new Promise((resolve) => setImmediate(resolve));
}
