import '../../src/ops/tick-shape.js';
import { Agent } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { PATCH_BODY_LIMIT } from '../../src/http/routes/kv.js';
import { DEFAULT_KV_MAX_BYTES, KV_VALUE_MAX_CHARS } from '../../src/kv/rules.js';
import { bump, serveAttack, type Tally } from '../lib/attack.js';
import { onMessage, report, serveBenchProcess } from '../lib/child.js';
import { kvBytes, kvDigest, patchBodies, slotsAtCap, valueFor } from '../lib/kv-at-cap.js';
import { type LoopbackRequest, loopbackRequest } from '../lib/loopback-http.js';

/**
 * A guild member with an API key (API_KEY, for USER_ID) whose KV is at the default KV_MAX_BYTES, writing
 * from ADDRESS through the real REST routes:
 *
 * - `fill`: PATCHes keys of emoji values until the KV is exactly at the cap, then tries one byte more,
 *   which must be refused; answers `filled`.
 * - as an attack (bench/lib/attack.ts): one PATCH every WRITE_EVERY_MS (the next waits for the answer to
 *   the last), each replacing a full value with new emoji of the same size, so the KV stays at the cap.
 * - `verify`: reads the presence back and answers `verified`: how many keys differ from what the
 *   acknowledged writes left, and that KV's fingerprint, to be compared with the store's.
 */
const url = new URL(process.env.URL as string);
const userId = process.env.USER_ID as string;
const apiKey = process.env.API_KEY as string;
const localAddress = process.env.ADDRESS as string;
const writeEveryMs = Number(process.env.WRITE_EVERY_MS);

const slots = slotsAtCap(DEFAULT_KV_MAX_BYTES);
const fullSlots = slots.filter((slot) => slot.emoji === KV_VALUE_MAX_CHARS);
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
/** The KV as the writes acknowledged (204) left it. */
const acknowledged: Record<string, string> = {};

const send = (request: Omit<LoopbackRequest, 'localAddress' | 'agent'>) =>
  loopbackRequest(url, { ...request, localAddress, agent });

function patch(body: string) {
  return send({
    method: 'PATCH',
    path: `/v1/users/${userId}/kv`,
    headers: { authorization: apiKey, 'content-type': 'application/json' },
    body,
    keepBody: true,
  });
}

async function fill(): Promise<void> {
  const entries = slots.map((slot) => [slot.key, valueFor(slot)] as const);
  const bodies = patchBodies(entries, PATCH_BODY_LIMIT);
  for (const body of bodies) {
    const answer = await patch(body);
    if (answer.status !== 204)
      throw new Error(`kv-member: filling answered ${answer.status}: ${answer.body}`);
    Object.assign(acknowledged, JSON.parse(body) as Record<string, string>);
  }
  const over = await send({
    method: 'PUT',
    path: `/v1/users/${userId}/kv/one_more`,
    headers: { authorization: apiKey },
    body: 'x',
    keepBody: true,
  });
  const refusal = JSON.parse(over.body.toString()) as { error?: { code?: string } };
  report({
    type: 'filled',
    bytes: kvBytes(acknowledged),
    keys: slots.length,
    patches: bodies.length,
    over: `${over.status} ${refusal.error?.code ?? ''}`.trim(),
  });
}

let active = false;
let writing: Promise<void> = Promise.resolve();
let tally: Tally = {};

async function keepWriting(answered: () => void): Promise<void> {
  for (let n = 0; active; n++) {
    const started = performance.now();
    const slot = fullSlots[n % fullSlots.length] as (typeof fullSlots)[number];
    const value = valueFor(slot);
    try {
      const answer = await patch(JSON.stringify({ [slot.key]: value }));
      if (answer.status === 204) {
        acknowledged[slot.key] = value;
        bump(tally, 'member writes acknowledged');
      } else bump(tally, `member writes answered ${answer.status}`);
    } catch (error) {
      bump(tally, `member writes failed (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    answered();
    await sleep(Math.max(0, writeEveryMs - (performance.now() - started)));
  }
}

onMessage('fill', () => void fill());
onMessage('verify', async () => {
  const answer = await send({ method: 'GET', path: `/v1/users/${userId}`, keepBody: true });
  const presence = JSON.parse(answer.body.toString()) as { data?: { kv?: Record<string, string> } };
  const served = presence.data?.kv ?? {};
  const keys = new Set([...Object.keys(served), ...Object.keys(acknowledged)]);
  report({
    type: 'verified',
    differing: [...keys].filter((key) => served[key] !== acknowledged[key]).length,
    servedBytes: kvBytes(served),
    acknowledged: kvDigest(acknowledged),
  });
});
serveBenchProcess(() => agent.destroy());
serveAttack({
  start: () =>
    new Promise<void>((resolve) => {
      tally = {};
      active = true;
      writing = keepWriting(resolve);
    }),
  stop: async () => {
    active = false;
    await writing;
    return tally;
  },
});
