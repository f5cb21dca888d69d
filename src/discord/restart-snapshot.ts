import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers/promises';
import { promisify } from 'node:util';
import { constants, createGzip, gunzip } from 'node:zlib';
import type { DiscordUser, Snowflake } from '../presence/model.js';
import { rawPresenceFrom } from '../presence/raw.js';
import type { SavedPresence } from '../presence/registry.js';
import { isSnowflake } from '../presence/snowflake.js';
import { isRecord } from '../presence/values.js';

const gunzipped = promisify(gunzip);

/** Bumped when the lines change shape: a snapshot of another version is not read. */
const SNAPSHOT_VERSION = 1;
/** A snapshot larger than this, uncompressed, is not read: no registry this process could hold is. */
const SNAPSHOT_MAX_BYTES = 2 ** 31;
/** Users made into lines in one turn of the event loop. */
const LINES_PER_TURN = 1_000;

/**
 * What a restarted ingest node takes back: which shard each guild is on, who holds the opt-in role where
 * (no listing repeats it), and the presences it held.
 */
export interface RestartSnapshot {
  /** The settings it was made under (`RestartStateOptions.settings`). */
  settings: string;
  guildShards: Array<[Snowflake, number]>;
  roleHolders: Array<[Snowflake, Snowflake[]]>;
  presences: Iterable<SavedPresence>;
}

/** A snapshot made, and how long making its lines held the event loop, in all (ms). */
export interface EncodedSnapshot {
  bytes: Buffer;
  busyMs: number;
}

/**
 * The snapshot as gzipped JSON lines: a header naming the version, the guilds' shards and the role
 * holders, then one line per user. The users are gone over LINES_PER_TURN at a time, one turn of the event
 * loop each, so that a large registry never holds the process for long; changes made meanwhile show in
 * some lines and not others, which a resume from the sequence numbers of the start (taken before) mends:
 * every event replayed sets what it reports, so one applied twice changes nothing.
 */
export async function encodeSnapshot(snapshot: RestartSnapshot): Promise<EncodedSnapshot> {
  // The fastest level: the snapshot is written every few seconds and read once.
  const gzip = createGzip({ level: constants.Z_BEST_SPEED });
  const chunks: Buffer[] = [];
  gzip.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    gzip.on('end', resolve);
    gzip.on('error', reject);
  });
  const header = {
    v: SNAPSHOT_VERSION,
    settings: snapshot.settings,
    guilds: snapshot.guildShards,
    roles: snapshot.roleHolders,
  };
  gzip.write(`${JSON.stringify(header)}\n`);
  let busyMs = 0;
  const users = snapshot.presences[Symbol.iterator]();
  for (let done = false; !done; ) {
    const started = performance.now();
    const lines: string[] = [];
    while (lines.length < LINES_PER_TURN) {
      const next = users.next();
      if (next.done) {
        done = true;
        break;
      }
      const saved = next.value;
      lines.push(
        JSON.stringify([saved.observedAt, saved.user, saved.raw, saved.guildIds, saved.stale ? 1 : 0]),
      );
    }
    if (lines.length > 0) gzip.write(`${lines.join('\n')}\n`);
    busyMs += performance.now() - started;
    if (!done) await setImmediate();
  }
  gzip.end();
  await ended;
  return { bytes: Buffer.concat(chunks), busyMs };
}

/**
 * The snapshot `encodeSnapshot` wrote, or null when it is not one (another version, damaged): the store
 * is outside this process, so each line is checked, and a user whose line is not well formed is skipped.
 */
export async function decodeSnapshot(
  bytes: Buffer,
): Promise<(RestartSnapshot & { presences: SavedPresence[] }) | null> {
  let text: Buffer;
  try {
    text = await gunzipped(bytes, { maxOutputLength: SNAPSHOT_MAX_BYTES });
  } catch {
    return null;
  }
  let at = text.indexOf(10);
  if (at < 0) return null;
  const header = parseJson(text.toString('utf8', 0, at));
  if (!isRecord(header) || header.v !== SNAPSHOT_VERSION || typeof header.settings !== 'string') return null;
  if (!Array.isArray(header.guilds) || !Array.isArray(header.roles)) return null;
  const guildShards: Array<[Snowflake, number]> = [];
  for (const entry of header.guilds as unknown[]) {
    if (Array.isArray(entry) && isId(entry[0]) && Number.isInteger(entry[1]) && entry[1] >= 0) {
      guildShards.push([entry[0], entry[1]]);
    }
  }
  const roleHolders: Array<[Snowflake, Snowflake[]]> = [];
  for (const entry of header.roles as unknown[]) {
    if (Array.isArray(entry) && isId(entry[0]) && Array.isArray(entry[1]) && entry[1].every(isId)) {
      roleHolders.push([entry[0], entry[1]]);
    }
  }
  const presences: SavedPresence[] = [];
  for (let start = at + 1; start < text.length; start = at + 1) {
    at = text.indexOf(10, start);
    if (at < 0) at = text.length;
    const saved = savedPresence(parseJson(text.toString('utf8', start, at)));
    if (saved) presences.push(saved);
  }
  return { settings: header.settings, guildShards, roleHolders, presences };
}

function savedPresence(line: unknown): SavedPresence | null {
  if (!Array.isArray(line) || line.length !== 5) return null;
  const [observedAt, user, raw, guildIds, stale] = line as unknown[];
  if (typeof observedAt !== 'number' || !Number.isFinite(observedAt)) return null;
  if (!isRecord(user) || !isId(user.id)) return null;
  if (!Array.isArray(guildIds) || guildIds.length === 0 || !guildIds.every(isId)) return null;
  return {
    observedAt,
    user: user as unknown as DiscordUser,
    raw: rawPresenceFrom(raw),
    guildIds: guildIds as Snowflake[],
    stale: stale === 1,
  };
}

function isId(value: unknown): value is Snowflake {
  return typeof value === 'string' && isSnowflake(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
