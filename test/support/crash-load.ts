import type { GatewayActivity } from 'discord-api-types/v10';
import { expect } from 'vitest';
import { hashApiKey } from '../../src/keys/api-key.js';
import { HISTORY_LIMIT, TRACKED_TRACKS_PER_USER } from '../../src/model/history.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import type { DiscordSimulator } from '../../src/simulator/index.js';
import type { Store } from '../../src/store/ports.js';
import { eventually } from './eventually.js';

/**
 * The load of the crash tests: a simulated Discord whose users change presence all the time (so the
 * history recorder writes batch after batch), readers of their history that note what the service has
 * shown to be written, and a burst of KV writes; then what must have survived a crash, checked in the
 * store.
 *
 * What "acknowledged" means differs:
 * - a KV write is acknowledged by its 204, sent once its transaction has committed;
 * - history has no client to tell: the recorder gathers changes in memory and writes them as one batch,
 *   one transaction, at most a second later (HISTORY_FLUSH_MS). The first moment an outsider can know a
 *   batch is written is when `GET /history` serves its track, since tracks are read from the store only
 *   (the status history also shows the changes just seen, which are as live as the presence). So every
 *   track `/history` served before the crash must survive it; the changes still waiting at the crash may
 *   be lost, but never a part of a batch, nor a batch while a later one survives: what survives is a
 *   gap-free run of what Discord sent.
 */

/** Owns the API key; writes the KV. */
export const WRITER = '80351110224678912';
/** Users whose presence changes through the whole burst: history to record. */
export const LISTENERS = Array.from(
  { length: 12 },
  (_, index) => `80351110224679${String(index).padStart(3, '0')}`,
);
/** Every DRIVE_EVERY_MS, the next DRIVEN_PER_TICK listeners change status and track. */
const DRIVE_EVERY_MS = 20;
const DRIVEN_PER_TICK = 3;
/** Each change moves to the next status, so every change is a status entry as well as a play. */
const STATUSES = ['idle', 'dnd', 'online'] as const;
/** Writes of keys of their own: with a PATCH of three keys every tenth, well within the 512 a user keeps. */
export const NEW_KEY_WRITES = 400;
/** Every PATCH_EVERY-th write is a PATCH of three keys (all or nothing), the rest PUTs. */
const PATCH_EVERY = 10;

/**
 * Every request gives up after this: once the service is killed, its port may be taken by another test's
 * server that never answers, and a request without a limit would wait on it for good.
 */
const ANSWER_WITHIN_MS = 10_000;
export const answerWithin = (): AbortSignal => AbortSignal.timeout(ANSWER_WITHIN_MS);

/** The writer and the listeners, online, in one guild. */
export function crashGuild(discord: DiscordSimulator, id: string, name: string): void {
  discord.createGuild({
    id,
    name,
    members: [WRITER, ...LISTENERS].map((userId) => ({
      user: { id: userId, username: `u${userId.slice(-3)}` },
      presence: { status: 'online' as const },
    })),
  });
}

/** Resolves with the writer's presence once the service serves it. */
export async function writerPresence(base: string): Promise<{ kv: Record<string, string> }> {
  const response = await fetch(`${base}/v1/users/${WRITER}`, { signal: answerWithin() });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { kv: Record<string, string> } }).data;
}

/** The songs of a user's track history as the API serves it, newest first. */
export async function servedSongs(base: string, userId: string): Promise<string[]> {
  const response = await fetch(`${base}/v1/users/${userId}/history`, { signal: answerWithin() });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: { track_history: { song: string }[] } };
  return body.data.track_history.map((entry) => entry.song);
}

/** What the simulated Discord has sent for each listener, in order: step i is song `<user>#i`. */
export interface Sent {
  statuses: Map<string, string[]>;
  songs: Map<string, string[]>;
}

function song(userId: string, step: number): string {
  return `${userId}#${step}`;
}

/** The step a served or stored song stands for. */
function stepOf(name: string): number {
  return Number(name.slice(name.indexOf('#') + 1));
}

