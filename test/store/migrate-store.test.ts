import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { generateReadToken, hashReadToken } from '../../src/keys/read-token.js';
import { HISTORY_LIMIT, TRACKED_TRACKS_PER_USER, type TrackEntry, utcDay } from '../../src/model/history.js';
import type { DeliveryRecord } from '../../src/model/webhook.js';
import type { DiscordStatus, Snowflake } from '../../src/presence/model.js';
import { PAUSED_UNTIL_UNDONE, type PrivacyPatch } from '../../src/presence/privacy.js';
import type { HistoryWrite, Store } from '../../src/store/ports.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { PostgresWebhookQueue } from '../../src/store/postgres/webhook-queue.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { SqliteWebhookQueue } from '../../src/store/sqlite/webhook-queue.js';
import type { Claim } from '../../src/store/webhook-queue.js';
import { KV_LIMITS } from '../support/kv.js';
import { runToExit } from '../support/node-process.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

/**
 * `npm run migrate-store`: a SQLite store and a Redis store, each filled through its own write paths
 * (KV rewritten and deleted, keys replaced and revoked, profiles, histories longer than the limit, repeated
 * and title-only plays, erasures, webhooks with deliveries and one disabled, privacy settings patched and
 * reset, a user with nothing but privacy settings, read tokens added and removed), copied into PostgreSQL by the
 * command, then read back through the PostgreSQL store: every read gives what the source's gives. Run
 * again, the copy changes nothing; a history erased in PostgreSQL since stays erased. Webhook events
 * waiting in a SQLite store wait in PostgreSQL's queue after the copy, in order.
 */

const hasPostgres = await postgresAvailable('migrate-store into PostgreSQL');
const hasRedis = hasPostgres && (await redisAvailable('migrate-store from Redis'));
const T0 = Date.UTC(2026, 10, 22, 20);
const LIMITS = { history: HISTORY_LIMIT, trackedTracks: TRACKED_TRACKS_PER_USER };
const USERS = Array.from({ length: 30 }, (_, i) => String(80_351_110_224_678_912n + BigInt(i)));
const STATUSES: DiscordStatus[] = ['online', 'idle', 'dnd', 'offline'];
/** Users whose history is erased: one with history before and after, one with none at all. */
const ERASED = [USERS[3], USERS[27]] as Snowflake[];
const ERASED_AT = T0 + 3_600_000;
/** A user who set privacy settings and nothing else: a copy finds them all the same. */
const ONLY_PRIVACY = '80351110224678999';
const EVERYONE = [...USERS, ONLY_PRIVACY];
/** Settings of every kind of value, the edges among them. */
const EVERY_KIND: PrivacyPatch = {
  hide_activity_types: [],
  hide_application_ids: ['1234567890123456789'],
  hide_custom_status: false,
  visibility: 'private',
  paused_until: PAUSED_UNTIL_UNDONE,
};

function track(userId: Snowflake, n: number, ts: number): TrackEntry {
  // Every seventh track has no id: its plays count by title and artist.
  const id = n % 7 === 6 ? null : `t${userId.slice(-2)}${n}`;
  return {
    source: n % 5 === 0 ? 'apple_music' : 'spotify',
    song: `Song ${n} «${userId.slice(-2)}»${n % 9 === 0 ? ' \u0000 nul' : ''}`,
    artist: n % 4 === 0 ? null : 'Artist',
    album: 'Album',
    album_art_url: null,
    track_id: id,
    track_url: id === null ? null : `https://open.spotify.com/track/${id}`,
    timestamps: { start: ts, end: ts + 200_000 },
    duration_ms: 200_000,
    ts,
  };
}

/** What a user's history is made of: more entries than the limit for most, over two days. */
function historyOf(index: number): HistoryWrite[] {
  const userId = USERS[index] as Snowflake;
  const count = index < 25 ? 20 + index * 6 : 0;
  return Array.from({ length: count }, (_, j) => {
    const ts = T0 + j * 120_000 + index;
    return {
      userId,
      status: j % 3 === 2 ? null : { status: STATUSES[(j + index) % 4] as DiscordStatus, ts },
      track: j % 5 === 4 ? null : track(userId, j % (5 + index), ts),
      countsPlay: j % 11 !== 10 && j % 5 !== 4,
      lastSeen: j % 4 === 0 ? ts : null,
    };
  });
}

