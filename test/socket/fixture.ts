import { afterAll, afterEach, beforeAll } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { KV_MAX_KEYS, KV_VALUE_MAX_CHARS } from '../../src/kv/rules.js';
import type { KvState } from '../../src/presence/model.js';
import { deltaOf } from '../../src/presence/registry/kv-delta.js';
import { customStatusActivity, spotifyActivity } from '../../src/simulator/activities.js';
import type { DiscordSimulator, MemberInput } from '../../src/simulator/index.js';
import { CLOSE_GRACE_MS } from '../../src/socket/open-socket.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { type Frame, terminateAll } from './client.js';

export const GUILD_A = '100000000000000001';
export const GUILD_B = '100000000000000002';

export const ALICE = '80351110224678912';
export const BOB = '80351110224678913';
/** Offline: monitored all the same. */
export const CAROL = '80351110224678914';
/** In both guilds: every presence change arrives twice, once per guild. */
export const DAVE = '80351110224678915';
/** Changed last in a test: once its update arrives, everything before it has arrived too. */
export const ERIN = '80351110224678916';
/** Shares no guild with the bot. */
export const NOBODY = '123456789012345678';

export const FIXTURE_USERS = [ALICE, BOB, CAROL, DAVE, ERIN];

/** A presence as it travels in frames. */
export interface PresenceData {
  user_id?: string;
  discord_user: { id: string; username: string };
  discord_status: string;
  custom_status: { text: string | null } | null;
  now_playing: { song: string; track_id: string | null } | null;
  kv: Record<string, string>;
  [field: string]: unknown;
}

const member = (id: string, username: string, status?: 'online' | 'idle' | 'dnd'): MemberInput => ({
  user: { id, username },
  ...(status ? { presence: { status, activities: [] } } : {}),
});

/** Two guilds; Alice online, Bob idle, Carol offline, Dave (both guilds) dnd, Erin online. */
export function seed(sim: DiscordSimulator): void {
  sim.createGuild({
    id: GUILD_A,
    name: 'Guild A',
    members: [
      member(ALICE, 'alice', 'online'),
      member(BOB, 'bob', 'idle'),
      member(CAROL, 'carol'),
      member(DAVE, 'dave', 'dnd'),
      member(ERIN, 'erin', 'online'),
    ],
  });
  sim.createGuild({ id: GUILD_B, name: 'Guild B', members: [member(DAVE, 'dave', 'dnd')] });
}

/**
 * Waits until the app monitors every fixture user (and has fetched their profiles), and, unless
 * `listed` is false, until every guild's listing has arrived. A service started again within Discord's
 * 30 s between listings of a guild waits that long for it: a test of a restart asks for the users alone.
 */
export async function fixtureReady(h: Harness, { listed = true }: { listed?: boolean } = {}): Promise<void> {
  await h.simulator.waitForReady();
  await eventually(() => {
    for (const id of FIXTURE_USERS) {
      if (!h.app.registry.isMonitored(id)) throw new Error(`${id} not monitored yet`);
    }
    if (h.simulator.requestCount('GET /users/:id') < FIXTURE_USERS.length) {
      throw new Error('profiles not fetched yet');
    }
    // Until then a single user's event stream of a user not monitored waits rather than answer 404.
    if (listed && !h.app.sse.knowsEveryMember) throw new Error('not every guild listed yet');
  });
}

/**
 * The seeded world for the tests of the describe block this is called in: started, with every fixture user
 * monitored, before them; after each, every socket cut and gone from the server too, so what a test reads
 * of the server's sockets is its own; closed after them all.
 */
export function seededHarness(options: Parameters<typeof startHarness>[0] = {}): () => Harness {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await startHarness({ setup: seed, ...options });
    await fixtureReady(h);
  });
  afterEach(async () => {
    await terminateAll();
    // A socket closed 4009 while its commands waited is read no more, so its client's leaving goes
    // unnoticed: it is cut once the close grace has run out.
    await eventually(() => {
      if (h && h.app.sockets.socketCount > 0) throw new Error(`${h.app.sockets.socketCount} sockets left`);
    }, CLOSE_GRACE_MS + 5_000);
  });
  afterAll(async () => {
    await terminateAll();
    await h?.close();
  });
  return () => {
    if (!h) throw new Error('the service has not started');
    return h;
  };
}

let tick = 0;

/** A real change of the user's presence (a new custom status text); returns the text. */
export function bump(
  h: Harness,
  userId: string,
  status: 'online' | 'idle' | 'dnd' = 'online',
  options: { jitterMs?: number } = {},
): string {
  const text = `tick ${++tick}`;
  h.simulator.setPresence(
    userId,
    { status, activities: [customStatusActivity({ text, createdAt: 1_700_000_000_000 })] },
    options,
  );
  return text;
}

/**
 * A new Spotify track (timestamps now), so per-guild copies can be shifted in time; `track` plays that one
 * (again) instead of a new one.
 */
export function playTrack(
  h: Harness,
  userId: string,
  options: { jitterMs?: number; track?: { song: string; trackId: string } } = {},
): string {
  const { track, ...presenceOptions } = options;
  const { song, trackId } = track ?? {
    song: `Song ${++tick}`,
    trackId: `T${String(tick).padStart(21, '0')}`,
  };
  const start = Date.now();
  h.simulator.setPresence(
    userId,
    {
      status: 'online',
      activities: [
        spotifyActivity({
          song,
          artists: ['Artist'],
          album: 'Album',
          imageId: 'ab67616d0000b273aaaaaaaaaaaaaaaaaaaaaaaa',
          trackId,
          start,
          end: start + 200_000,
          userId,
        }),
      ],
    },
    presenceOptions,
  );
  return song;
}

