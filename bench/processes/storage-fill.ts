import { Redis } from 'ioredis';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { DEFAULT_KV_MAX_BYTES, KV_MAX_KEYS } from '../../src/kv/rules.js';
import { HISTORY_LIMIT, TRACKED_TRACKS_PER_USER, type TrackEntry } from '../../src/model/history.js';
import type { DiscordStatus } from '../../src/presence/model.js';
import type { HistoryWrite, Store, StoredProfile } from '../../src/store/ports.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { report, serveBenchProcess } from '../lib/child.js';
import { benchUserId, SONGS } from '../lib/workload.js';

/**
 * Fills a store with USERS active users' durable data through its own write paths, as the service writes
 * it: a KV of five keys, an API key, a profile, and PLAYS plays of DISTINCT tracks (each play a track entry
 * and a status change, written a round of every user's at a time, as the recorder's batches), so both
 * lists are at their limit and the play ranking holds DISTINCT tracks. STORE=redis (REDIS_URL, PREFIX) or
 * postgres (DATABASE_URL). Reports `done` once the store is closed (PostgreSQL has trimmed its lists).
 */
const USERS = Number(process.env.USERS ?? 1_000);
const PLAYS = Number(process.env.PLAYS ?? 150);
const DISTINCT = Number(process.env.DISTINCT ?? 100);
const STATUSES: DiscordStatus[] = ['online', 'idle', 'dnd'];
const T0 = Date.UTC(2026, 10, 22, 12);
const PLAY_MS = 210_000;

serveBenchProcess();
const store: Store =
  process.env.STORE === 'redis'
    ? openRedisStore(new Redis(process.env.REDIS_URL as string), process.env.PREFIX as string)
    : await openPostgresStore(process.env.DATABASE_URL as string);
await store.ping();

function track(n: number, k: number, ts: number): TrackEntry {
  const song = SONGS[k % SONGS.length] as (typeof SONGS)[number];
  const id = `${n.toString(36)}x${k.toString(36)}`.padStart(22, '0');
  return {
    source: 'spotify',
    song: `${song.song} (${k})`,
    artist: song.artists.join('; '),
    album: song.album,
    album_art_url: `https://i.scdn.co/image/ab67616d0000b273${(n * DISTINCT + k).toString(16).padStart(24, '0')}`,
    track_id: id,
    track_url: `https://open.spotify.com/track/${id}`,
    timestamps: { start: ts, end: ts + song.ms },
    duration_ms: song.ms,
    ts,
  };
}

const limits = { history: HISTORY_LIMIT, trackedTracks: TRACKED_TRACKS_PER_USER };
for (let round = 0; round < PLAYS; round++) {
  const batch: HistoryWrite[] = [];
  for (let n = 0; n < USERS; n++) {
    const ts = T0 + round * PLAY_MS + n;
    batch.push({
      userId: benchUserId(n),
      status: { status: STATUSES[round % STATUSES.length] as DiscordStatus, ts },
      track: track(n, round % DISTINCT, ts),
      countsPlay: true,
      lastSeen: round % 10 === 0 ? ts : null,
    });
  }
  await store.history.appendHistory(batch, limits);
}

const kvLimits = { maxKeys: KV_MAX_KEYS, maxBytes: DEFAULT_KV_MAX_BYTES };
const profiles = new Map<string, StoredProfile>();
for (let n = 0; n < USERS; n++) {
  const userId = benchUserId(n);
  const kv = new Map([
    ['location', `Lyon, France ${n}`],
    ['mood', 'shipping things 🚀'],
    ['website', `https://example.com/~user${n}`],
    ['pronouns', 'they/them'],
    ['status_note', 'back at 5 pm, ask me about the benchmark'],
  ]);
  await store.kv.writeKv(userId, { set: kv, delete: [] }, kvLimits);
  await store.apiKeys.replaceKey(userId, hashApiKey(generateApiKey()), T0);
  profiles.set(userId, {
    profile: { banner: `a_${n.toString(16).padStart(32, '0')}`, accent_color: n * 97 },
    fetchedAt: T0,
  });
}
await store.profiles.putProfiles(profiles);
await store.close();
report({ type: 'done', users: USERS });
process.exit(0);
