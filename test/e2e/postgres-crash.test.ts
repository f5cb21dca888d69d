import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import {
  crashGuild,
  drivePresences,
  expectHistoryKept,
  expectKvKept,
  expectServedAgain,
  LISTENERS,
  WRITER,
  type Write,
  watchHistory,
  writerPresence,
  writes,
} from '../support/crash-load.js';
import { eventually } from '../support/eventually.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';
import { postgresAvailable } from '../support/postgres.js';
import {
  type PrivatePostgres,
  privatePostgresAvailable,
  startPrivatePostgres,
} from '../support/private-postgres.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';

/**
 * Durability on Redis and PostgreSQL: a node (ROLE all, REDIS_URL, DATABASE_URL) as its own process, on a
 * PostgreSQL server of the test's own, under the crash tests' load (crash-load.ts: presences changing all
 * the time, a burst of KV writes). Mid-burst PostgreSQL crashes and starts again (an immediate shutdown:
 * every connection dropped, recovery from the WAL); the burst goes on, and once writes and a history batch
 * have been acknowledged again, the node is killed (`kill -9`) right after a 204.
 *
 * Every write acknowledged before or after the crash of PostgreSQL is in it afterwards, and so is every
 * history batch `/history` served. A write may be refused (`503 try_again_later`, while PostgreSQL is
 * away), never acknowledged and lost; a history batch waits and is written when it is back, once, even one
 * whose commit the crash kept but whose answer it lost: each track Discord sent is one play. A node started
 * after the kill, on Redis emptied of what was live, serves it all from PostgreSQL.
 */

const SUITE = 'a crash of a node and of PostgreSQL';
const runs =
  (await postgresAvailable(SUITE)) &&
  (await redisAvailable(SUITE)) &&
  (await privatePostgresAvailable(SUITE));
const GUILD = '400000000000000003';
/** Writes acknowledged before PostgreSQL crashes, then again after it is back before the node is killed. */
const ACKED_BEFORE_RESTART = 150;
const ACKED_AFTER_RESTART = 150;
/** Enough to outlast both; the kill comes long before the last. */
const EXTRA_IN_FLIGHT = 4_700;
const CONCURRENCY = 8;

describe.skipIf(!runs)('a crash of a node and of PostgreSQL during KV writes and history', () => {
  const discord = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  const nodes: NodeProcess[] = [];
  const prefixes: string[] = [];
  let pg: PrivatePostgres;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    await discord.start();
  });
  afterAll(async () => {
    for (const node of nodes) node.child.kill('SIGKILL');
    await Promise.all(nodes.map((node) => node.exited));
    await discord.stop();
    const redis = new Redis(REDIS_TEST_URL);
    for (const prefix of prefixes) await dropPrefix(redis, prefix);
    redis.disconnect();
    await pg?.remove();
  });

  /** A node on a Redis prefix of its own (nothing live from before) and the test's PostgreSQL. */
  async function startNode(name: string): Promise<NodeProcess> {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const node = await startNodeProcess(name, scaleOutEnv('all', discord, prefix, { DATABASE_URL: pg.url }), {
      readyTimeoutMs: 30_000,
    });
    nodes.push(node);
    await eventually(() => writerPresence(node.url), 30_000, 100);
    return node;
  }

  it('keeps every acknowledged write and history batch across both crashes', async () => {
    crashGuild(discord, GUILD, 'Postgres Crash Guild');
    const key = generateApiKey();
    const seed = await openPostgresStore(pg.url);
    await seed.apiKeys.replaceKey(WRITER, hashApiKey(key), Date.now());
    await seed.close();

    const first = await startNode('node');
    const driver = drivePresences(discord);
    const history = watchHistory(first.url);
    await eventually(
      () => {
        for (const userId of LISTENERS) expect(history.acked.get(userId)).toBeGreaterThan(0);
      },
      15_000,
      50,
    );
    const ackedAt = (moment: Map<string, number>) => () =>
      LISTENERS.some((userId) => (history.acked.get(userId) ?? 0) > (moment.get(userId) ?? 0));
    const batchSinceBurst = ackedAt(new Map(history.acked));
    /** Set once PostgreSQL is back: a batch of what Discord sent after that has been served. */
    let batchSinceBack: (() => boolean) | null = null;

    // The burst: CONCURRENCY workers take writes in order. After ACKED_BEFORE_RESTART 204s and a history
    // batch, PostgreSQL crashes and restarts while the writes go on; after ACKED_AFTER_RESTART more 204s
    // since it is back and a batch of what was sent since, the next 204 kills the node.
    const all = writes(first.url, key, ACKED_BEFORE_RESTART + ACKED_AFTER_RESTART + EXTRA_IN_FLIGHT);
    const acked: Write[] = [];
    const failed: { write: Write; why: string; afterKill: boolean }[] = [];
    let ackedWhenBack = Number.POSITIVE_INFINITY;
    let restarting: Promise<void> | null = null;
    let killedAt = Number.POSITIVE_INFINITY;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (killedAt === Number.POSITIVE_INFINITY && next < all.length) {
        const write = all[next++] as Write;
        let why: string;
        try {
          const response = await write.request();
          if (response.status === 204) {
            acked.push(write);
            if (!restarting && acked.length >= ACKED_BEFORE_RESTART && batchSinceBurst()) {
              restarting = pg.restart().then(() => {
                ackedWhenBack = acked.length;
                batchSinceBack = ackedAt(
                  new Map([...driver.sent.songs].map(([id, songs]) => [id, songs.length])),
                );
              });
            }
            if (
              killedAt === Number.POSITIVE_INFINITY &&
              acked.length >= ackedWhenBack + ACKED_AFTER_RESTART &&
              batchSinceBack?.()
            ) {
              killedAt = Date.now();
              first.child.kill('SIGKILL');
            }
            continue;
          }
          why = `${response.status} ${await response.text()}`;
        } catch (error) {
          why = String((error as Error).cause ?? error);
        }
        failed.push({ write, why, afterKill: killedAt < Number.POSITIVE_INFINITY });
        // Refused while PostgreSQL is away: the next write waits for it rather than spend the burst.
        await restarting;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    if (killedAt === Number.POSITIVE_INFINITY) first.child.kill('SIGKILL');
    await first.exited;
    await restarting;
    driver.stop();
    await history.stop();
    expect(restarting, 'the burst ended before a history batch committed under it').not.toBeNull();
    expect(killedAt, 'the burst ended before writes and a batch were acknowledged again').toBeLessThan(
      Number.POSITIVE_INFINITY,
    );
    expect(first.child.signalCode).toBe('SIGKILL');
    // Before the kill a write was acknowledged or refused 503 try_again_later (PostgreSQL away, or a time
    // limit passed on a busy machine), never anything else.
    const unexpected = failed.filter(
      (entry) => !entry.afterKill && !/^503 .*try_again_later/.test(entry.why),
    );
    expect(unexpected).toEqual([]);

    const store = await openPostgresStore(pg.url);
    let survived: Map<string, string>;
    try {
      await expectKvKept(store, key, all, acked);
      survived = await expectHistoryKept(store, driver.sent, history.acked);
    } finally {
      await store.close();
    }
    expect(survived.size).toBe(LISTENERS.length);

    // A node started afresh serves the values, the history and the key.
    const second = await startNode('node again');
    await expectServedAgain(second.url, key, acked, survived);
  }, 120_000);
});
