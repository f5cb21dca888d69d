import { REST } from '@discordjs/rest';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { PROFILE_AGE_STEP_MS, PROFILE_TTL_MS, ProfileFetcher } from '../../src/discord/profiles.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';
import { profileOf } from '../support/profiles.js';

/** Banners change without Discord telling bots: the fetcher refreshes profiles by age. */

const USER = '80351110224678912';
const GUILD = '300000000000000001';
const closers: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A fetcher on its own clock, whose sweeps the test runs (the timer's are an hour apart). */
function fetcherOf(
  simulator: DiscordSimulator,
  registry: PresenceRegistry,
  store: SqliteStore,
  now: () => number,
): ProfileFetcher {
  const fetcher = new ProfileFetcher({
    rest: new REST({ api: simulator.apiUrl, version: '10' }).setToken(simulator.token),
    store: store.profiles,
    registry,
    logger: pino({ level: 'silent' }),
    now,
    sweepMs: 60 * 60 * 1000,
  });
  closers.push(() => fetcher.stop());
  return fetcher;
}

async function setup() {
  const simulator = new DiscordSimulator();
  await simulator.start();
  closers.push(() => simulator.stop());
  simulator.setProfile(USER, { banner: 'first', accent_color: 1 });
  const registry = new PresenceRegistry({
    cdnUrl: simulator.cdnUrl,
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
  });
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  closers.push(() => store.close());
  let now = Date.UTC(2026, 10, 22, 12);
  const fetcher = fetcherOf(simulator, registry, store, () => now);
  registry.memberSeen(GUILD, {
    id: USER,
    username: 'user',
    global_name: null,
    avatar: null,
    discriminator: '0',
  });
  await fetcher.usersMonitored([USER]);
  await eventually(() => expect(registry.get(USER)?.presence.banner).toBe('first'));
  return {
    simulator,
    registry,
    fetcher,
    store,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('profile refresh', () => {
  it('fetches a profile again once it is older than the TTL, and not before', async () => {
    const { simulator, registry, fetcher, advance } = await setup();
    simulator.setProfile(USER, { banner: 'second', accent_color: 2 });

    advance(PROFILE_TTL_MS - 1_000);
    fetcher.sweep();
    expect(fetcher.pending).toBe(0);
    expect(registry.get(USER)?.presence.banner).toBe('first');

    // Fetch times are kept by the minute: due within a minute after the TTL.
    advance(PROFILE_AGE_STEP_MS + 1_000);
    fetcher.sweep();
    await eventually(() => expect(registry.get(USER)?.presence.banner).toBe('second'));
    expect(registry.get(USER)?.presence.accent_color).toBe(2);
    expect(simulator.requestCount(`GET /users/${USER}`)).toBe(2);
  });

  it('fetches a profile again once a TTL, however often it sweeps, and again after a USER_UPDATE fetch', async () => {
    const { simulator, registry, fetcher, advance } = await setup();
    advance(PROFILE_TTL_MS + PROFILE_AGE_STEP_MS);
    fetcher.sweep();
    await eventually(() => expect(simulator.requestCount(`GET /users/${USER}`)).toBe(2));
    await eventually(() => expect(fetcher.pending).toBe(0));
    for (let i = 0; i < 5; i++) {
      advance(PROFILE_AGE_STEP_MS);
      fetcher.sweep();
    }
    expect(fetcher.pending).toBe(0);
    expect(simulator.requestCount(`GET /users/${USER}`)).toBe(2);

    // Fetched again in between (a USER_UPDATE): due a TTL after that, and at most once more before it.
    fetcher.enqueue(USER);
    await eventually(() => expect(simulator.requestCount(`GET /users/${USER}`)).toBe(3));
    simulator.setProfile(USER, { banner: 'third', accent_color: 3 });
    advance(PROFILE_TTL_MS + PROFILE_AGE_STEP_MS);
    fetcher.sweep();
    await eventually(() => expect(registry.get(USER)?.presence.banner).toBe('third'));
    await eventually(() => expect(fetcher.pending).toBe(0));
    expect(simulator.requestCount(`GET /users/${USER}`)).toBeLessThanOrEqual(5);
  });

  it('uses a fresh stored profile as it is, and fetches a stale one and a missing one once, reading the stored ones in one go', async () => {
    const { simulator, registry, fetcher, store } = await setup();
    await fetcher.stop();
    let now = Date.UTC(2026, 10, 22, 12);
    const others = { fresh: '80351110224678913', stale: '80351110224678914', none: '80351110224678915' };
    await store.profiles.putProfiles(
      new Map([
        [others.fresh, { profile: { banner: 'kept', accent_color: 5 }, fetchedAt: now - 1_000 }],
        [others.stale, { profile: { banner: 'old', accent_color: 6 }, fetchedAt: now - 2 * PROFILE_TTL_MS }],
      ]),
    );
    const second = fetcherOf(simulator, registry, store, () => now);
    const reads: number[] = [];
    const getProfiles = store.profiles.getProfiles.bind(store.profiles);
    store.profiles.getProfiles = (userIds) => {
      reads.push(userIds.length);
      return getProfiles(userIds);
    };
    for (const id of Object.values(others)) {
      simulator.setProfile(id, { banner: `new${id}`, accent_color: 7 });
      registry.memberSeen(GUILD, { id, username: id });
    }
    await second.usersMonitored(Object.values(others));
    expect(reads).toEqual([3]);
    expect(registry.get(others.fresh)?.presence.banner).toBe('kept');
    // The stale profile is shown until the fetch replaces it.
    expect(registry.get(others.stale)?.presence.banner).toBe('old');
    await eventually(() => expect(registry.get(others.stale)?.presence.banner).toBe(`new${others.stale}`));
    await eventually(() => expect(registry.get(others.none)?.presence.banner).toBe(`new${others.none}`));
    await eventually(() => expect(second.pending).toBe(0));
    now += 10 * 60 * 1000;
    second.sweep();
    expect(second.pending).toBe(0);
    expect(simulator.requestCount(`GET /users/${others.stale}`)).toBe(1);
    expect(simulator.requestCount(`GET /users/${others.none}`)).toBe(1);
    expect(simulator.requestCount(`GET /users/${others.fresh}`)).toBe(0);
  });

  it('uses a profile fetched but not written yet for a user who came back, though the write runs meanwhile', async () => {
    const { simulator, registry, fetcher, store } = await setup();
    await eventually(() => expect(registry.get(USER)?.presence.banner).toBe('first'));
    const other = '80351110224678913';
    registry.memberRemoved(GUILD, USER);
    registry.memberSeen(GUILD, { id: USER, username: 'user' });
    registry.memberSeen(GUILD, { id: other, username: 'other' });
    const getProfiles = store.profiles.getProfiles.bind(store.profiles);
    const asked: string[][] = [];
    store.profiles.getProfiles = async (userIds) => {
      asked.push([...userIds]);
      // As a timer would, while a store over the network answers.
      await fetcher.write();
      return getProfiles(userIds);
    };
    await fetcher.usersMonitored([other, USER]);
    expect(asked).toEqual([[other]]);
    expect(registry.get(USER)?.presence.banner).toBe('first');
    await eventually(() => expect(fetcher.pending).toBe(0));
    expect(simulator.requestCount(`GET /users/${USER}`)).toBe(1);
  });

  it('uses a profile whose write is not committed yet for a user who came back, without a fetch', async () => {
    const { simulator, registry, fetcher, store } = await setup();
    const putProfiles = store.profiles.putProfiles.bind(store.profiles);
    let commit = () => {};
    const committing = new Promise<void>((resolve) => {
      commit = resolve;
    });
    // A write thread that has not committed yet: the store does not have the profile meanwhile.
    store.profiles.putProfiles = async (profiles) => {
      await committing;
      await putProfiles(profiles);
    };
    const writing = fetcher.write();
    registry.memberRemoved(GUILD, USER);
    registry.memberSeen(GUILD, { id: USER, username: 'user' });
    const asked: string[][] = [];
    const getProfiles = store.profiles.getProfiles.bind(store.profiles);
    store.profiles.getProfiles = async (userIds) => {
      asked.push([...userIds]);
      return getProfiles(userIds);
    };
    await fetcher.usersMonitored([USER]);
    expect(asked).toEqual([]);
    expect(registry.get(USER)?.presence.banner).toBe('first');
    commit();
    await writing;
    expect((await getProfiles([USER])).get(USER)?.profile.banner).toBe('first');
    await eventually(() => expect(fetcher.pending).toBe(0));
    expect(simulator.requestCount(`GET /users/${USER}`)).toBe(1);
  });

  it('fetches a user enqueued again while waiting once', async () => {
    const { simulator, registry, fetcher } = await setup();
    const others = ['80351110224678913', '80351110224678914', '80351110224678915'];
    for (const id of others) {
      simulator.setProfile(id, { banner: `b${id}`, accent_color: 4 });
      registry.memberSeen(GUILD, { id, username: id });
    }
    // The first two are fetched at once; the third waits, and is asked for thrice meanwhile.
    for (const id of [...others, others[2] as string, others[2] as string]) fetcher.enqueue(id);
    expect(fetcher.pending).toBe(3);
    await eventually(() => expect(fetcher.pending).toBe(0));
    for (const id of others) {
      expect(simulator.requestCount(`GET /users/${id}`)).toBe(1);
      expect(registry.get(id)?.presence.banner).toBe(`b${id}`);
    }
  });

  it('fetches a user listed twice in one minute once when the minute is due', async () => {
    const { simulator, fetcher, advance } = await setup();
    // Fetched again within the same minute (a USER_UPDATE): listed twice under it.
    fetcher.enqueue(USER);
    await eventually(() => expect(simulator.requestCount(`GET /users/${USER}`)).toBe(2));
    await eventually(() => expect(fetcher.pending).toBe(0));
    // A sweep before the minute is due lists the user once there.
    advance(PROFILE_AGE_STEP_MS);
    fetcher.sweep();
    advance(PROFILE_TTL_MS);
    fetcher.sweep();
    await eventually(() => expect(simulator.requestCount(`GET /users/${USER}`)).toBe(3));
    await eventually(() => expect(fetcher.pending).toBe(0));
    expect(simulator.requestCount(`GET /users/${USER}`)).toBe(3);
  });

  it('forgets users who are no longer monitored', async () => {
    const { simulator, registry, fetcher, advance } = await setup();
    registry.memberRemoved(GUILD, USER);
    advance(PROFILE_TTL_MS * 2);
    fetcher.sweep();
    expect(fetcher.pending).toBe(0);
    expect(simulator.requestCount(`GET /users/${USER}`)).toBe(1);
  });

  it('writes what it fetched a second at a time, in one go, and what is left when it stops', async () => {
    const { simulator, registry, fetcher, store } = await setup();
    await eventually(async () => expect(await profileOf(store, USER)).toBeDefined(), 3_000);
    const writes: number[] = [];
    const putProfiles = store.profiles.putProfiles.bind(store.profiles);
    store.profiles.putProfiles = (profiles) => {
      writes.push(profiles.size);
      return putProfiles(profiles);
    };
    const others = ['80351110224678913', '80351110224678914', '80351110224678915'];
    for (const id of others) {
      simulator.setProfile(id, { banner: `b${id}`, accent_color: 3 });
      registry.memberSeen(GUILD, {
        id,
        username: `u${id}`,
        global_name: null,
        avatar: null,
        discriminator: '0',
      });
      await fetcher.usersMonitored([id]);
    }
    await eventually(() => expect(registry.get(others[2] as string)?.presence.banner).toBe(`b${others[2]}`));
    expect(await profileOf(store, others[0] as string)).toBeUndefined();
    await fetcher.stop();
    expect(writes.reduce((sum, size) => sum + size, 0)).toBe(3);
    expect(writes.length).toBeLessThanOrEqual(2);
    for (const id of others) expect((await profileOf(store, id))?.profile.banner).toBe(`b${id}`);
  });
});
