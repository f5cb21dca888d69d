import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ClusterLink, connectCluster } from '../../src/cluster/connect.js';
import { SharedPresencePublisher } from '../../src/cluster/publisher.js';
import { ReplicaSync } from '../../src/cluster/replica-sync.js';
import type { DiscordUser, RawPresence } from '../../src/presence/model.js';
import { type PresenceChange, PresenceRegistry } from '../../src/presence/registry/registry.js';
import { PresenceReplica } from '../../src/presence/registry/replica.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { eventually } from '../support/eventually.js';
import { KV_LIMITS } from '../support/kv.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

/**
 * The shared presences of a scale-out deployment against the real Redis: two ingest nodes (a registry and
 * a publisher each, as for shards 0 and 1) and an API node's replica, all in this process.
 */

const hasRedis = await redisAvailable('shared presences (scale-out)');
const logger = pino({ level: 'silent' });
const GUILD_ON_0 = '100000000000000001';
const GUILD_ON_1 = '100000000000000002';
const ALICE: DiscordUser = {
  id: '80351110224678912',
  username: 'alice',
  global_name: 'Alice',
  avatar: null,
  discriminator: '0',
};
const BOB: DiscordUser = {
  id: '80351110224678913',
  username: 'bob',
  global_name: null,
  avatar: null,
  discriminator: '0',
};

interface IngestNode {
  registry: PresenceRegistry;
  publisher: SharedPresencePublisher;
  published: PresenceChange[];
  released: string[];
  link: ClusterLink;
}

let prefix = '';
const links: ClusterLink[] = [];
const closers: Array<() => Promise<void> | void> = [];

function link(name = 'presently-test'): ClusterLink {
  const created = connectCluster(REDIS_TEST_URL, prefix, logger, name);
  links.push(created);
  return created;
}

/** Liveness short enough that a test sees a crashed node expire. */
const LIVENESS = { ttlMs: 600, sweepMs: 100 };

async function ingestNode(node: number, name?: string): Promise<IngestNode> {
  const l = link(name);
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: { applicationIds: new Set(), names: new Set() },
  });
  const publisher = new SharedPresencePublisher({
    registry,
    presences: l.presences,
    kv: openRedisStore(l.redis, prefix).kv,
    bus: l.bus,
    node,
    logger,
    liveness: LIVENESS,
  });
  const published: PresenceChange[] = [];
  publisher.onPublished((change) => published.push(change));
  const released: string[] = [];
  publisher.onReleased((userId) => released.push(userId));
  await publisher.start();
  await l.bus.ready();
  closers.push(() => publisher.close());
  return { registry, publisher, published, released, link: l };
}

async function apiNode(): Promise<{
  replica: PresenceReplica;
  sync: ReplicaSync;
  changes: PresenceChange[];
}> {
  const l = link();
  const replica = new PresenceReplica();
  const changes: PresenceChange[] = [];
  replica.onChange((change) => changes.push(change));
  const sync = new ReplicaSync({ replica, presences: l.presences, bus: l.bus, logger });
  await sync.start();
  closers.push(() => sync.close());
  return { replica, sync, changes };
}

function listening(song: string, start: number): RawPresence {
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [
      spotifyActivity({
        song,
        artists: ['Artist'],
        album: 'Album',
        imageId: 'ab67616d0000b273',
        trackId: `track-${song}`,
        start,
        end: start + 200_000,
        createdAt: start,
      }),
    ],
  };
}

/** A KV of `kib` KiB or so: values of `text` repeated, every key different. */
function kvOf(kib: number, text: string): Record<string, string> {
  const kv: Record<string, string> = {};
  for (let i = 0; Buffer.byteLength(JSON.stringify(kv)) < kib * 1024; i++)
    kv[`key${i}`] = `${i} ${text.repeat(40)}`;
  return kv;
}

/** Every message published on the presence channel from now on, as received by a plain subscriber. */
async function recordPresenceMessages(): Promise<string[]> {
  const subscriber = new Redis(REDIS_TEST_URL);
  const messages: string[] = [];
  subscriber.on('message', (_channel: string, message: string) => messages.push(message));
  await subscriber.subscribe(`${prefix}bus:presence.changed`);
  closers.push(() => void subscriber.disconnect());
  return messages;
}

