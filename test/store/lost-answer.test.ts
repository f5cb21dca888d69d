import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HistoryRecorder } from '../../src/history/recorder.js';
import type { RawPresence } from '../../src/presence/model.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import type { Store } from '../../src/store/ports.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { activity, SPOTIFY_LITERAL } from '../presence/payloads.js';
import { type AnswerLosingRelay, startAnswerLosingRelay } from '../support/answer-losing-relay.js';
import { eventually } from '../support/eventually.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

/**
 * The store's server runs a history batch's transaction and its answer never reaches the service (a relay
 * drops the connection as the server answers PostgreSQL's COMMIT, or Redis's EXEC). The batch is sent
 * again (by the recorder, under its id, after the store failed; by the Redis client itself once it has
 * reconnected), the store finds it written and writes nothing more, and what was seen since goes in a
 * batch after it. Every play counts once.
 */

const SUITE = 'a history batch whose answer the store lost';
const hasPostgres = await postgresAvailable(`${SUITE} (PostgreSQL)`);
const hasRedis = await redisAvailable(`${SUITE} (Redis)`);
const GUILD = '1';
const USER = { id: '80351110224678912', username: 'alice' };
const T0 = Date.UTC(2026, 10, 22, 12);

function listening(song: string, start: number): RawPresence {
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [
      activity({
        ...SPOTIFY_LITERAL,
        sync_id: song.padEnd(22, '0'),
        details: song,
        timestamps: { start, end: start + 180_000 },
        created_at: start,
      }),
    ],
  };
}

/** A store reached through a relay, and the same data reached directly. */
interface Stores {
  relayed: Store;
  direct: Store;
}

const relays: AnswerLosingRelay[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const relay of relays.splice(0)) await relay.close();
});

/** A relay to `url`'s server, and the URL through it. */
async function relayTo(url: string): Promise<{ relay: AnswerLosingRelay; relayed: string }> {
  const target = new URL(url);
  const relay = await startAnswerLosingRelay({ host: target.hostname, port: Number(target.port) });
  relays.push(relay);
  target.port = String(relay.port);
  return { relay, relayed: target.toString() };
}

function lostAnswer(
  name: string,
  marker: string,
  sentAgainBy: 'recorder' | 'client',
  open: (relay: typeof relayTo) => Promise<Stores & { relay: AnswerLosingRelay }>,
  skip: boolean,
): void {
  describe.skipIf(skip)(`${SUITE} (${name})`, () => {
    it('is written once when sent again, and its plays count once', async () => {
      const { relay, relayed, direct } = await open(relayTo);
      const lines: Record<string, unknown>[] = [];
      let now = T0;
      const recorder = new HistoryRecorder({
        store: relayed.history,
        logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
        now: () => now,
        flushMs: 3_600_000,
      });
      const registry = new PresenceRegistry({
        cdnUrl: 'https://cdn.discordapp.com',
        youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
        now: () => now,
      });
      registry.onChange(recorder.observe);
      const songs = async () => (await direct.history.history(USER.id, 10)).tracks.map((entry) => entry.song);

      // A first play, written once the user's stored history has been read: from then on, what the store
      // sends to its server for them is batches.
      registry.memberSeen(GUILD, USER, listening('zero', now));
      await eventually(async () => {
        await recorder.flush();
        expect(await songs()).toEqual(['zero']);
      });

      let lost = false;
      void relay.loseAnswerTo(marker).then(() => {
        lost = true;
      });
      now += 200_000;
      registry.memberSeen(GUILD, USER, listening('first', now));
      await recorder.flush();
      expect(lost).toBe(true);
      // The server kept what it ran.
      expect(await songs()).toEqual(['first', 'zero']);

      now += 200_000;
      registry.memberSeen(GUILD, USER, listening('second', now));
      await eventually(async () => {
        await recorder.flush();
        expect(await songs()).toEqual(['second', 'first', 'zero']);
      });
      const messages = lines.map((line) => line.msg);
      if (sentAgainBy === 'recorder') {
        expect(messages).toEqual(['could not write history; will retry', 'history written again']);
      } else expect(messages).toEqual([]);
      expect(await direct.history.topTracks(USER.id, 1, 10)).toMatchObject([
        { song: 'second', play_count: 1 },
        { song: 'first', play_count: 1 },
        { song: 'zero', play_count: 1 },
      ]);
      expect(await direct.history.stats(USER.id)).toMatchObject({ plays: 3 });
      expect((await direct.history.history(USER.id, 10)).status).toEqual([{ status: 'online', ts: T0 }]);
      await recorder.close();
    });
  });
}

let database: TestDatabase | undefined;
beforeAll(async () => {
  if (hasPostgres) database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

lostAnswer(
  'PostgreSQL',
  'COMMIT',
  'recorder',
  async (relayTo) => {
    const url = await (database as TestDatabase).schema();
    const { relay, relayed } = await relayTo(url);
    const stores = { relayed: await openPostgresStore(relayed), direct: await openPostgresStore(url) };
    cleanups.push(
      () => stores.relayed.close(),
      () => stores.direct.close(),
    );
    return { relay, ...stores };
  },
  !hasPostgres,
);

lostAnswer(
  'Redis',
  '$4\r\nexec\r\n',
  'client',
  async (relayTo) => {
    const { relay, relayed } = await relayTo(REDIS_TEST_URL);
    const prefix = uniquePrefix();
    // As the service's connection: a command waits out a dropped connection rather than fail.
    const throughRelay = new Redis(relayed, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    const direct = new Redis(REDIS_TEST_URL);
    cleanups.push(
      () => throughRelay.disconnect(),
      async () => {
        await dropPrefix(direct, prefix);
        direct.disconnect();
      },
    );
    return { relay, relayed: openRedisStore(throughRelay, prefix), direct: openRedisStore(direct, prefix) };
  },
  !hasRedis,
);