function track(userId: string, step: number): GatewayActivity {
  const start = Date.now();
  return spotifyActivity({
    song: song(userId, step),
    artists: ['Crash Test'],
    album: 'Durability',
    imageId: 'ab67616d0000b273000000000000000000000000',
    trackId: `t${userId.slice(-3)}s${step}`.padEnd(22, 'x'),
    start,
    end: start + 180_000,
    userId,
  });
}

/** Changes the listeners' presences, a few at a time, until stopped. */
export function drivePresences(discord: DiscordSimulator): { sent: Sent; stop(): void } {
  const sent: Sent = {
    statuses: new Map(LISTENERS.map((id) => [id, []])),
    songs: new Map(LISTENERS.map((id) => [id, []])),
  };
  let next = 0;
  const timer = setInterval(() => {
    for (let i = 0; i < DRIVEN_PER_TICK; i++) {
      const userId = LISTENERS[next++ % LISTENERS.length] as string;
      const songs = sent.songs.get(userId) as string[];
      const step = songs.length;
      const status = STATUSES[step % STATUSES.length] as (typeof STATUSES)[number];
      discord.setPresence(userId, { status, activities: [track(userId, step)] });
      songs.push(song(userId, step));
      sent.statuses.get(userId)?.push(status);
    }
  }, DRIVE_EVERY_MS);
  return { sent, stop: () => clearInterval(timer) };
}

/**
 * Reads every listener's history over and over; for each, the number of steps `/history` has shown to be
 * written (the newest song served, plus one): the acknowledged history.
 */