const online: RawPresence = { status: 'online', client_status: { desktop: 'online' }, activities: [] };
const idle: RawPresence = { status: 'idle', client_status: { desktop: 'idle' }, activities: [] };

describe.skipIf(!hasRedis)('shared presences across nodes (Redis)', () => {
  beforeAll(() => {
    prefix = uniquePrefix();
  });

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    for (const l of links.splice(0)) await l.close();
    // Not a node's connection: a test may have cut those.
    const cleaner = new Redis(REDIS_TEST_URL);
    await dropPrefix(cleaner, prefix);
    cleaner.disconnect();
    prefix = uniquePrefix();
  });

  afterAll(async () => {
    for (const l of links.splice(0)) await l.close();
  });

  it('a user seen on two nodes is one presence, published once per real change', async () => {
    const zero = await ingestNode(0);
    const one = await ingestNode(1);
    const api = await apiNode();

    zero.registry.memberSeen(GUILD_ON_0, ALICE, listening('First', 1_000_000));
    // The other shard's copy of the same update: its start time a little off, as Discord sends it.
    one.registry.memberSeen(GUILD_ON_1, ALICE, listening('First', 1_000_400));
    await eventually(() => expect(api.replica.get(ALICE.id)?.presence.spotify?.song).toBe('First'));

    zero.registry.memberSeen(GUILD_ON_0, ALICE, listening('Second', 1_200_000));
    one.registry.memberSeen(GUILD_ON_1, ALICE, listening('Second', 1_200_300));
    await eventually(() => expect(api.replica.get(ALICE.id)?.presence.spotify?.song).toBe('Second'));
    await zero.publisher.settled();
    // A change of another user published by node 1 after its copies (and after node 0's writes): Redis
    // passes it on after anything those wrote, so once the API node has it, it has whatever they sent.
    one.registry.memberSeen(GUILD_ON_1, BOB, online);
    await eventually(() => expect(api.replica.get(BOB.id)).toBeDefined());
    await one.publisher.settled();

    const aliceChanges = api.changes.filter((change) => change.userId === ALICE.id);
    expect(aliceChanges.map((change) => change.kind)).toEqual(['monitored', 'updated']);
    expect([...api.replica.snapshots()].map(([id]) => id).sort()).toEqual([ALICE.id, BOB.id].sort());
    // History hears the owner (the lowest node) only; the other is told to let go of the user.
    expect(zero.published).toHaveLength(2);
    expect(one.published.map((change) => change.userId)).toEqual([BOB.id]);
    expect(one.released).toContain(ALICE.id);
    expect(zero.released).toEqual([]);
    expect(api.replica.get(ALICE.id)?.presence.spotify?.timestamps.start).toBe(1_200_000);
  });

  it('when the owner stops seeing the user the other node takes over; when both do, the user is gone', async () => {
    const zero = await ingestNode(0);
    const one = await ingestNode(1);
    const api = await apiNode();

    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    await eventually(() => expect(api.replica.get(ALICE.id)).toBeDefined());
    one.registry.memberSeen(GUILD_ON_1, ALICE, online);
    // Node 1 sees a change node 0 missed (a member update of its guild, say): not the owner, not published.
    one.registry.memberSeen(GUILD_ON_1, { ...ALICE, global_name: 'Alice on one' }, idle);
    await one.publisher.settled();
    expect(api.replica.get(ALICE.id)?.presence.discord_status).toBe('online');

    zero.registry.memberRemoved(GUILD_ON_0, ALICE.id);
    await eventually(() => expect(api.replica.get(ALICE.id)?.presence.discord_status).toBe('idle'));
    expect(api.replica.get(ALICE.id)?.presence.discord_user.global_name).toBe('Alice on one');
    expect(one.published.map((change) => change.kind)).toEqual(['monitored']);

    one.registry.memberRemoved(GUILD_ON_1, ALICE.id);
    await eventually(() => expect(api.replica.get(ALICE.id)).toBeUndefined());
    expect(api.changes.at(-1)?.kind).toBe('unmonitored');
    expect(one.published.at(-1)?.kind).toBe('unmonitored');
  });

  it('a node that starts later reads everything, then follows the changes', async () => {
    const zero = await ingestNode(0);
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    zero.registry.memberSeen(GUILD_ON_0, BOB, idle);
    await zero.publisher.settled();

    const api = await apiNode();
    expect(api.replica.get(ALICE.id)?.presence.discord_status).toBe('online');
    expect(api.replica.get(BOB.id)?.presence.discord_status).toBe('idle');

    zero.registry.memberSeen(GUILD_ON_0, BOB, online);
    await eventually(() => expect(api.replica.get(BOB.id)?.presence.discord_status).toBe('online'));
  });

  it('a KV change is shown by the replica once the owner published it, and waitForKv tells when', async () => {
    const zero = await ingestNode(0);
    const api = await apiNode();
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    await eventually(() => expect(api.replica.get(ALICE.id)).toBeDefined());

    const shown = api.sync.waitForKv(ALICE.id, 4, 5_000);
    zero.registry.kvLoaded(ALICE.id, { city: 'Lyon' }, 4);
    expect(await shown).toBe(true);
    expect(api.replica.get(ALICE.id)?.presence.kv).toEqual({ city: 'Lyon' });
    expect(await api.sync.waitForKv(BOB.id, 1, 5_000)).toBe(true);
    expect(await api.sync.waitForKv(ALICE.id, 5, 50)).toBe(false);
  });

  it('a large KV travels apart: presence changes publish without it, and the replica serves the owner’s bytes', async () => {
    const zero = await ingestNode(0);
    const api = await apiNode();
    const published = await recordPresenceMessages();
    // Large: held as UTF-8 bytes. Medium: held as escaped ASCII text. Both go apart from the presence.
    const large = kvOf(64, '🎧 "quoted" \\ back\u0001slash é');
    const medium = kvOf(4, 'é');
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    zero.registry.memberSeen(GUILD_ON_0, BOB, online);
    zero.registry.kvLoaded(ALICE.id, large, 1);
    zero.registry.kvLoaded(BOB.id, medium, 1);
    const sameBytes = () => {
      for (const user of [ALICE, BOB]) {
        const owner = zero.registry.get(user.id)?.body;
        const served = api.replica.get(user.id)?.body;
        expect(served && owner && Buffer.from(served).equals(Buffer.from(owner)), user.username).toBe(true);
      }
    };
    await eventually(sameBytes);
    expect(api.replica.get(ALICE.id)?.presence.kv).toEqual(large);
    expect(api.replica.get(BOB.id)?.presence.kv).toEqual(medium);

    published.splice(0);
    const start = Date.now();
    zero.registry.memberSeen(GUILD_ON_0, ALICE, idle);
    zero.registry.memberSeen(GUILD_ON_0, ALICE, listening('Apart', start));
    zero.registry.memberSeen(GUILD_ON_0, BOB, idle);
    await eventually(() => {
      expect(api.replica.get(ALICE.id)?.presence.spotify?.song).toBe('Apart');
      expect(api.replica.get(BOB.id)?.presence.discord_status).toBe('idle');
    });
    sameBytes();
    expect(published.length).toBeGreaterThanOrEqual(3);
    for (const message of published) {
      expect(message.length).toBeLessThan(4 * 1024);
      expect(message).not.toContain('quoted');
    }

    // A KV write reaches the replica once, and the presence changes after it go without it again.
    const rewritten = kvOf(64, 'rewritten ✓');
    zero.registry.kvLoaded(ALICE.id, rewritten, 2);
    await eventually(() => expect(api.replica.kvRevisionOf(ALICE.id)).toBe(2));
    sameBytes();
    published.splice(0);
    zero.registry.memberSeen(GUILD_ON_0, ALICE, idle);
    await eventually(() => expect(api.replica.get(ALICE.id)?.presence.discord_status).toBe('idle'));
    sameBytes();
    expect(api.replica.get(ALICE.id)?.presence.kv).toEqual(rewritten);
    for (const message of published) expect(message.length).toBeLessThan(4 * 1024);

    // An API node started now reads the KVs apart with everything else, and serves the same bytes.
    const later = await apiNode();
    for (const user of [ALICE, BOB]) {
      const owner = zero.registry.get(user.id)?.body as string | Buffer;
      expect(
        Buffer.from(later.replica.get(user.id)?.body as string | Buffer).equals(Buffer.from(owner)),
      ).toBe(true);
    }
  });

  it('after a restart, a node leaves the users it had that are gone once its guilds are loaded', async () => {
    const before = await ingestNode(0);
    before.registry.memberSeen(GUILD_ON_0, ALICE, online);
    before.registry.memberSeen(GUILD_ON_0, BOB, online);
    await before.publisher.settled();
    await before.publisher.close();

    const api = await apiNode();
    expect(api.replica.size).toBe(2);
    const after = await ingestNode(0);
    after.registry.memberSeen(GUILD_ON_0, ALICE, idle);
    // Not yet loaded in full: Bob may still be listed.
    await after.publisher.settled();
    expect(api.replica.get(BOB.id)).toBeDefined();

    await after.publisher.markSynced();
    await eventually(() => expect(api.replica.get(BOB.id)).toBeUndefined());
    expect(api.replica.get(ALICE.id)?.presence.discord_status).toBe('idle');
  });

  it('marked synced after a listing, a node publishes its pending members as they are rendered, not all at once', async () => {
    const zero = await ingestNode(0);
    const api = await apiNode();
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    zero.registry.memberListed(GUILD_ON_0, BOB, idle);
    await zero.publisher.markSynced();
    // The resync renders nobody: Bob waits for the pending renderer, unpublished.
    expect(zero.registry.pendingCount).toBe(1);
    expect(zero.published.map((change) => change.userId)).toEqual([ALICE.id]);
    expect(api.replica.get(ALICE.id)).toBeDefined();
    expect(api.replica.get(BOB.id)).toBeUndefined();

    zero.registry.renderPending(10);
    await eventually(() => expect(api.replica.get(BOB.id)?.presence.discord_status).toBe('idle'));
    expect(zero.published.map((change) => change.userId)).toEqual([ALICE.id, BOB.id]);
  });

  it('an API node that lost its Redis connection reads the state again and serves what changed meanwhile', async () => {
    const zero = await ingestNode(0);
    const name = `presently-test-api-${prefix.slice(-13, -1)}`;
    const apiLink = link(name);
    const replica = new PresenceReplica();
    const sync = new ReplicaSync({ replica, presences: apiLink.presences, bus: apiLink.bus, logger });
    await sync.start();
    closers.push(() => sync.close());
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    await eventually(() => expect(replica.get(ALICE.id)).toBeDefined());

    // Cut every connection of this API node: what is published meanwhile never reaches it.
    const clients = String(await zero.link.redis.client('LIST')).split('\n');
    const ids = clients
      .filter((line) => line.includes(` name=${name} `))
      .map((line) => /^id=(\d+)/.exec(line)?.[1]);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    for (const id of ids) await zero.link.redis.client('KILL', 'ID', id as string);
    zero.registry.memberSeen(GUILD_ON_0, ALICE, idle);
    zero.registry.memberSeen(GUILD_ON_0, BOB, online);
    await eventually(() => {
      expect(replica.get(ALICE.id)?.presence.discord_status).toBe('idle');
      expect(replica.get(BOB.id)).toBeDefined();
    });
  });

  it('an API node whose full read fails is not synced, and tries again until a read succeeds', async () => {
    const zero = await ingestNode(0);
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    const l = link();
    let failures = 1;
    const presences = {
      list: () => {
        if (failures-- > 0) throw new Error('BUSY Redis is busy running a script');
        return l.presences.list();
      },
      kvJsons: l.presences.kvJsons.bind(l.presences),
      read: l.presences.read.bind(l.presences),
    };
    const replica = new PresenceReplica();
    const sync = new ReplicaSync({ replica, presences, bus: l.bus, logger, retryMs: 50 });
    closers.push(() => sync.close());
    await sync.start();
    expect(sync.synced).toBe(false);
    await eventually(() => {
      expect(sync.synced).toBe(true);
      expect(replica.get(ALICE.id)).toBeDefined();
    });
  });

  /** Cuts every Redis connection named `name`: the process is cut off without a word. */
  async function cut(via: ClusterLink, name: string): Promise<void> {
    const clients = String(await via.redis.client('LIST')).split('\n');
    for (const line of clients.filter((entry) => entry.includes(` name=${name} `))) {
      await via.redis.client('KILL', 'ID', /^id=(\d+)/.exec(line)?.[1] as string);
    }
  }

  it('a crashed owner owns nothing once its liveness expires: the other node publishes, its users are left', async () => {
    const zero = await ingestNode(0);
    const one = await ingestNode(1);
    const api = await apiNode();
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    zero.registry.memberSeen(GUILD_ON_0, BOB, online);
    one.registry.memberSeen(GUILD_ON_1, ALICE, online);
    await eventually(() => expect(api.replica.size).toBe(2));

    // Node 0 dies: no leave, no release; its renewals stop.
    const dead = zero.publisher as unknown as { timers: NodeJS.Timeout[] };
    for (const timer of dead.timers) clearInterval(timer);
    zero.link.redis.disconnect();
    zero.link.bus.close();

    one.registry.memberSeen(GUILD_ON_1, ALICE, idle);
    await eventually(() => expect(api.replica.get(ALICE.id)?.presence.discord_status).toBe('idle'));
    // Bob was seen by node 0 only: the sweep leaves him in its place.
    await eventually(() => expect(api.replica.get(BOB.id)).toBeUndefined());
  });

  it('refuses a second live process with the same node number', async () => {
    await ingestNode(3);
    const l = link();
    const twin = new SharedPresencePublisher({
      registry: new PresenceRegistry({
        cdnUrl: 'https://cdn.discordapp.com',
        youtubeMusic: { applicationIds: new Set(), names: new Set() },
      }),
      presences: l.presences,
      kv: openRedisStore(l.redis, prefix).kv,
      bus: l.bus,
      node: 3,
      logger,
      liveness: LIVENESS,
    });
    await expect(twin.start()).rejects.toThrow(/ingest node 3 is run by another live process/);
  });

  it('after missing a KV change while cut off, an ingest node reads the KV back before publishing again', async () => {
    const name = `presently-test-ingest-${prefix.slice(-13, -1)}`;
    const zero = await ingestNode(0, name);
    const api = await apiNode();
    const store = openRedisStore(zero.link.redis, prefix);
    const bobs = await store.kv.writeKv(BOB.id, { set: new Map([['own', 'value']]), delete: [] }, KV_LIMITS);
    if ('refused' in bobs || !bobs.changed) throw new Error('not written');
    zero.registry.memberSeen(GUILD_ON_0, ALICE, online);
    zero.registry.memberSeen(GUILD_ON_0, BOB, online);
    zero.registry.kvLoaded(BOB.id, { own: 'value' }, bobs.revision);
    await eventually(() => expect(api.replica.get(ALICE.id)).toBeDefined());

    await cut(links[links.length - 1] as ClusterLink, name);
    // Written and announced while node 0 could not hear it (as from an API node).
    const written = await store.kv.writeKv(
      ALICE.id,
      { set: new Map([['city', 'Oslo']]), delete: [] },
      KV_LIMITS,
    );
    if ('refused' in written || !written.changed) throw new Error('not written');
    await links[links.length - 1]?.bus.publish('kv.changed', {
      userId: ALICE.id,
      revision: written.revision,
      set: [['city', 'Oslo']],
      delete: [],
    });

    await eventually(() => expect(api.replica.get(ALICE.id)?.presence.kv).toEqual({ city: 'Oslo' }));
    // The node's own registry has it too, though the message never reached it; the others' stay as they were.
    await eventually(() => expect(zero.registry.get(ALICE.id)?.presence.kv).toEqual({ city: 'Oslo' }));
    expect(zero.registry.get(BOB.id)?.presence.kv).toEqual({ own: 'value' });
  });
});
