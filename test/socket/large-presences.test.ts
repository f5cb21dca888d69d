import { beforeAll, describe, expect, it } from 'vitest';
import { FRAGMENT_AT_BYTES } from '../../src/socket/frames.js';
import { INIT_STATE_CHUNK_BYTES } from '../../src/socket/init-state.js';
import { STREAM_HIGH_WATER_BYTES } from '../../src/socket/outbound.js';
import { eventually } from '../support/eventually.js';
import type { Harness } from '../support/harness.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { type Frame, SocketClient } from './client.js';
import {
  ALICE,
  BOB,
  bump,
  CAROL,
  changeKv,
  ERIN,
  joinWithKv,
  largeKv,
  NOBODY,
  type PresenceData,
  presenceOf,
  restPresence,
  seededHarness,
  updatedUsers,
  updateFor,
} from './fixture.js';

/**
 * Presences with a KV of megabytes (emoji and escaped ASCII), as a store may hold them whatever the KV
 * limit: the app loads them when their users join, and every socket gets them whole, in one message, as
 * REST has them; a socket that stops reading holds a bounded amount of memory and is let go.
 */

const ZLIB = '?compression=zlib_json';
const KINDS = [
  ['text', ''],
  ['zlib', ZLIB],
] as const;
/** About 2 MB of KV each: enough of them that a socket which stops reading outlasts the kernel's buffers. */
const LARGE = Array.from({ length: 10 }, (_, i) => `${90000000000000100n + BigInt(i)}`);
const LARGE_KV_BYTES = 2_000_000;
/** A presence past the fragment size, still held as text: emoji escaped. */
const MEDIUM = '90000000000000200';

/** The large users join with their KVs already stored. */
async function joinLarge(h: Harness): Promise<void> {
  for (const [i, id] of LARGE.entries())
    await joinWithKv(h, { id, username: `large${i}` }, largeKv(LARGE_KV_BYTES, `l${i}`));
  await joinWithKv(h, { id: MEDIUM, username: 'medium' }, { note: '😀'.repeat(2_000) });
}

/** What `GET /v1/users/:id` answers for each id, by id. */
async function restMap(h: Harness, ids: readonly string[]): Promise<Record<string, PresenceData>> {
  return Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await restPresence(h, id)])));
}

/** The sum of the sockets' unsent bytes, as an operator reads it. */
async function bufferedBytes(h: Harness): Promise<number> {
  return sampleValue(await scrape(h.base), 'presently_socket_buffered_bytes');
}

/** Takes the INIT_STATE an op 2 earns, checking it came as exactly one message. */
async function initState(client: SocketClient, d: Record<string, unknown>): Promise<Frame> {
  const before = client.raw.length;
  const frame = await client.subscribe(d);
  expect(client.raw.length).toBe(before + 1);
  return frame;
}