/** The presence GET /v1/users/:id answers, or the error envelope's status. */
export async function restPresence(h: Harness, userId: string): Promise<PresenceData> {
  const response = await fetch(`${h.base}/v1/users/${userId}`);
  const body = (await response.json()) as { success: boolean; data: PresenceData };
  if (!body.success) throw new Error(`GET /v1/users/${userId}: ${response.status}`);
  return body.data;
}

/** A live API key for the user, as `?apikey` would give. */
export async function apiKeyFor(h: Harness, userId: string): Promise<string> {
  const key = generateApiKey();
  await h.app.store.apiKeys.replaceKey(userId, hashApiKey(key), Date.now());
  return key;
}

export const isUpdate = (frame: Frame): boolean => frame.op === 0 && frame.t === 'PRESENCE_UPDATE';
export const updateFor =
  (userId: string) =>
  (frame: Frame): boolean =>
    isUpdate(frame) && (frame.d as PresenceData).user_id === userId;
export const presenceOf = (frame: Frame): PresenceData => frame.d as PresenceData;
/** The user ids of the PRESENCE_UPDATEs among frames. */
export const updatedUsers = (frames: Frame[]): string[] =>
  frames.filter(isUpdate).map((frame) => presenceOf(frame).user_id ?? '?');

/** Characters beyond ASCII of every UTF-8 length, U+2028 among them (valid in JSON, not in old JS). */
const WIDE = [...'😀🎶🏳🦀🌈💾🧪🐙üéßøñçåæ漢字仮名한글ДЖЯ\u2028\u2029€™…«»¿¡ʕ•ᴥ'];
/** ASCII that JSON escapes, and text that means something to a page. */
const NARROW = [
  ...'"\\\n\t\u0001</script>&<>\'',
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ',
];

/** A small, seeded PRNG (mulberry32): the same KV for the same salt, and text that deflates no better than text. */
function random(salt: string): () => number {
  let state = [...salt].reduce((hash, char) => Math.imul(hash ^ (char.codePointAt(0) ?? 0), 0x9e3779b1), 1);
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * A KV of at least `bytes` bytes of JSON, in values each at the value rules' limit: characters beyond ASCII
 * alternating with ASCII that JSON escapes, drawn at random (seeded by `salt`, which also names the keys).
 */
export function largeKv(bytes: number, salt: string): Record<string, string> {
  const next = random(salt);
  const kv: Record<string, string> = {};
  let size = 2;
  for (let i = 0; size < bytes; i++) {
    const unit = i % 2 === 0 ? WIDE : NARROW;
    const value = Array.from(
      { length: KV_VALUE_MAX_CHARS },
      () => unit[Math.floor(next() * unit.length)],
    ).join('');
    const key = `${salt}_${i}`;
    kv[key] = value;
    size += Buffer.byteLength(`${JSON.stringify(key)}:${JSON.stringify(value)},`);
  }
  return kv;
}

/** The change that makes the stored KV `kv`, written straight into the store. */
async function writeWhole(h: Harness, userId: string, kv: Record<string, string>) {
  const { kv: before } = await h.app.store.kv.getKv(userId);
  const change = {
    set: new Map(Object.entries(kv)),
    delete: Object.keys(before).filter((key) => !Object.hasOwn(kv, key)),
  };
  const limits = { maxKeys: KV_MAX_KEYS, maxBytes: Number.MAX_SAFE_INTEGER };
  const written = await h.app.store.kv.writeKv(userId, change, limits);
  if ('refused' in written)
    throw new Error(`the store refused the KV: ${written.wouldHave} ${written.refused}`);
  return { change, written };
}

/**
 * Writes the user's whole KV straight into the store, as a write that passed the API's rules would (no
 * KV_MAX_BYTES: a store may hold users past it), replacing what was there.
 */
export async function writeStoredKv(
  h: Harness,
  userId: string,
  kv: Record<string, string>,
): Promise<KvState> {
  await writeWhole(h, userId, kv);
  return h.app.store.kv.getKv(userId);
}

/** Writes the KV into the store and announces it as an accepted write does: subscribers see the change. */
export async function changeKv(h: Harness, userId: string, kv: Record<string, string>): Promise<void> {
  const { change, written } = await writeWhole(h, userId, kv);
  if (written.changed) {
    await h.app.bus.publish('kv.changed', { userId, revision: written.revision, ...deltaOf(change) });
  }
}

/**
 * The user joins Guild A, online, with this KV already stored: the app loads it as it does for anyone who
 * becomes monitored. Resolves once the presence holds it.
 */
export async function joinWithKv(
  h: Harness,
  user: MemberInput['user'],
  kv: Record<string, string>,
): Promise<void> {
  const { revision } = await writeStoredKv(h, user.id, kv);
  h.simulator.addMember(GUILD_A, { user, presence: { status: 'online', activities: [] } });
  await eventually(() => {
    if (h.app.registry.kvRevisionOf(user.id) !== revision) throw new Error(`${user.id}: KV not loaded yet`);
  }, 30_000);
}
