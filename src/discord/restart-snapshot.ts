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
/** Lines written to the compressor at a time: one string of every line could exceed V8's longest. */
const LINES_PER_WRITE = 1_000;

/**
 * What a restarted ingest node takes back: which shard each guild is on, who holds the opt-in role where
 * (no listing repeats it), and the presences it held.
 */
export interface RestartSnapshot {
  guildShards: Array<[Snowflake, number]>;
  roleHolders: Array<[Snowflake, Snowflake[]]>;
  presences: Iterable<SavedPresence>;
}

/**
 * The snapshot as gzipped JSON lines: a header naming the version and the guilds' shards, then one line
 * per user. The lines are made at once (the presences as of one moment, matching the saved sequence
 * numbers); only compressing them waits.
 */
export function encodeSnapshot(snapshot: RestartSnapshot): Promise<Buffer> {
  const header = { v: SNAPSHOT_VERSION, guilds: snapshot.guildShards, roles: snapshot.roleHolders };
  const lines = [JSON.stringify(header)];
  for (const saved of snapshot.presences) {
    lines.push(
      JSON.stringify([saved.observedAt, saved.user, saved.raw, saved.guildIds, saved.stale ? 1 : 0]),
    );
  }
  return new Promise((resolve, reject) => {
    // The fastest level: the snapshot is written every few seconds and read once.
    const gzip = createGzip({ level: constants.Z_BEST_SPEED });
    const chunks: Buffer[] = [];
    gzip.on('data', (chunk: Buffer) => chunks.push(chunk));
    gzip.on('end', () => resolve(Buffer.concat(chunks)));
    gzip.on('error', reject);
    for (let at = 0; at < lines.length; at += LINES_PER_WRITE) {
      gzip.write(`${lines.slice(at, at + LINES_PER_WRITE).join('\n')}\n`);
    }
    gzip.end();
  });
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
    text = await gunzipped(bytes);
  } catch {
    return null;
  }
  let at = text.indexOf(10);
  if (at < 0) return null;
  const header = parseJson(text.toString('utf8', 0, at));
  if (!isRecord(header) || header.v !== SNAPSHOT_VERSION) return null;
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
  return { guildShards, roleHolders, presences };
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