/** What was issued while filling a store: every key hash, live or not, and every webhook's id. */
interface Issued {
  hashes: Buffer[];
  webhooks: string[];
  /** Every read token's hash, removed ones included. */
  tokens: Buffer[];
}

/** Fills a store through its write paths. */
async function populate(store: Store): Promise<Issued> {
  const hashes: Buffer[] = [];
  const webhooks: string[] = [];
  const tokens: Buffer[] = [];
  const stamp = (write: HistoryWrite) => write.status?.ts ?? write.track?.ts ?? write.lastSeen ?? 0;
  const writes = USERS.flatMap((_, index) => historyOf(index)).sort((a, b) => stamp(a) - stamp(b));
  const append = async (list: HistoryWrite[]) => {
    for (let start = 0; start < list.length; start += 50) {
      await store.history.appendHistory(list.slice(start, start + 50), LIMITS);
    }
  };
  await append(writes.filter((write) => stamp(write) <= ERASED_AT));
  for (const userId of ERASED) await store.history.forget(userId, ERASED_AT);
  await append(writes.filter((write) => stamp(write) > ERASED_AT));
  for (const [index, userId] of USERS.entries()) {
    if (index % 3 !== 2) {
      const set = new Map(
        Array.from({ length: 3 + (index % 6) }, (_, k) => [`key_${k}`, `value ${k} of ${index} ✓ 🎧 \u0000`]),
      );
      set.set('__proto__', 'data, not a prototype');
      await store.kv.writeKv(userId, { set, delete: [] }, KV_LIMITS);
      await store.kv.writeKv(
        userId,
        { set: new Map([['key_0', 'x'.repeat(index * 40)]]), delete: ['key_1'] },
        KV_LIMITS,
      );
    }
    if (index === 29) {
      await store.kv.writeKv(userId, { set: new Map([['gone', 'soon']]), delete: [] }, KV_LIMITS);
      await store.kv.writeKv(userId, { set: new Map(), delete: ['gone'] }, KV_LIMITS);
    }
    if (index % 4 === 0) {
      const first = hashApiKey(generateApiKey());
      hashes.push(first);
      await store.apiKeys.replaceKey(userId, first, T0 + index);
      if (index % 8 === 0) {
        const second = hashApiKey(generateApiKey());
        hashes.push(second);
        await store.apiKeys.replaceKey(userId, second, T0 + index + 1);
      }
      if (index === 4) await store.apiKeys.revokeKey(first);
    }
    if (index % 5 === 1) {
      for (let k = 0; k <= index % 2; k++) {
        const id = `wh_${index}_${k}`;
        webhooks.push(id);
        await store.webhooks.addWebhook(
          {
            id,
            userId,
            url: `https://hooks.example.com/${index}/${k}`,
            events: k === 0 ? ['presence', 'kv'] : ['now_playing'],
            secret: `whsec_${index}_${k}`,
            createdAt: T0 + index * 10 + k,
            disabledAt: null,
            disabledReason: null,
          },
          5,
        );
        // A few deliveries, the newest retried (its record replaced where it is).
        for (let d = 0; d < 3 + k; d++) {
          await store.webhooks.recordDelivery(id, delivery(`${id}_d${d}`, 'delivered', 1), 20);
        }
        await store.webhooks.recordDelivery(id, delivery(`${id}_d${2 + k}`, 'retrying', 2), 20);
      }
      if (index === 11)
        await store.webhooks.disableWebhook(`wh_${index}_1`, T0 + 5, 'refused 5 events in a row');
    }
    if (index % 6 === 2) {
      for (let k = 0; k <= index % 4; k++) {
        const hash = hashReadToken(generateReadToken());
        tokens.push(hash);
        const label = k === 0 ? null : `card ${k} of ${index} ✓ 🎧`;
        await store.readTokens.addReadToken(
          { id: `rt_${index}_${k}`.padEnd(19, '0'), userId, hash, label, createdAt: T0 + index * 10 + k },
          10,
        );
      }
      // Removed: nothing of it is copied.
      if (index === 14) await store.readTokens.removeReadToken(userId, `rt_${index}_1`.padEnd(19, '0'));
    }
    if (index % 4 === 1) {
      await store.privacy.patchPrivacy(userId, { ...EVERY_KIND, hide_kv: index % 8 === 1 });
      await store.privacy.patchPrivacy(userId, { paused_until: index % 3 === 0 ? null : T0 + index });
      // Reset: nothing of them is copied.
      if (index === 9) await store.privacy.deletePrivacy(userId);
    }
  }
  await store.privacy.patchPrivacy(ONLY_PRIVACY, EVERY_KIND);
  await store.profiles.putProfiles(
    new Map(
      USERS.filter((_, index) => index % 2 === 0).map((userId, index) => [
        userId,
        {
          profile: { banner: index % 3 === 0 ? null : `a_${userId.slice(-4)}`, accent_color: index * 1000 },
          fetchedAt: T0 + index,
        },
      ]),
    ),
  );
  return { hashes, webhooks, tokens };
}

