import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { freePort, startNodeProcess } from '../../test/support/node-process.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/postgres.js';
import { type BenchChild, type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { formatNumber, median } from '../lib/stats.js';

/** Active users whose durable data is measured. */
const USERS = 1_000;
/** Each user's plays, of this many distinct tracks: both history lists at their limit of 100. */
const PLAYS = 150;
const DISTINCT = 100;
/** Users a node monitors for the live state: many, so its connections' buffers weigh little per user. */
const LIVE_USERS = 10_000;
/** Ingest runs per store, interleaved. */
const RUNS = 2;

interface IngestDone extends Message {
  cpuMicrosPerUpdate: number;
  serverCpuMicrosPerUpdate: number;
  updates: number;
  rows: number;
  updatesPerSecond: number;
}

/**
 * What keeping the durable data in PostgreSQL rather than Redis costs and saves, on this machine: bytes per
 * active user with full histories in Redis's memory (INFO used_memory, before and after the store is
 * filled) against PostgreSQL's tables and indexes on disk (pg_total_relation_size); what a node leaves in
 * Redis per user when PostgreSQL holds the durable data; and history writes into PostgreSQL against SQLite,
 * the same batches in the same run, with the CPU they cost the service and the database server. Redis is
 * one of the scenario's own (nothing else in its memory); PostgreSQL is this machine's server
 * (POSTGRES_TEST_URL), in a database of the run's own.
 */
export async function storage(): Promise<Row[]> {
  const server = await startRedis();
  const redis = new Redis(server.url);
  const database = await createTestDatabase();
  const children: BenchChild[] = [];
  try {
    const inRedis = await durableInRedis(redis, server.url, children);
    const inPostgres = await durableInPostgres(database, children);
    const live = await liveInRedis(redis, server.url, database, children);
    const ingest = await ingestRuns(database);

    const kb = (bytes: number) => bytes / 1024;
    const perRow = (done: IngestDone[], cpu: (run: IngestDone) => number) =>
      median(done.map((run) => (cpu(run) * run.updates) / run.rows));
    const rowsPerSecond = (done: IngestDone[]) =>
      median(done.map((run) => (run.rows * run.updatesPerSecond) / run.updates));
    const service = (run: IngestDone) => run.cpuMicrosPerUpdate;
    const both = (run: IngestDone) => run.cpuMicrosPerUpdate + run.serverCpuMicrosPerUpdate;
    const { sqlite, postgres } = ingest;
    const history = `${PLAYS} plays of ${DISTINCT} tracks (status and track lists at their limit of 100, ${DISTINCT} ranked tracks), a KV of 5 keys, an API key and a profile`;
    return [
      {
        scenario: 'storage',
        figure: 'durable data per active user in PostgreSQL, on disk (tables + indexes)',
        value: kb(inPostgres.perUser),
        unit: 'KB',
        baseline: { label: 'the same in Redis’s memory (Redis-only store)', value: kb(inRedis.perUser) },
        target: null,
        notes:
          `${formatNumber(USERS)} users, each with ${history}, written through each store's own write paths. ` +
          `Redis: INFO used_memory after the fill less before, per user (the keys' MEMORY USAGE: ` +
          `${formatNumber(kb(inRedis.keysPerUser))} KB). PostgreSQL: pg_total_relation_size of the store's tables ` +
          `after VACUUM FULL, less the empty schema's, per user: ${formatNumber(kb(inPostgres.indexesPerUser))} KB ` +
          `of it indexes; as the writes left it (trimmed rows not yet vacuumed) ${formatNumber(kb(inPostgres.writtenPerUser))} KB`,
      },
      {
        scenario: 'storage',
        figure: 'Redis memory per active user, durable data in PostgreSQL (only what is live)',
        value: kb(live.perUser),
        unit: 'KB',
        baseline: {
          label: 'durable data in Redis too (what is live + the above)',
          value: kb(live.perUser + inRedis.perUser),
        },
        target: null,
        notes:
          `a node (ROLE all, REDIS_URL and DATABASE_URL) monitoring ${formatNumber(LIVE_USERS)} users with realistic ` +
          `presences: INFO used_memory once all are published and it is ready, less before it started, per user (the keys' ` +
          `MEMORY USAGE: ${formatNumber(kb(live.keysPerUser))} KB); the baseline adds the Redis-only store's ` +
          'durable data per user measured above',
      },
      {
        scenario: 'storage',
        figure: 'history writes into PostgreSQL, rows/s, batches written one after another',
        value: rowsPerSecond(postgres),
        unit: 'rows/s',
        baseline: { label: 'SQLite file, same batches', value: rowsPerSecond(sqlite) },
        target: null,
        notes:
          `the batches the recorder makes of ingest-history's ${formatNumber((postgres[0] as IngestDone).updates)} ` +
          `dispatches (${formatNumber((postgres[0] as IngestDone).rows)} status and track rows), written to a fresh ` +
          `store in the clock (bench/processes/ingest.ts, HISTORY=store); CPU per row: service process ` +
          `${formatNumber(perRow(postgres, service))} µs + PostgreSQL backends ` +
          `${formatNumber(perRow(postgres, (run) => run.serverCpuMicrosPerUpdate))} µs, against SQLite ` +
          `${formatNumber(perRow(sqlite, service))} µs in the process; median of ${RUNS} runs each, interleaved`,
      },
      {
        scenario: 'storage',
        figure: 'server CPU per history row written into PostgreSQL (service + PostgreSQL backends)',
        value: perRow(postgres, both),
        unit: 'µs',
        baseline: { label: 'SQLite, in the service process', value: perRow(sqlite, both) },
        target: null,
      },
    ];
  } finally {
    for (const child of children.splice(0).reverse()) await child.stop();
    redis.disconnect();
    await server.stop();
    await database.drop();
  }
}

/** The Redis-only store filled: used memory per user, and its keys' MEMORY USAGE per user. */
async function durableInRedis(
  redis: Redis,
  url: string,
  children: BenchChild[],
): Promise<{ perUser: number; keysPerUser: number }> {
  const prefix = 'presently-bench-durable:';
  const before = await usedMemory(redis);
  await fill(children, { STORE: 'redis', REDIS_URL: url, PREFIX: prefix });
  return {
    perUser: ((await usedMemory(redis)) - before) / USERS,
    keysPerUser: (await keysMemory(redis, prefix)) / USERS,
  };
}

/** The PostgreSQL store filled: bytes on disk per user after VACUUM FULL (and before), indexes apart. */
async function durableInPostgres(
  database: TestDatabase,
  children: BenchChild[],
): Promise<{ perUser: number; indexesPerUser: number; writtenPerUser: number }> {
  const url = await database.schema();
  await (await openPostgresStore(url)).close();
  const pool = new Pool({ connectionString: url, max: 1 });
  try {
    const empty = await relationSizes(pool);
    await fill(children, { STORE: 'postgres', DATABASE_URL: url });
    const written = await relationSizes(pool);
    await pool.query('VACUUM (FULL, ANALYZE)');
    const vacuumed = await relationSizes(pool);
    return {
      perUser: (vacuumed.total - empty.total) / USERS,
      indexesPerUser: (vacuumed.indexes - empty.indexes) / USERS,
      writtenPerUser: (written.total - empty.total) / USERS,
    };
  } finally {
    await pool.end();
  }
}

/** A node on Redis and PostgreSQL with LIVE_USERS users: what it adds to Redis's memory, per user. */
async function liveInRedis(
  redis: Redis,
  url: string,
  database: TestDatabase,
  children: BenchChild[],
): Promise<{ perUser: number; keysPerUser: number }> {
  const prefix = 'presently-bench-live:';
  const discord = startChild('discord', [], {
    WORKLOAD: 'realistic',
    USERS: String(LIVE_USERS),
    START: String(Date.now() - 30_000),
  });
  children.push(discord);
  const endpoints = await discord.next<Message & { token: string; apiUrl: string; cdnUrl: string }>('ready');
  const before = await usedMemory(redis);
  const node = await startNodeProcess(
    'storage node',
    {
      ROLE: 'all',
      REDIS_URL: url,
      REDIS_PREFIX: prefix,
      DATABASE_URL: await database.schema(),
      DISCORD_TOKEN: endpoints.token,
      DISCORD_API_URL: endpoints.apiUrl,
      DISCORD_CDN_URL: endpoints.cdnUrl,
    },
    { readyTimeoutMs: 60_000 },
  );
  try {
    // Every user published, and the node ready (its guilds listed, its replica read): start-up done.
    const deadline = Date.now() + 120_000;
    const settled = async () =>
      (await redis.scard(`${prefix}monitored`)) >= LIVE_USERS &&
      (await fetch(`${node.url}/v1/ready`)).status === 200;
    while (!(await settled())) {
      if (Date.now() > deadline) throw new Error(`storage: the node did not publish ${LIVE_USERS} users`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return {
      perUser: ((await usedMemory(redis)) - before) / LIVE_USERS,
      keysPerUser: (await keysMemory(redis, prefix)) / LIVE_USERS,
    };
  } finally {
    await node.stop();
  }
}

/** The same history batches into SQLite and PostgreSQL, RUNS times each, interleaved. */
async function ingestRuns(database: TestDatabase): Promise<Record<'sqlite' | 'postgres', IngestDone[]>> {
  const runs: Record<'sqlite' | 'postgres', IngestDone[]> = { sqlite: [], postgres: [] };
  for (let run = 0; run < RUNS; run++) {
    for (const store of ['sqlite', 'postgres'] as const) {
      const child = startChild('ingest', [], {
        HISTORY: 'store',
        STORE: store,
        ...(store === 'postgres' ? { DATABASE_URL: await database.schema() } : {}),
      });
      try {
        runs[store].push(await child.next<IngestDone>('done', 300_000));
      } finally {
        await child.stop();
      }
    }
  }
  const [sqlite, postgres] = [runs.sqlite[0], runs.postgres[0]] as [IngestDone, IngestDone];
  if (sqlite.rows === 0 || sqlite.rows !== postgres.rows) {
    throw new Error(`storage: SQLite wrote ${sqlite.rows} history rows, PostgreSQL ${postgres.rows}`);
  }
  return runs;
}

async function fill(children: BenchChild[], env: Record<string, string>): Promise<void> {
  const child = startChild('storage-fill', [], {
    ...env,
    USERS: String(USERS),
    PLAYS: String(PLAYS),
    DISTINCT: String(DISTINCT),
  });
  children.push(child);
  await child.next('done', 600_000);
  await child.stop();
  children.splice(children.indexOf(child), 1);
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}

/** MEMORY USAGE of every key under the prefix, summed. */
async function keysMemory(redis: Redis, prefix: string): Promise<number> {
  let total = 0;
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1_000 })) {
    const pipeline = redis.pipeline();
    for (const key of keys as string[]) pipeline.memory('USAGE', key, 'SAMPLES', 0);
    for (const [error, bytes] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      total += Number(bytes ?? 0);
    }
  }
  return total;
}

/** The store's tables with their TOAST and indexes, and the indexes alone, in bytes. */
async function relationSizes(pool: Pool): Promise<{ total: number; indexes: number }> {
  const { rows } = await pool.query<{ total: string; indexes: string }>(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS total,
            coalesce(sum(pg_indexes_size(c.oid)), 0) AS indexes
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'presently_schema'`,
  );
  return { total: Number(rows[0]?.total), indexes: Number(rows[0]?.indexes) };
}

/** A redis-server of the scenario's own, without persistence: only what the scenario puts in it. */
async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
  probe.on('error', () => {});
  await probe.connect().catch(() => undefined);
  await probe.ping();
  probe.disconnect();
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}
