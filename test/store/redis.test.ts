import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { NowPlaying } from '../../src/presence/model.js';
import type { Store } from '../../src/store/ports.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { MIGRATIONS } from '../../src/store/redis/migrations.js';
import { KV_LIMITS } from '../support/kv.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';
import { storeContract } from './contract.js';

const hasRedis = await redisAvailable('Redis store contract and migrations');
const redis = hasRedis ? new Redis(REDIS_TEST_URL) : null;
const prefixes: string[] = [];

/** A prefix of its own: the same user ids never meet another test's data, and it is dropped after. */
function freshPrefix(): string {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  return prefix;
}

/** The prefix each store of the contract was opened under, to open its data again. */
const prefixOf = new WeakMap<Store, string>();

storeContract(
  'Redis',
  async (reopening) => {
    const prefix = (reopening && prefixOf.get(reopening)) ?? freshPrefix();
    const store = openRedisStore(redis as Redis, prefix);
    prefixOf.set(store, prefix);
    // ping waits for the store's startup migration, which must not write under a prefix already dropped.
    await store.ping();
    return store;
  },
  !hasRedis,
);

describe.skipIf(!hasRedis)('Redis store migrations', () => {
  const T0 = Date.UTC(2026, 10, 22, 12);
  const track = (song: string): NowPlaying => ({
    source: 'spotify',
    song,
    artist: 'Artist',
    album: 'Album',
    album_art_url: null,
    track_id: 'a',
    track_url: null,
    timestamps: { start: T0, end: T0 + 1000 },
    duration_ms: 1000,
  });

  /** Play counts as 0.2.0 wrote them: three hashes by play key. */
  async function legacyPlays(prefix: string, userId: string, count: number, last: number, song: string) {
    await (redis as Redis)
      .multi()
      .hset(`${prefix}play-count:{${userId}}`, 'spotify:a', count)
      .hset(`${prefix}play-last:{${userId}}`, 'spotify:a', last)
      .hset(`${prefix}play-track:{${userId}}`, 'spotify:a', JSON.stringify(track(song)))
      .exec();
  }

  it("ranks 0.2.0's play counts and removes the old keys", async () => {
    const prefix = freshPrefix();
    await legacyPlays(prefix, '1', 4, T0 + 5, 'Old');
    const store = openRedisStore(redis as Redis, prefix);
    expect(await store.history.topTracks('1', 2, 10)).toEqual([
      { ...track('Old'), last_played: T0 + 5, play_count: 4 },
    ]);
    expect(await (redis as Redis).get(`${prefix}store-version`)).toBe(String(MIGRATIONS.length));
    expect(await (redis as Redis).exists(`${prefix}play-count:{1}`, `${prefix}play-track:{1}`)).toBe(0);
  });

  it('adds up plays an older node counted after this build started counting', async () => {
    const prefix = freshPrefix();
    const store = openRedisStore(redis as Redis, prefix);
    const play = { ...track('New'), ts: T0 + 9 };
    const write = { userId: '1', status: null, track: play, countsPlay: true, lastSeen: null };
    await store.history.appendHistory([write], { history: 100, trackedTracks: 1000 });
    await legacyPlays(prefix, '1', 2, T0 + 5, 'Old');
    await (redis as Redis).del(`${prefix}store-version`);
    const restarted = openRedisStore(redis as Redis, prefix);
    expect(await restarted.history.topTracks('1', 1, 10)).toEqual([
      { ...track('New'), last_played: T0 + 9, play_count: 3 },
    ]);
  });

  it('counts the KV bytes of a hash written by a build that kept no total', async () => {
    const prefix = freshPrefix();
    await (redis as Redis).hset(`${prefix}kv:{1}`, 'a', 'x'.repeat(50), 'b', 'é'.repeat(24));
    await (redis as Redis).set(`${prefix}kv-revision:{1}`, 7);
    const store = openRedisStore(redis as Redis, prefix);
    const cap = { ...KV_LIMITS, maxBytes: 100 };
    const write = (key: string, value: string) => ({ set: new Map([[key, value]]), delete: [] });
    expect(await store.kv.writeKv('1', write('c', ''), cap)).toEqual({ refused: 'bytes', wouldHave: 101 });
    expect(await store.kv.writeKv('1', write('a', 'x'.repeat(50)), cap)).toEqual({
      revision: 7,
      changed: false,
    });
    expect(await store.kv.writeKv('1', write('a', 'y'.repeat(49)), cap)).toMatchObject({ revision: 8 });
    expect(await store.kv.writeKv('1', write('c', ''), cap)).toMatchObject({ revision: 9 });
    expect(await store.kv.writeKv('1', write('d', ''), cap)).toEqual({ refused: 'bytes', wouldHave: 101 });
  });

  it('refuses data from a newer build rather than corrupt it', async () => {
    const prefix = freshPrefix();
    await (redis as Redis).set(`${prefix}store-version`, MIGRATIONS.length + 1);
    const store = openRedisStore(redis as Redis, prefix);
    await expect(store.history.topTracks('1', 1, 10)).rejects.toThrow(/newer than this build/);
    expect(await store.ping()).toBe(false);
  });
});

describe.skipIf(!hasRedis)('Redis privacy settings', () => {
  it('keeps a hash per user under the prefix and a set of the users with any; a reset leaves neither', async () => {
    const prefix = freshPrefix();
    const store = openRedisStore(redis as Redis, prefix);
    await store.ping();
    await store.privacy.patchPrivacy('1', { hide_kv: true, paused_until: null });
    await store.privacy.patchPrivacy('2', { hide_activity_types: [] });
    expect(await (redis as Redis).hgetall(`${prefix}privacy:{1}`)).toEqual({
      hide_kv: 'true',
      paused_until: 'null',
    });
    expect((await (redis as Redis).smembers(`${prefix}privacy-users`)).sort()).toEqual(['1', '2']);
    await store.privacy.deletePrivacy('1');
    expect(await (redis as Redis).exists(`${prefix}privacy:{1}`)).toBe(0);
    expect(await (redis as Redis).smembers(`${prefix}privacy-users`)).toEqual(['2']);
    await store.privacy.deletePrivacy('2');
    expect(await (redis as Redis).exists(`${prefix}privacy:{2}`, `${prefix}privacy-users`)).toBe(0);
  });
});

afterEach(async () => {
  for (const prefix of prefixes.splice(0)) if (redis) await dropPrefix(redis, prefix);
});
afterAll(() => redis?.disconnect());
