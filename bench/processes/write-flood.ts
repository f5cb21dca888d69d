import '../../src/ops/tick-shape.js';
import { Agent } from 'node:http';
import { generateApiKey } from '../../src/keys/api-key.js';
import { bump, serveAttack, startEach, type Tally } from '../lib/attack.js';
import { serveBenchProcess } from '../lib/child.js';
import { type LoopbackRequest, loopbackRequest } from '../lib/loopback-http.js';

/**
 * A client flooding KV writes without a valid key (the hostile scenario): CONNECTIONS keep-alive
 * connections from ADDRESS, each sending the next write as soon as the last is answered, in turn:
 *
 * - PUT of a PUT_BODY_BYTES value to USER_ID's KV, with no key at all;
 * - PATCH of `@me` with a made-up key of the right shape and PATCH_BODY_BYTES of nested JSON arrays;
 * - PATCH of USER_ID with a key of the wrong shape and PATCH_BODY_BYTES of a JSON object of tiny keys;
 * - DELETE of a key of `@me` with a made-up key.
 *
 * Counts the answers by status, and connections the service cut.
 */
const url = new URL(process.env.URL as string);
const connections = Number(process.env.CONNECTIONS);
const localAddress = process.env.ADDRESS as string;
const userId = process.env.USER_ID as string;
const putBodyBytes = Number(process.env.PUT_BODY_BYTES);
const patchBodyBytes = Number(process.env.PATCH_BODY_BYTES);

const depth = Math.floor(patchBodyBytes / 2);
const nested = Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}`);
const manyKeys = Buffer.from(
  `{${Array.from({ length: Math.floor((patchBodyBytes - 2) / 16) }, (_, i) => `"${i.toString(36).padStart(6, '_')}":"x"`).join(',')}}`,
);
const value = Buffer.alloc(putBodyBytes, 'v');
const json = { 'content-type': 'application/json' };

const writes: Array<() => Omit<LoopbackRequest, 'localAddress'>> = [
  () => ({ method: 'PUT', path: `/v1/users/${userId}/kv/status`, body: value }),
  () => ({
    method: 'PATCH',
    path: '/v1/users/@me/kv',
    headers: { ...json, authorization: generateApiKey() },
    body: nested,
  }),
  () => ({
    method: 'PATCH',
    path: `/v1/users/${userId}/kv`,
    headers: { ...json, authorization: `Bearer not-a-key-${Math.random()}` },
    body: manyKeys,
  }),
  () => ({
    method: 'DELETE',
    path: '/v1/users/@me/kv/status',
    headers: { authorization: generateApiKey() },
  }),
];

let active = false;
let tally: Tally = {};
let loops: Promise<void>[] = [];
let agent = new Agent({ keepAlive: true });

async function flood(first: number, started: () => void): Promise<void> {
  for (let n = first; active; n += connections) {
    const write = (writes[n % writes.length] as (typeof writes)[number])();
    try {
      const { status } = await loopbackRequest(url, { ...write, localAddress, agent });
      bump(tally, `keyless writes answered ${status}`);
    } catch (error) {
      bump(tally, `keyless writes cut (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    // At work once answered: the blocks measure the flood, not 200 connections opening at once.
    started();
    bump(tally, 'bytes of keyless write bodies sent', write.body?.length ?? 0);
  }
}

serveAttack({
  start: async () => {
    tally = {};
    active = true;
    agent = new Agent({ keepAlive: true, maxSockets: connections });
    const started = startEach(connections, flood);
    loops = started.clients;
    await started.settled;
  },
  stop: async () => {
    active = false;
    await Promise.all(loops);
    agent.destroy();
    return tally;
  },
});
serveBenchProcess(() => {
  active = false;
  agent.destroy();
});