export function watchHistory(base: string): { acked: Map<string, number>; stop(): Promise<void> } {
  const acked = new Map(LISTENERS.map((id) => [id, 0]));
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const userId of LISTENERS) {
        try {
          const [newest] = await servedSongs(base, userId);
          if (newest !== undefined) acked.set(userId, Math.max(acked.get(userId) ?? 0, stepOf(newest) + 1));
        } catch {
          // a crash, or the store away: reads in flight fail; those answered are what counts
        }
        if (!running) return;
      }
    }
  })();
  return {
    acked,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

export interface Write {
  index: number;
  /** What the write sets: one key for a PUT, three for a PATCH. */
  values: Record<string, string>;
  request: () => Promise<Response>;
}

/** The burst's writes, in order, against `base` with the writer's key. */
export function writes(base: string, key: string, count: number): Write[] {
  const salt = Math.random().toString(36).slice(2, 8);
  const made = Array.from({ length: Math.min(count, NEW_KEY_WRITES) }, (_, index) => write(index));
  // Past the keys a user may keep, the burst goes on by writing early PUTs again, value for value: each
  // is acknowledged like any write, and changes nothing.
  const puts = made.filter((candidate) => Object.keys(candidate.values).length === 1);
  for (let index = made.length; index < count; index++) {
    const again = puts[index % puts.length] as Write;
    made.push({ ...again, index });
  }
  return made;

  function write(index: number): Write {
    if (index % PATCH_EVERY === PATCH_EVERY - 1) {
      const values = Object.fromEntries(
        ['a', 'b', 'c'].map((part) => [`p${index}_${part}`, `patch ${index}${part} ${salt} ✓`]),
      );
      return {
        index,
        values,
        request: () =>
          fetch(`${base}/v1/users/@me/kv`, {
            signal: answerWithin(),
            method: 'PATCH',
            headers: { authorization: key, 'content-type': 'application/json' },
            body: JSON.stringify(values),
          }),
      };
    }
    const value = `value ${index} ${salt} ${'x'.repeat(index % 7 === 0 ? 5_000 : 10)}`;
    return {
      index,
      values: { [`k${index}`]: value },
      request: () =>
        fetch(`${base}/v1/users/@me/kv/k${index}`, {
          signal: answerWithin(),
          method: 'PUT',
          headers: { authorization: key },
          body: value,
        }),
    };
  }
}

/**
 * In the store after the crash: every acknowledged write, each write cut off by it entirely there or
 * entirely absent (never torn), a revision per acknowledged write that changed something, and the key.
 */
export async function expectKvKept(store: Store, key: string, all: Write[], acked: Write[]): Promise<void> {
  const { kv, revision } = await store.kv.getKv(WRITER);
  for (const write of acked) {
    for (const [name, value] of Object.entries(write.values)) {
      expect(kv[name], `acknowledged write #${write.index} (${name})`).toBe(value);
    }
  }
  const ackedIndexes = new Set(acked.map((write) => write.index));
  for (const write of all.filter((candidate) => !ackedIndexes.has(candidate.index))) {
    const present = Object.keys(write.values).filter((name) => Object.hasOwn(kv, name));
    expect([0, Object.keys(write.values).length], `write #${write.index}`).toContain(present.length);
    for (const name of present) expect(kv[name]).toBe(write.values[name]);
  }
  // A write again, value for value, changes nothing and leaves the revision.
  expect(revision).toBeGreaterThanOrEqual(acked.filter((write) => write.index < NEW_KEY_WRITES).length);
  expect(await store.apiKeys.findKey(hashApiKey(key))).toMatchObject({ userId: WRITER });
}

/**
 * In the store after the crash, for each listener: the stored entries are the first `kept` steps Discord
 * sent (the newest HISTORY_LIMIT of them), in order, without a gap, once each, and `kept` covers every step
 * `/history` served; each of those steps' tracks counts one play, so a batch written twice (one whose
 * commit a crash of the store kept but whose answer it lost, tried again) fails it. Answers each
 * listener's newest stored song.
 */
export async function expectHistoryKept(
  store: Store,
  sent: Sent,
  acked: Map<string, number>,
): Promise<Map<string, string>> {
  const survived = new Map<string, string>();
  for (const userId of LISTENERS) {
    const sentSongs = sent.songs.get(userId) as string[];
    const sentStatuses = sent.statuses.get(userId) as string[];
    const { tracks, status } = await store.history.history(userId, HISTORY_LIMIT);
    const songs = tracks.map((entry) => entry.song as string);
    const kept = songs.length === 0 ? 0 : stepOf(songs[0] as string) + 1;
    expect(kept, `${userId}: steps served by /history before the crash`).toBeGreaterThanOrEqual(
      acked.get(userId) ?? 0,
    );
    expect(kept).toBeLessThanOrEqual(sentSongs.length);
    const window = Math.min(kept, HISTORY_LIMIT);
    expect(songs, `${userId}: track history`).toEqual(sentSongs.slice(kept - window, kept).reverse());
    // Each change wrote its status entry in the same batch as its track (older: the first sighting's).
    expect(
      status.slice(0, window).map((entry) => entry.status),
      `${userId}: status history`,
    ).toEqual(sentStatuses.slice(kept - window, kept).reverse());
    const plays = await store.history.topTracks(userId, 1, TRACKED_TRACKS_PER_USER);
    expect(
      plays.filter((play) => play.play_count !== 1).map((play) => play.song),
      `${userId}: plays`,
    ).toEqual([]);
    expect(plays, `${userId}: tracks played`).toHaveLength(Math.min(kept, TRACKED_TRACKS_PER_USER));
    if (kept > 0) survived.set(userId, songs[0] as string);
  }
  return survived;
}

/**
 * A service started after the crash serves every acknowledged value, each listener's newest stored song
 * (`survived`, from expectHistoryKept) and takes the writer's key.
 */
export async function expectServedAgain(
  base: string,
  key: string,
  acked: Write[],
  survived: Map<string, string>,
): Promise<void> {
  const expected = Object.assign({}, ...acked.map((write) => write.values)) as Record<string, string>;
  await eventually(async () => expect((await writerPresence(base)).kv).toMatchObject(expected), 30_000, 100);
  for (const [userId, newest] of survived) expect(await servedSongs(base, userId)).toContain(newest);
  const again = await fetch(`${base}/v1/users/@me/kv/after_restart`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}` },
    body: 'still here',
  });
  expect(again.status).toBe(204);
  expect((await writerPresence(base)).kv.after_restart).toBe('still here');
}