function delivery(id: string, status: DeliveryRecord['status'], attempts: number): DeliveryRecord {
  return {
    id,
    type: 'presence',
    status,
    attempts,
    at: T0 + attempts,
    response_code: status === 'delivered' ? 200 : 503,
    error: status === 'delivered' ? null : 'HTTP 503',
    next_attempt_at: status === 'retrying' ? T0 + 60_000 : null,
  };
}

/** Everything the service reads of these users, as the store answers it. */
async function readAll(store: Store, { hashes, webhooks, tokens }: Issued) {
  const perUser = <T>(read: (userId: Snowflake) => Promise<T>) => Promise.all(EVERYONE.map(read));
  const perWebhook = <T>(read: (id: string) => Promise<T>) => Promise.all(webhooks.map(read));
  return {
    webhooksOf: await perUser((userId) => store.webhooks.webhooksOf(userId)),
    webhook: await perWebhook((id) => store.webhooks.webhook(id)),
    active: (await store.webhooks.activeWebhooks()).sort((a, b) => a.id.localeCompare(b.id)),
    deliveries: await perWebhook((id) => store.webhooks.deliveries(id, 100)),
    kv: await perUser((userId) => store.kv.getKv(userId)),
    kvs: [...(await store.kv.getKvs(USERS)).entries()],
    keys: await Promise.all(hashes.map((hash) => store.apiKeys.findKey(hash))),
    profiles: [...(await store.profiles.getProfiles(USERS)).entries()].sort(([a], [b]) => a.localeCompare(b)),
    history: await perUser((userId) => store.history.history(userId, HISTORY_LIMIT)),
    latest: [...(await store.history.latest(USERS)).entries()].sort(([a], [b]) => a.localeCompare(b)),
    stats: await perUser((userId) => store.history.stats(userId)),
    top: await perUser((userId) => store.history.topTracks(userId, 1, TRACKED_TRACKS_PER_USER)),
    // The histories run past midnight: the second day's plays are a count of their own.
    topOfSecondDay: await perUser((userId) =>
      store.history.topTracks(userId, 1, TRACKED_TRACKS_PER_USER, utcDay(T0 + 86_400_000)),
    ),
    privacy: await perUser((userId) => store.privacy.getPrivacy(userId)),
    allPrivacy: [...(await store.privacy.allPrivacy()).entries()].sort(([a], [b]) => a.localeCompare(b)),
    readTokens: await perUser((userId) => store.readTokens.readTokensOf(userId)),
    tokenOwners: await Promise.all(tokens.map((hash) => store.readTokens.findReadToken(hash))),
  };
}

/** The command's report as numbers by line name. */
function countsIn(output: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [, name, value] of output.matchAll(/^ {2}([a-z ]+): (\d+)/gm))
    counts[name as string] = Number(value);
  return counts;
}

/** Events waiting in the SQLite store's queue: two webhooks', the head of one refused and due later. */
async function queueEvents(store: SqliteStore): Promise<number> {
  const queue = new SqliteWebhookQueue(store.db);
  const events = [
    ['wh_1_1', 'now_playing'],
    ['wh_1_1', 'now_playing'],
    ['wh_6_0', 'presence'],
    ['wh_6_0', 'kv'],
    ['wh_1_1', 'now_playing'],
  ] as const;
  for (const [n, [webhookId, type]] of events.entries()) {
    await queue.enqueue(
      webhookId,
      { id: `ev_${n}`, type, body: JSON.stringify({ n, text: '✓ \u0000' }) },
      T0,
    );
  }
  const [refused] = (await queue.claim(T0, 1, 15_000)) as [Claim];
  await queue.retryLater(refused, 1, T0, T0 + 3_600_000);
  return events.length;
}