describe('large presences on sockets', () => {
  // Updates of the same large user one after the other are what these tests follow: none is held back.
  const service = seededHarness({ socket: { pacedBytesPerSecond: 0 } });

  beforeAll(async () => {
    const h = service();
    await joinLarge(h);
    expect(h.app.registry.get(LARGE[0] as string)?.body.length).toBeGreaterThan(LARGE_KV_BYTES);
    expect(h.app.registry.get(MEDIUM)?.body.length).toBeGreaterThan(FRAGMENT_AT_BYTES);
  }, 60_000);

  it.each(KINDS)(
    'subscribe_to_id (%s): one INIT_STATE message, the presence REST answers',
    async (_kind, query) => {
      const h = service();
      for (const id of [LARGE[0] as string, MEDIUM]) {
        const client = await SocketClient.connect(h.base, query);
        const init = await initState(client, { subscribe_to_id: id });
        expect(init).toMatchObject({ op: 0, seq: 1, t: 'INIT_STATE' });
        expect(init.d).toEqual(await restPresence(h, id));
      }
    },
  );

  it.each(KINDS)(
    'subscribe_to_ids of several large users (%s): one INIT_STATE message, the map REST answers',
    async (_kind, query) => {
      const h = service();
      const client = await SocketClient.connect(h.base, query);
      const ids = [LARGE[1] as string, ALICE, NOBODY, MEDIUM, LARGE[2] as string, LARGE[3] as string];
      const init = await initState(client, { subscribe_to_ids: ids });
      const monitored = ids.filter((id) => id !== NOBODY);
      expect(Object.keys(init.d as object)).toEqual(monitored);
      expect(init.d).toEqual(await restMap(h, monitored));
    },
  );

  it.each(KINDS)(
    'subscribe_to_all (%s): one INIT_STATE message with everyone, each as REST answers',
    async (_kind, query) => {
      const h = service();
      const client = await SocketClient.connect(h.base, query);
      await client.subscribe({ subscribe_to_id: CAROL });
      const init = await initState(client, { subscribe_to_all: true });
      expect(init.seq).toBe(2);
      const everyone = [...h.app.registry.snapshots()].map(([id]) => id);
      expect(Object.keys(init.d as object).sort()).toEqual([...everyone].sort());
      expect(init.d).toEqual(await restMap(h, everyone));
    },
  );

  it('50 sockets subscribed to a large user, text and zlib, each get one PRESENCE_UPDATE after a KV change, as REST has it', async () => {
    const h = service();
    const user = LARGE[4] as string;
    const clients = await Promise.all(
      Array.from({ length: 50 }, (_, i) => SocketClient.connect(h.base, i % 2 === 0 ? '' : ZLIB)),
    );
    await Promise.all(clients.map((client) => client.subscribe({ subscribe_to_ids: [user, ERIN] })));

    const kv = largeKv(LARGE_KV_BYTES, 'changed');
    await changeKv(h, user, kv);
    const expected = await restPresence(h, user);
    expect(expected.kv).toEqual(kv);
    bump(h, ERIN);
    for (const client of clients) {
      const frames = await client.until(updateFor(ERIN), 20_000);
      expect(updatedUsers(frames)).toEqual([user, ERIN]);
      const { user_id, ...presence } = presenceOf(frames[0] as Frame);
      expect(user_id).toBe(user);
      expect(presence).toEqual(expected);
      expect(frames.map((frame) => frame.seq)).toEqual([2, 3]);
    }
  }, 60_000);

  it.each(KINDS)(
    'updates that come while an INIT_STATE is being written follow it, one per user, as the presence is then; seqs stay in order (%s)',
    async (kind, query) => {
      const h = service();
      const client = await SocketClient.connect(h.base, query);
      await client.subscribe({ subscribe_to_id: ALICE });
      client.tcp.pause();
      client.send({ op: 2, d: { subscribe_to_all: true } });
      // The stream waits for the socket to drain: it is under way, and stays so while the client does not read.
      await eventually(async () =>
        expect(await bufferedBytes(h)).toBeGreaterThanOrEqual(STREAM_HIGH_WATER_BYTES),
      );

      bump(h, ALICE, 'dnd');
      const text = bump(h, ALICE, 'idle');
      const bobText = bump(h, BOB);
      const kv = largeKv(LARGE_KV_BYTES, `meanwhile_${kind}`);
      await changeKv(h, LARGE[5] as string, kv);
      await eventually(async () => {
        expect((await restPresence(h, ALICE)).custom_status?.text).toBe(text);
        expect((await restPresence(h, BOB)).custom_status?.text).toBe(bobText);
      });
      expect(client.frames).toHaveLength(2); // Hello and the first INIT_STATE: nothing read since

      client.tcp.resume();
      const erinText = bump(h, ERIN);
      const frames = await client.until(
        (frame) => updateFor(ERIN)(frame) && presenceOf(frame).custom_status?.text === erinText,
        20_000,
      );
      expect(frames[0]?.t).toBe('INIT_STATE');
      expect(frames.map((frame) => frame.seq)).toEqual(frames.map((_, i) => i + 2));
      // After the INIT_STATE, each user who changed meanwhile once, as they are now; then Erin's change.
      const updates = frames.slice(1, -1);
      expect(updatedUsers(updates).sort()).toEqual([ALICE, BOB, LARGE[5] as string].sort());
      const now = await restMap(h, [ALICE, BOB, LARGE[5] as string]);
      for (const update of updates) {
        const { user_id, ...presence } = presenceOf(update);
        expect(presence).toEqual(now[user_id as string]);
      }
      expect(now[LARGE[5] as string]?.kv).toEqual(kv);
    },
    60_000,
  );
});

