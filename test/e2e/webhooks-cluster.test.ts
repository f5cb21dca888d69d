import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { LEASE_MS } from '../../src/webhooks/worker.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';
import { playingOnSpotify } from '../support/playing.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';
import { scaleOutEnv } from '../support/scale-out-env.js';
import {
  type Received,
  signedWith,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

/**
 * Webhooks in scale-out, as deployed: an ingest node and two API nodes (real processes), every one of them
 * delivering from the queue they share in Redis. Each event reaches the receiver once, whichever node
 * queued it and whichever delivers it, also when the node holding a delivery is killed in the middle.
 */

const hasRedis = await redisAvailable('webhooks in scale-out');

const GUILD = '400000000000000002';
const NOVA = '94490510688792576';

/** The pid of the process (among `pids`) whose TCP connection has local port `port` (Linux's /proc). */
function ownerOfPort(pids: number[], port: number): number | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1]?.split(':')[1];
      if (local !== undefined && Number.parseInt(local, 16) === port) inodes.add(fields[9] ?? '');
    }
  }
  return pids.find((pid) =>
    readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.has(/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? '');
      } catch {
        return false;
      }
    }),
  );
}

const songOf = (received: Received) => (received.body.data as { song: string }).song;

describe.skipIf(!hasRedis || process.platform !== 'linux')('webhooks in scale-out', () => {
  const prefix = uniquePrefix();
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  const nodes: NodeProcess[] = [];
  let redis: Redis;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    redis = new Redis(REDIS_TEST_URL);
    await simulator.start();
    simulator.createGuild({
      id: GUILD,
      name: 'Hooks',
      members: [{ user: { id: NOVA, username: 'nova' }, presence: { status: 'online' } }],
    });
    receiver = await startWebhookReceiver();
    const env = (role: string) => scaleOutEnv(role, simulator, prefix, { WEBHOOKS_ALLOW_PRIVATE: 'true' });
    nodes.push(
      ...(await Promise.all([
        startNodeProcess('ingest', env('ingest')),
        startNodeProcess('api-a', env('api')),
        startNodeProcess('api-b', env('api')),
      ])),
    );
    await eventually(async () => {
      for (const node of nodes.slice(1))
        expect((await fetch(`${node.url}/v1/users/${NOVA}`)).status).toBe(200);
    }, 15_000);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await receiver.close();
    await simulator.stop();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  }, 30_000);

  it('delivers each event once across the nodes, also after its holder is killed mid-delivery', async () => {
    const [, apiA, apiB] = nodes as [NodeProcess, NodeProcess, NodeProcess];
    const key = await insertApiKey(openRedisStore(redis, prefix), NOVA);
    const created = await fetch(`${apiA.url}/v1/users/@me/webhooks`, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/hook`, events: ['now_playing', 'kv'] }),
    });
    expect(created.status).toBe(201);
    const { secret } = ((await created.json()) as { data: { secret: string } }).data;

    const acknowledged = new Map<string, number>();
    let held: Received | undefined;
    receiver.respond = (received, index) => {
      // The first event's first attempt fails: it is retried, by whichever node takes it then.
      if (index === 0) return 500;
      if (songOf(received) === 'held' && !held) {
        held = received;
        return 'hang';
      }
      acknowledged.set(received.deliveryId, (acknowledged.get(received.deliveryId) ?? 0) + 1);
      return 200;
    };
    const play = (song: string) =>
      simulator.setPresence(NOVA, { status: 'online', activities: [playingOnSpotify(song)] });

    // The ingest node hears of the webhook through Redis: until it has, its changes queue nothing.
    let warmUps = 0;
    await eventually(
      () => {
        play(`warm-up ${warmUps++}`);
        expect(receiver.received.length).toBeGreaterThan(0);
      },
      15_000,
      500,
    );
    const sent = ['one', 'two', 'three', 'four', 'five'];
    for (const song of sent) play(song);
    await eventually(() => expect(songsAcknowledged(acknowledged).slice(-sent.length)).toEqual(sent), 20_000);

    // The next delivery is held open by the receiver, and the node making it is killed.
    play('held');
    await eventually(() => expect(held).toBeDefined(), 15_000);
    const pid = ownerOfPort(
      nodes.map((node) => node.child.pid as number),
      (held as Received).remotePort,
    );
    const holder = nodes.find((node) => node.child.pid === pid) as NodeProcess;
    expect(holder, 'the node making the held delivery').toBeDefined();
    holder.child.kill('SIGKILL');
    await holder.exited;
    // Another node takes it once the lease has run out: the same delivery id, acknowledged once.
    const heldId = (held as Received).deliveryId;
    await eventually(() => expect(acknowledged.get(heldId)).toBe(1), LEASE_MS + 15_000, 200);

    // KV written through each API node still alive: one event per write, queued by that node.
    for (const [index, node] of [apiA, apiB].filter((api) => api !== holder).entries()) {
      const put = await fetch(`${node.url}/v1/users/@me/kv/city`, {
        method: 'PUT',
        headers: { authorization: key },
        body: `city ${index}`,
      });
      expect(put.status).toBe(204);
      await eventually(() =>
        expect(receiver.received.at(-1)?.body).toMatchObject({ type: 'kv', data: { city: `city ${index}` } }),
      );
    }

    // Every event, one delivery id, acknowledged once; each track once, in the order played.
    expect([...acknowledged.values()].every((count) => count === 1)).toBe(true);
    expect(songsAcknowledged(acknowledged).filter((song) => !song.startsWith('warm-up'))).toEqual([
      ...sent,
      'held',
    ]);
    const kvEvents = receiver.received.filter((entry) => entry.body.type === 'kv');
    expect(new Set(kvEvents.map((entry) => entry.deliveryId)).size).toBe(kvEvents.length);
    for (const entry of receiver.received) expect(signedWith(secret, entry)).toBe(true);

    /** The songs of the now_playing deliveries acknowledged, in the order they arrived. */
    function songsAcknowledged(ids: Map<string, number>): string[] {
      const seen = new Set<string>();
      return receiver.received
        .filter((entry) => entry.body.type === 'now_playing' && ids.has(entry.deliveryId))
        .filter((entry) => !seen.has(entry.deliveryId) && seen.add(entry.deliveryId))
        .map(songOf);
    }
  }, 120_000);
});
