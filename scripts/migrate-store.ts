/**
 * `npm run migrate-store -- --from <source> --to postgres://…`: copies the durable data of a SQLite or
 * Redis store into PostgreSQL, for a deployment moving to it (see docs/storage.md, "Moving to
 * PostgreSQL").
 *
 * - `--from sqlite:<path>`: the SQLite file, opened read only;
 * - `--from redis://…` (or `rediss://`), with `--prefix` (`REDIS_PREFIX`, `presently:` by default): the
 *   Redis store under that prefix, only read;
 * - `--to postgres://…` (or `postgresql://`): the PostgreSQL store, its schema created or migrated first.
 *
 * It copies KV with revisions, API key hashes, profiles, status and track history, play counts and stats,
 * the moments of erasure, privacy settings, read token hashes, and webhooks with their recent deliveries (and, from SQLite, the events waiting
 * for delivery), and prints what it wrote. Run again, it copies again: each user copied has in
 * PostgreSQL what the source holds, so a copy cut short is finished by another. Exits 1 on failure, 2 on
 * arguments it does not take; passwords in URLs are never printed.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { redactUrl } from '../src/redact-url.js';
import { openPostgresStore } from '../src/store/postgres/index.js';
import { copyIntoPostgres } from '../src/store/postgres/load.js';
import { dumpRedis } from '../src/store/redis/dump.js';
import { dumpSqlite } from '../src/store/sqlite/dump.js';
import type { StoreDump, TransferCounts } from '../src/store/transfer.js';

const USAGE =
  'usage: npm run migrate-store -- --from sqlite:<path> | redis://… [--prefix presently:] --to postgres://…';
/** A line on stderr each time this many more users are copied. */
const PROGRESS_EVERY = 10_000;

function usage(problem: string): never {
  console.error(`migrate-store: ${problem}\n${USAGE}`);
  process.exit(2);
}

let args: { from?: string; to?: string; prefix?: string };
try {
  ({ values: args } = parseArgs({
    options: { from: { type: 'string' }, to: { type: 'string' }, prefix: { type: 'string' } },
    strict: true,
  }));
} catch (error) {
  usage((error as Error).message);
}
const { from, to } = args;
if (from === undefined || to === undefined) usage('both --from and --to are needed');
if (!/^postgres(ql)?:\/\//.test(to)) usage(`--to must be a postgres:// URL (got ${redactUrl(to)})`);
const prefix = args.prefix ?? process.env.REDIS_PREFIX ?? 'presently:';

let redis: Redis | null = null;
let dump: StoreDump;
if (from.startsWith('sqlite:') && from.length > 'sqlite:'.length) {
  dump = dumpSqlite(resolve(from.slice('sqlite:'.length)));
} else if (/^rediss?:\/\//.test(from)) {
  // Reaching Redis or not: a copy reports a failure rather than wait for Redis to come back.
  redis = new Redis(from, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  dump = dumpRedis(redis, prefix);
} else {
  usage(`--from must be sqlite:<path> or a redis:// URL (got ${redactUrl(from)})`);
}
const source = redis ? `${redactUrl(from)} (prefix ${prefix})` : from;

try {
  await redis?.connect();
  const store = await openPostgresStore(to);
  let shown = 0;
  try {
    const counts = await copyIntoPostgres(store, dump, (total) => {
      if (total.users - shown < PROGRESS_EVERY) return;
      shown = total.users;
      console.error(`migrate-store: ${total.users} users copied…`);
    });
    console.log(report(source, redactUrl(to), counts));
  } finally {
    await store.close();
  }
} catch (error) {
  console.error(`migrate-store: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  redis?.disconnect();
}

function report(from: string, into: string, counts: TransferCounts): string {
  const lines = [
    `copied ${from} into ${into}:`,
    `  users: ${counts.users}`,
    `  kv: ${counts.kvKeys} keys of ${counts.kvUsers} users, with their revisions`,
    `  api keys: ${counts.apiKeys}`,
    `  profiles: ${counts.profiles}`,
    `  status entries: ${counts.statusEntries}`,
    `  track entries: ${counts.trackEntries}`,
    `  play counts: ${counts.playCounts}`,
    `  stats: ${counts.stats}`,
    `  erasures: ${counts.forgetMarkers}`,
    `  privacy settings: ${counts.privacySettings}`,
    `  read tokens: ${counts.readTokens}`,
    `  webhooks: ${counts.webhooks}`,
    `  webhook deliveries: ${counts.webhookDeliveries}`,
    `  webhook events waiting: ${counts.webhookEvents}`,
  ];
  if (counts.erasedSince > 0) {
    lines.push(
      `  history kept in PostgreSQL, erased there since an earlier copy: ${counts.erasedSince} users`,
    );
  }
  return lines.join('\n');
}