/** What a copy of everything `readAll` read must report, with the webhook events waiting. */
function expectedCounts(read: Awaited<ReturnType<typeof readAll>>, waiting: number): Record<string, number> {
  const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
  return {
    users: EVERYONE.length,
    kv: sum(read.kv.map((state) => Object.keys(state.kv).length)),
    'api keys': read.keys.filter((found) => found !== undefined).length,
    profiles: read.profiles.length,
    'status entries': sum(read.history.map((history) => history.status.length)),
    'track entries': sum(read.history.map((history) => history.tracks.length)),
    'play counts': sum(read.top.map((top) => top.length)),
    stats: read.stats.filter((stats) => stats.lastSeen !== null || stats.playsDay !== null).length,
    erasures: ERASED.length,
    'privacy settings': read.allPrivacy.length,
    'read tokens': sum(read.readTokens.map((listed) => listed.length)),
    webhooks: read.webhook.filter((found) => found !== undefined).length,
    'webhook deliveries': sum(read.deliveries.map((records) => records.length)),
    'webhook events waiting': waiting,
  };
}

const QUEUED = 'SELECT webhook_id, delivery_id, type, body FROM webhook_queue ORDER BY webhook_id, seq';

const migrate = (from: string, to: string, ...more: string[]) =>
  runToExit(['scripts/migrate-store.ts', '--from', from, '--to', to, ...more], 60_000);

