import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KV_VISIBLE_TIMEOUT_MS } from '../../src/app.js';
import { NODE_TTL_MS } from '../../src/cluster/publisher.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { SocketClient } from '../socket/client.js';
import { obtainApiKey } from '../support/api-key.js';
import { type DurableStore, durableStores } from '../support/durable-stores.js';
import { eventually } from '../support/eventually.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';
import { dropPrefix, REDIS_TEST_URL, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';

/**
 * Scale-out as it is deployed: real processes (`src/main.ts`) against this machine's Redis and a
 * simulated Discord with two shards: two ingest nodes, one shard each, and two API nodes; with what lasts
 * in Redis, then in PostgreSQL.
 */

const stores = await durableStores('scale-out processes');

/** Guild ids land on a shard by `(id >> 22) % shard_count`. */
const GUILD_ON_0 = String(1000n << 22n);
const GUILD_ON_1 = String(1001n << 22n);
const ALICE = '80351110224678912'; // in both guilds
const BOB = '80351110224678913'; // shard 0 only
const CAROL = '80351110224678914'; // shard 1 only

type PresenceData = {
  discord_status: string;
  kv: Record<string, string>;
  spotify: { song: string } | null;
  observed_at: number;
  stale: boolean;
};

async function presence(node: NodeProcess, userId: string): Promise<{ status: number; data?: PresenceData }> {
  const response = await fetch(`${node.url}/v1/users/${userId}`);
  const body = (await response.json()) as { data?: PresenceData };
  return { status: response.status, ...(body.data ? { data: body.data } : {}) };
}

function updatesFor(client: SocketClient, userId: string): PresenceData[] {
  return client.frames
    .filter((frame) => frame.t === 'PRESENCE_UPDATE' && (frame.d as { user_id?: string }).user_id === userId)
    .map((frame) => frame.d as PresenceData);
}

for (const store of stores) {
  describe.skipIf(!store.available)(`scale-out: two ingest nodes, two API nodes, ${store.name}`, () =>
    scaleOut(store),
  );
}

function scaleOut(store: DurableStore): void {
  const prefix = uniquePrefix();
  const simulator = new DiscordSimulator({ shardCount: 2, heartbeatIntervalMs: 1_000 });
  const nodes: NodeProcess[] = [];
  let api: NodeProcess[] = [];
  let redis: Redis;
  let durable: Awaited<ReturnType<DurableStore['open']>>;

  const env = (role: string, extra: Record<string, string> = {}) =>
    scaleOutEnv(role, simulator, prefix, { ...durable.env, ...extra });

  beforeAll(async () => {
    redis = new Redis(REDIS_TEST_URL);
    durable = await store.open();
    await simulator.start();
    simulator.createGuild({
      id: GUILD_ON_0,
      name: 'Shard zero',
      members: [
        { user: { id: ALICE, username: 'alice' }, presence: { status: 'online' } },
        { user: { id: BOB, username: 'bob' }, presence: { status: 'online' } },
      ],
    });
    simulator.createGuild({
      id: GUILD_ON_1,
      name: 'Shard one',
      members: [
        { user: { id: ALICE, username: 'alice' }, presence: { status: 'online' } },
        { user: { id: CAROL, username: 'carol' }, presence: { status: 'online' } },
      ],
    });
    const started = await Promise.all([
      startNodeProcess('ingest-0', env('ingest', { SHARD_COUNT: '2', SHARD_IDS: '0' })),
      startNodeProcess('ingest-1', env('ingest', { SHARD_COUNT: '2', SHARD_IDS: '1' })),
      startNodeProcess('api-a', env('api')),
      startNodeProcess('api-b', env('api')),
    ]);
    nodes.push(...started);
    api = started.slice(2);
    await eventually(async () => {
      for (const node of api) {
        for (const id of [ALICE, BOB, CAROL]) expect((await presence(node, id)).status).toBe(200);
      }
    }, 15_000);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await simulator.stop();
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await durable?.drop();
  }, 30_000);

  it('a change ingested on either shard reaches sockets on both API nodes', async () => {
    const sockets = await Promise.all(api.map((node) => SocketClient.connect(node.url)));
    for (const socket of sockets) await socket.subscribe({ subscribe_to_all: true });

    simulator.setPresence(BOB, { status: 'idle' });
    simulator.setPresence(CAROL, { status: 'dnd' });
    for (const socket of sockets) {
      await eventually(() => {
        expect(updatesFor(socket, BOB).at(-1)?.discord_status).toBe('idle');
        expect(updatesFor(socket, CAROL).at(-1)?.discord_status).toBe('dnd');
      });
    }
    for (const socket of sockets) await socket.close();
  });

  it('a user in guilds on both shards is one presence, updated once per change', async () => {
    const sockets = await Promise.all(api.map((node) => SocketClient.connect(node.url)));
    for (const socket of sockets) await socket.subscribe({ subscribe_to_ids: [ALICE, BOB, CAROL] });
    const start = Date.now();
    simulator.setPresence(
      ALICE,
      {
        status: 'online',
        activities: [
          spotifyActivity({
            song: 'Both Shards',
            artists: ['Artist'],
            album: 'Album',
            imageId: 'ab67616d0000b273',
            trackId: 'both-shards',
            start,
            end: start + 200_000,
            createdAt: start,
          }),
        ],
      },
      { jitterMs: 500 },
    );
    for (const socket of sockets) {
      await eventually(() => expect(updatesFor(socket, ALICE).at(-1)?.spotify?.song).toBe('Both Shards'));
    }
    // Both shards delivered their copy; the second must not have produced another update. A change on
    // each shard after it (Bob's on 0, Carol's on 1) goes the same way, through its ingest node and Redis:
    // once both have reached a socket, so would anything either copy produced.
    simulator.setPresence(BOB, { status: 'online' });
    simulator.setPresence(CAROL, { status: 'online' });
    for (const socket of sockets) {
      await eventually(() => {
        expect(updatesFor(socket, BOB).at(-1)?.discord_status).toBe('online');
        expect(updatesFor(socket, CAROL).at(-1)?.discord_status).toBe('online');
      });
    }
    for (const socket of sockets) expect(updatesFor(socket, ALICE)).toHaveLength(1);
    for (const node of api) expect((await presence(node, ALICE)).data?.spotify?.song).toBe('Both Shards');
    for (const socket of sockets) await socket.close();
  });

  it('a KV write on one API node reaches a socket and REST on the other', async () => {
    const [writer, reader] = api as [NodeProcess, NodeProcess];
    const key = await obtainApiKey({ simulator, base: writer.url }, BOB);
    const socket = await SocketClient.connect(reader.url);
    await socket.subscribe({ subscribe_to_id: BOB });

    const response = await fetch(`${writer.url}/v1/users/${BOB}/kv/city`, {
      method: 'PUT',
      headers: { authorization: key },
      body: 'Lyon',
    });
    expect(response.status).toBe(204);
    // In the durable store: Redis, or PostgreSQL and not Redis.
    expect(await redis.exists(`${prefix}kv:{${BOB}}`)).toBe(store.inRedis ? 1 : 0);
    // Read-your-writes on the node that took the write.
    expect((await presence(writer, BOB)).data?.kv).toEqual({ city: 'Lyon' });
    await eventually(async () => {
      expect(updatesFor(socket, BOB).at(-1)?.kv).toEqual({ city: 'Lyon' });
      expect((await presence(reader, BOB)).data?.kv).toEqual({ city: 'Lyon' });
    });
    // The same write again changes nothing: nothing is published, and the write must not wait for it.
    const again = await fetch(`${writer.url}/v1/users/${BOB}/kv/city`, {
      method: 'PUT',
      headers: { authorization: key },
      body: 'Lyon',
      signal: AbortSignal.timeout(KV_VISIBLE_TIMEOUT_MS / 2),
    });
    expect(again.status).toBe(204);
    await socket.close();
  });

  it('an API node restarted mid-test serves the current state', async () => {
    const old = api[1] as NodeProcess;
    expect(await old.stop()).toBe(0);
    simulator.setPresence(CAROL, { status: 'idle' });
    const restarted = await startNodeProcess('api-b again', env('api'), { port: old.port });
    nodes.push(restarted);
    api = [api[0] as NodeProcess, restarted];
    const seen = await presence(restarted, CAROL);
    expect(seen.status).toBe(200);
    await eventually(async () =>
      expect((await presence(restarted, CAROL)).data?.discord_status).toBe('idle'),
    );
    expect((await presence(restarted, BOB)).data?.kv).toEqual({ city: 'Lyon' });
    expect((await presence(restarted, ALICE)).data?.spotify?.song).toBe('Both Shards');
  });

  it('an ingest node restarted within the resume window resumes its session: nothing identified or listed, served throughout', async () => {
    const ingest = nodes[0] as NodeProcess;
    const identifies = simulator.identifyCount;
    const resumes = simulator.resumeCount;
    const listings = simulator.memberRequests.filter((request) => 'query' in request).length;
    const bob = await presence(api[0] as NodeProcess, BOB);
    expect(await ingest.stop()).toBe(0);
    // Held alive for its restart, longer than a node's liveness lasts: no other node hands its users over.
    expect(await redis.get(`${prefix}node-alive:0`)).toBe('handed-over');
    expect(await redis.pttl(`${prefix}node-alive:0`)).toBeGreaterThan(NODE_TTL_MS);
    // Nothing is heard of shard 0 meanwhile; the API nodes keep what it published.
    for (const node of api) expect(await presence(node, BOB)).toEqual(bob);
    simulator.setPresence(BOB, { status: 'idle' });

    const restarted = await startNodeProcess(
      'ingest-0 again',
      env('ingest', { SHARD_COUNT: '2', SHARD_IDS: '0' }),
    );
    nodes[0] = restarted;
    for (const node of api) {
      await eventually(async () => expect((await presence(node, BOB)).data?.discord_status).toBe('idle'));
    }
    expect(simulator.resumeCount).toBe(resumes + 1);
    expect(simulator.identifyCount).toBe(identifies);
    expect(simulator.memberRequests.filter((request) => 'query' in request)).toHaveLength(listings);
    // Alice is seen through both shards: still one presence, and still current.
    for (const node of api) expect((await presence(node, ALICE)).data?.stale).toBe(false);
    simulator.setPresence(BOB, { status: 'online' });
    for (const node of api) {
      await eventually(async () => expect((await presence(node, BOB)).data?.discord_status).toBe('online'));
    }
  }, 30_000);

  it('a user who leaves the guilds on both shards is no longer monitored anywhere', async () => {
    simulator.removeMember(GUILD_ON_0, ALICE);
    // A change on shard 0 after the removal: once every API node has it, it has what the removal did.
    simulator.setPresence(BOB, { status: 'dnd' });
    for (const node of api) {
      await eventually(async () => expect((await presence(node, BOB)).data?.discord_status).toBe('dnd'));
    }
    for (const node of api) expect((await presence(node, ALICE)).status).toBe(200);
    simulator.removeMember(GUILD_ON_1, ALICE);
    for (const node of api)
      await eventually(async () => expect((await presence(node, ALICE)).status).toBe(404));
  });

  it("a shard's lost session makes its users stale on every API node until it lists them again", async () => {
    const before = await presence(api[0] as NodeProcess, BOB);
    expect(before.data?.stale).toBe(false);
    const socket = await SocketClient.connect((api[1] as NodeProcess).url);
    await socket.subscribe({ subscribe_to_ids: [BOB, CAROL] });

    simulator.faults.invalidateSession(false, 0);
    for (const node of api) {
      await eventually(async () => expect((await presence(node, BOB)).data?.stale).toBe(true));
    }
    await eventually(() => expect(updatesFor(socket, BOB).at(-1)?.stale).toBe(true));
    // Shard 1 kept its session: its users stay current.
    expect((await presence(api[0] as NodeProcess, CAROL)).data?.stale).toBe(false);

    // The new session (after the identify rate limit) sends the guild again with its members.
    for (const node of api) {
      await eventually(async () => expect((await presence(node, BOB)).data?.stale).toBe(false), 15_000);
    }
    const after = await presence(api[0] as NodeProcess, BOB);
    expect(after.data?.observed_at).toBeGreaterThan(before.data?.observed_at ?? Number.POSITIVE_INFINITY);
    await eventually(() => expect(updatesFor(socket, BOB).at(-1)?.stale).toBe(false));
    expect(updatesFor(socket, CAROL)).toEqual([]);
    await socket.close();
  }, 30_000);
}