describe('a socket that stops reading a large INIT_STATE', () => {
  const HEARTBEAT_MS = 1_000;
  const service = seededHarness({ socket: { heartbeatIntervalMs: HEARTBEAT_MS } });

  beforeAll(async () => {
    await joinLarge(service());
  }, 60_000);

  /** Whether the server has begun closing one of its sockets: a client that does not read cannot see it yet. */
  const closingOne = (h: Harness): boolean =>
    [...(h.app.sockets as unknown as { sockets: Set<{ closing: boolean }> }).sockets].some(
      (client) => client.closing,
    );

  it.each(KINDS)(
    'holds at most the high-water mark and one fragment, and is closed 4008 after 2 × the heartbeat interval (%s)',
    async (_kind, query) => {
      const h = service();
      const snapshots = [...h.app.registry.snapshots()].map(([, snapshot]) => snapshot.body.length);
      const whole = snapshots.reduce((sum, length) => sum + length, 0);
      // A fragment is a large presence's shared bytes (deflated: no larger), or a chunk of small ones, which
      // ends after the part that takes it past its size.
      const largestFragment = Math.max(...snapshots, 2 * INIT_STATE_CHUNK_BYTES);
      const bound = STREAM_HIGH_WATER_BYTES + largestFragment;
      expect(whole).toBeGreaterThan(4 * bound);

      const bystander = await SocketClient.connect(h.base);
      bystander.keepAlive(HEARTBEAT_MS / 10);
      await bystander.subscribe({ subscribe_to_id: ALICE });
      const reader = await SocketClient.connect(h.base, query);
      reader.keepAlive(HEARTBEAT_MS / 10);
      reader.tcp.pause();
      const subscribedAt = Date.now();
      reader.send({ op: 2, d: { subscribe_to_all: true } });

      // The server holds what the reader has not taken: once the stream waits for it to drain, at least the
      // high-water mark, and never more than the bound, until it gives up on the reader.
      const samples: number[] = [];
      await eventually(async () => {
        samples.push(await bufferedBytes(h));
        expect(samples.at(-1)).toBeGreaterThanOrEqual(STREAM_HIGH_WATER_BYTES);
      });
      // Sampled until the server lets the reader go.
      await eventually(async () => {
        samples.push(await bufferedBytes(h));
        if (!closingOne(h)) throw new Error('the server has not let the reader go');
      }, 10_000);
      expect(Math.max(...samples)).toBeLessThanOrEqual(bound);
      expect(Date.now() - subscribedAt).toBeGreaterThanOrEqual(2 * HEARTBEAT_MS);

      reader.tcp.resume();
      expect(await reader.closedWith(10_000)).toEqual({ code: 4008, reason: 'slow_consumer' });
      expect(reader.pending).toEqual([]); // the INIT_STATE never ended

      // Everyone else is served as ever, and what the reader held is let go.
      const text = bump(h, ALICE);
      const update = (await bystander.until(updateFor(ALICE))).at(-1) as Frame;
      expect(presenceOf(update).custom_status?.text).toBe(text);
      await eventually(async () => expect(await bufferedBytes(h)).toBe(0));
    },
  );
});

describe("a large presence's updates, paced", () => {
  /** A pause of about two seconds after each update of a 2 MB presence. */
  const service = seededHarness({ socket: { pacedBytesPerSecond: 1024 * 1024 } });
  const user = LARGE[0] as string;

  beforeAll(async () => {
    await joinWithKv(service(), { id: user, username: 'paced' }, largeKv(LARGE_KV_BYTES, 'paced'));
  }, 60_000);

  it.each(KINDS)(
    'changes within the pause after an update collapse into one update carrying the newest; REST has each at once (%s)',
    async (kind, query) => {
      const h = service();
      const client = await SocketClient.connect(h.base, query);
      await client.subscribe({ subscribe_to_ids: [user, ERIN] });
      const isUpdateWith = (salt: string) => (frame: Frame) =>
        updateFor(user)(frame) && Object.keys(presenceOf(frame).kv)[0]?.startsWith(salt) === true;

      const first = largeKv(LARGE_KV_BYTES, `${kind}_first`);
      await changeKv(h, user, first);
      // Sent at once, or at the end of a pause an earlier update began: either way a pause begins with it.
      await client.until(isUpdateWith(`${kind}_first`), 20_000);

      const second = largeKv(LARGE_KV_BYTES, `${kind}_second`);
      const third = largeKv(LARGE_KV_BYTES, `${kind}_third`);
      await changeKv(h, user, second);
      expect((await restPresence(h, user)).kv).toEqual(second);
      await changeKv(h, user, third);
      expect((await restPresence(h, user)).kv).toEqual(third);

      const frames = await client.until(updateFor(user), 20_000);
      expect(updatedUsers(frames)).toEqual([user]);
      expect(presenceOf(frames[0] as Frame).kv).toEqual(third);

      // Nothing else of the user was on its way: Erin's change, made now, is the next thing the socket gets.
      bump(h, ERIN);
      expect(updatedUsers(await client.until(updateFor(ERIN)))).toEqual([ERIN]);
    },
    60_000,
  );
});