describe.skipIf(!hasPostgres)('migrate-store into PostgreSQL', () => {
  let database: TestDatabase;
  const dir = mkdtempSync(join(tmpdir(), 'presently-migrate-'));
  const opened: PostgresStore[] = [];
  const redis = hasRedis ? new Redis(REDIS_TEST_URL) : null;
  const prefix = uniquePrefix();

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const store of opened) await store.close();
    await database?.drop();
    if (redis) await dropPrefix(redis, prefix);
    redis?.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  async function target(): Promise<{ url: string; store: () => Promise<PostgresStore> }> {
    const url = await database.schema();
    return {
      url,
      store: async () => {
        const store = await openPostgresStore(url);
        opened.push(store);
        return store;
      },
    };
  }

  /** The same users' sums kept beside the data: KV sizes and key counts, tracks counted for the cap. */
  async function totalsAgree(store: PostgresStore): Promise<void> {
    const { rows: kv } = await store.pool.query<{ ok: boolean }>(
      `SELECT r.bytes = coalesce(sum(octet_length(kv.key) + octet_length(kv.value)), 0)
              AND r.keys = count(kv.key) AS ok
       FROM kv_revisions r LEFT JOIN kv USING (user_id) GROUP BY r.user_id, r.bytes, r.keys`,
    );
    expect(kv.length).toBeGreaterThan(0);
    expect(kv.every((row) => row.ok)).toBe(true);
    const { rows: plays } = await store.pool.query<{ ok: boolean }>(
      `SELECT s.tracks = (SELECT count(*) FROM play_counts p WHERE p.user_id = s.user_id) AS ok FROM user_stats s`,
    );
    expect(plays.every((row) => row.ok)).toBe(true);
  }

  /** Erasures copied: a write stamped at the moment of erasure is dropped, a later one kept. */
  async function erasuresHold(store: PostgresStore): Promise<void> {
    for (const userId of ERASED) {
      const before = (await store.history.history(userId, HISTORY_LIMIT)).status.length;
      await store.history.appendHistory(
        [
          {
            userId,
            status: { status: 'dnd', ts: ERASED_AT },
            track: null,
            countsPlay: false,
            lastSeen: null,
          },
        ],
        LIMITS,
      );
      expect((await store.history.history(userId, HISTORY_LIMIT)).status).toHaveLength(before);
    }
  }

  it('copies a SQLite store whole, and again without changing anything', async () => {
    const path = join(dir, 'presently.db');
    const source = openSqliteStore({ kind: 'sqlite', path });
    // Open while copied, its lists still untrimmed past the limit: the copy reads a snapshot of the file.
    const issued = await populate(source);
    const waiting = await queueEvents(source);
    const expected = await readAll(source, issued);
    expect(expected.history.some((history) => history.status.length === HISTORY_LIMIT)).toBe(true);
    expect(expected.topOfSecondDay.some((top) => top.length > 0)).toBe(true);
    expect(expected.allPrivacy.map(([userId]) => userId)).toContain(ONLY_PRIVACY);
    const { url, store } = await target();

    const copiedAt = Date.now();
    const first = await migrate(`sqlite:${path}`, url);
    expect(first.code, first.output).toBe(0);
    expect(countsIn(first.output)).toEqual(expectedCounts(expected, waiting));
    const copied = await store();
    const read = await readAll(copied, issued);
    expect(read).toEqual(expected);
    expect(read.allPrivacy).toStrictEqual(expected.allPrivacy);
    await totalsAgree(copied);
    const queued = source.db.prepare(QUEUED).all();
    expect(queued).toHaveLength(waiting);
    expect((await copied.pool.query(QUEUED)).rows).toEqual(queued);

    const tables = async () =>
      (
        await copied.pool.query(
          `SELECT (SELECT count(*) FROM kv) AS kv, (SELECT count(*) FROM status_history) AS status,
                  (SELECT count(*) FROM track_history) AS tracks, (SELECT count(*) FROM play_counts) AS plays,
                  (SELECT count(*) FROM api_keys) AS keys, (SELECT count(*) FROM history_forgotten) AS erased,
                  (SELECT count(*) FROM webhook_queue) AS queued,
                  (SELECT count(*) FROM privacy_settings) AS privacy`,
        )
      ).rows[0];
    const rowsBefore = await tables();
    const again = await migrate(`sqlite:${path}`, url);
    expect(again.code, again.output).toBe(0);
    expect(countsIn(again.output)).toEqual(countsIn(first.output));
    expect(await tables()).toEqual(rowsBefore);
    expect(await readAll(copied, issued)).toEqual(expected);
    expect((await copied.pool.query(QUEUED)).rows).toEqual(queued);
    await erasuresHold(copied);
    // Each webhook's first event is due once the service starts on the copy, its retries started over.
    const heads = await new PostgresWebhookQueue(copied.pool).claim(copiedAt + 60_000, 10, 15_000);
    expect(heads.map(({ webhookId, event, attempts }) => [webhookId, event.id, attempts])).toEqual([
      ['wh_1_1', 'ev_0', 0],
      ['wh_6_0', 'ev_2', 0],
    ]);
    await source.close();
  });

  it.skipIf(!hasRedis)(
    'copies a Redis store whole, and leaves a history erased in PostgreSQL since erased',
    async () => {
      const source = openRedisStore(redis as Redis, prefix);
      await source.ping();
      const issued = await populate(source);
      const expected = await readAll(source, issued);
      const { url, store } = await target();

      const copy = await migrate(REDIS_TEST_URL, url, '--prefix', prefix);
      expect(copy.code, copy.output).toBe(0);
      expect(countsIn(copy.output)).toEqual(expectedCounts(expected, 0));
      const copied = await store();
      const read = await readAll(copied, issued);
      expect(read).toEqual(expected);
      expect(read.allPrivacy).toStrictEqual(expected.allPrivacy);
      await totalsAgree(copied);
      await erasuresHold(copied);

      const erasedHere = USERS[10] as Snowflake;
      await copied.history.forget(erasedHere, T0 + 86_400_000);
      // Settings changed in PostgreSQL since: a copy again gives a copied user the source's settings back.
      await copied.privacy.patchPrivacy(USERS[1] as Snowflake, { allow_agents: true, paused_until: null });
      await copied.privacy.patchPrivacy(USERS[9] as Snowflake, { hide_kv: true });
      const again = await migrate(REDIS_TEST_URL, url, '--prefix', prefix);
      expect(again.code, again.output).toBe(0);
      expect(again.output).toContain('erased there since an earlier copy: 1 users');
      const after = await readAll(copied, issued);
      expect(after.history[10]).toEqual({ status: [], tracks: [] });
      expect(after.top[10]).toEqual([]);
      expect(after.kv).toEqual(expected.kv);
      expect(after.privacy).toStrictEqual(expected.privacy);
      expect(after.allPrivacy).toStrictEqual(expected.allPrivacy);
    },
  );

  it('refuses what it cannot copy, naming no password', async () => {
    const secret = 'hunter2-secret';
    const wrongTarget = await migrate(`sqlite:${join(dir, 'none.db')}`, `mysql://u:${secret}@localhost/db`);
    expect(wrongTarget.code).toBe(2);
    expect(wrongTarget.output).toContain('--to must be a postgres:// URL');
    expect(wrongTarget.output).not.toContain(secret);
    const { url } = await target();
    const missing = await migrate(`sqlite:${join(dir, 'none.db')}`, url);
    expect(missing.code).toBe(1);
    if (!hasRedis) return;
    const emptyPrefix = await migrate(REDIS_TEST_URL, url, '--prefix', uniquePrefix());
    expect(emptyPrefix.code).toBe(1);
    expect(emptyPrefix.output).toMatch(/no Presently store under the prefix/);
  });
});
