import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers/promises';
import { promisify } from 'node:util';
import { constants, createGzip, gunzip } from 'node:zlib';
import type { Snowflake } from '../presence/model.js';
import { isRecord } from '../presence/normalize/values.js';
import type { SavedPresence } from '../presence/registry/registry.js';
import { isSnowflake } from '../presence/snowflake.js';

const gunzipped = promisify(gunzip);

/** Bumped when the lines change shape: a snapshot of another version is not read. */
const SNAPSHOT_VERSION = 2;
/** A snapshot larger than this, uncompressed, is not read: no registry this process could hold is. */
const SNAPSHOT_MAX_BYTES = 2 ** 31;
/** Starts the line of the sequence numbers a turn's lines hold. */
const SEQUENCES = '#';
/** Users made into lines in one turn of the event loop. */
const LINES_PER_TURN = 1_000;

/**
 * What a restarted ingest node takes back: which shard each guild is on, who holds the opt-in role where
 * (no listing repeats it), and the presences it held.
 */
export interface RestartSnapshot {
  /** The settings it was made under (`RestartStateOptions.settings`). */
  settings: string;
  /**
   * The sequence number of the last dispatch each shard has taken in, read as each turn's lines are made:
   * a line holds every event up to these, which a resume from the saved sessions' earlier numbers replays.
   */
  sequences(): ReadonlyMap<number, number>;
  guildShards: Array<[Snowflake, number]>;
  roleHolders: Array<[Snowflake, Snowflake[]]>;
  /** Who had opted in, on an instance that monitors only them; empty elsewhere. */
  optedIn: Snowflake[];
  presences: Iterable<SavedPresence>;
}

/** A user as decoded: what `restore` takes, and the sequence numbers of what their line holds already. */
export interface DecodedPresence extends SavedPresence {
  /** By shard: replayed events up to these are in the line already. */
  sequences: ReadonlyMap<number, number>;
}

/** A snapshot read back. */
export interface DecodedSnapshot extends Omit<RestartSnapshot, 'sequences' | 'presences'> {
  presences: DecodedPresence[];
}

/** A snapshot made, and how long making its lines held the event loop, in all (ms). */
export interface EncodedSnapshot {
  bytes: Buffer;
  busyMs: number;
}

/**
 * The snapshot as gzipped JSON lines: a header naming the version, the settings, the guilds' shards and
 * the role holders, then one line per user. The users are gone over LINES_PER_TURN at a time, one turn of
 * the event loop each, so that a large registry never holds the process for long. Events taken in
 * meanwhile are in some lines and not others: each turn's lines follow a line of the sequence numbers
 * they hold (when they moved), so that a resume, which replays from the saved sessions' numbers (read
 * before the first turn), does not apply to a user again what their line holds already.
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
  // Heard at the end; a failure meanwhile must not go unhandled.
  ended.catch(() => undefined);
  try {
    return await writeLines(gzip, snapshot, chunks, ended);
  } finally {
    gzip.destroy();
  }
}

async function writeLines(
  gzip: ReturnType<typeof createGzip>,
  snapshot: RestartSnapshot,
  chunks: Buffer[],
  ended: Promise<void>,
): Promise<EncodedSnapshot> {
  const header = {
    v: SNAPSHOT_VERSION,
    settings: snapshot.settings,
    guilds: snapshot.guildShards,
    roles: snapshot.roleHolders,
    optedIn: snapshot.optedIn,
  };
  gzip.write(`${JSON.stringify(header)}\n`);
  let busyMs = 0;
  let sequencesWritten = '';
  const users = snapshot.presences[Symbol.iterator]();
  for (let done = false; !done; ) {
    const started = performance.now();
    const lines: string[] = [];
    const sequences = `${SEQUENCES}${JSON.stringify([...snapshot.sequences()])}`;
    if (sequences !== sequencesWritten) {
      lines.push(sequences);
      sequencesWritten = sequences;
    }
    while (lines.length < LINES_PER_TURN) {
      const next = users.next();
      if (next.done) {
        done = true;
        break;
      }
      const { userId, guildIds, stale, text } = next.value;
      lines.push(`${userId}\t${guildIds.join(',')}\t${stale ? 1 : 0}\t${text}`);
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
export async function decodeSnapshot(bytes: Buffer): Promise<DecodedSnapshot | null> {
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
  if (!Array.isArray(header.guilds) || !Array.isArray(header.roles) || !Array.isArray(header.optedIn)) {
    return null;
  }
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
  const presences: DecodedPresence[] = [];
  let sequences: ReadonlyMap<number, number> = new Map();
  for (let start = at + 1; start < text.length; start = at + 1) {
    at = text.indexOf(10, start);
    if (at < 0) at = text.length;
    const line = text.toString('utf8', start, at);
    if (line.startsWith(SEQUENCES)) {
      sequences = sequencesFrom(parseJson(line.slice(SEQUENCES.length)));
      continue;
    }
    const saved = savedPresence(line);
    if (saved) presences.push({ ...saved, sequences });
  }
  const optedIn = (header.optedIn as unknown[]).filter(isId);
  return { settings: header.settings, guildShards, roleHolders, optedIn, presences };
}

/**
 * A user's line: id, guild ids, stale, and what the presence is rendered from (JSON, which has no tab),
 * tab-separated. The JSON is read when the user is rendered: the snapshot is sealed, so it is this
 * bot's own; the rest is checked here.
 */
function savedPresence(line: string): SavedPresence | null {
  const [userId, guilds, stale, json] = line.split('\t', 4);
  if (userId === undefined || !isId(userId) || guilds === undefined || json === undefined) return null;
  const guildIds = guilds.split(',');
  if (!guildIds.every(isId) || !json.startsWith('[') || !json.endsWith(']')) return null;
  return { userId, guildIds, stale: stale === '1', text: json };
}

function sequencesFrom(value: unknown): ReadonlyMap<number, number> {
  const sequences = new Map<number, number>();
  if (!Array.isArray(value)) return sequences;
  for (const entry of value) {
    if (Array.isArray(entry) && Number.isInteger(entry[0]) && Number.isInteger(entry[1])) {
      sequences.set(entry[0], entry[1]);
    }
  }
  return sequences;
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
