import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config.js';
import { PATCH_BODY_LIMIT } from '../../src/http/routes/kv.js';
import { DEFAULT_KV_MAX_BYTES, KV_VALUE_MAX_CHARS } from '../../src/kv/rules.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { type NodeProcess, startNodeProcess } from '../../test/support/node-process.js';
import { obtainKey, untilServed } from '../lib/api-key.js';
import { patchBodies, slotsAtCap, valueFor } from '../lib/kv-at-cap.js';
import type { Row } from '../lib/results.js';
import { formatNumber, quantile } from '../lib/stats.js';
import { BENCH_GUILD, benchUserId, realisticPresence } from '../lib/workload.js';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** How long each phase lasts; a short run (a few seconds) checks that the scenario works. */
const PHASE_SECONDS = Number(process.env.BENCH_REDIS_KV_CAP_SECONDS ?? 20);
/** PINGs are sent one after the other, one this often: a Redis busy for a while shows as one long PING. */
const PING_EVERY_MS = 10;
/** Ordinary members whose presences change while the member at the cap writes. */
const OTHERS = 50;
const OTHER_CHANGE_EVERY_MS = 100;
/** The member at the cap changes presence too: without the KV apart, each change carried the whole KV. */
const MEMBER_CHANGE_EVERY_MS = 1_000;
const TARGET_P99_MS = 10;

/**
 * A member whose KV is at the cap in scale-out (an ingest node and an API node on one Redis) rewrites one
 * full value at the default write limit while presences change, theirs included: how long Redis takes
 * to answer PING meanwhile, against the same PINGs with Redis idle in the same run. Each write is paid
 * once in Redis (the KV travels apart from the presence); a presence change is a small message.
 */
export async function redisKvCap(): Promise<Row[]> {
  const prefix = `presently-bench:${randomBytes(4).toString('hex')}:`;
  const pinger = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  await pinger.connect().catch(() => {
    throw new Error(`the redis-kv-cap scenario needs Redis at ${REDIS_URL} (BENCH_REDIS_URL)`);
  });
  const defaults = loadConfig({});
  const simulator = new DiscordSimulator();
  await simulator.start();
  const member = benchUserId(0);
  simulator.createGuild({
    id: BENCH_GUILD,
    name: 'Bench',
    members: Array.from({ length: OTHERS + 1 }, (_, n) => ({
      user: { id: benchUserId(n), username: `bench_user_${n}` },
      presence: realisticPresence(n),
    })),
  });
  const env = (role: string) => ({
    ROLE: role,
    REDIS_URL,
    REDIS_PREFIX: prefix,
    DISCORD_TOKEN: simulator.token,
    DISCORD_API_URL: simulator.apiUrl,
    DISCORD_CDN_URL: simulator.cdnUrl,
    RATE_LIMIT_WRITE: String(defaults.rateLimitWrite),
  });
  const nodes: NodeProcess[] = [];
  try {
    nodes.push(
      ...(await Promise.all([
        startNodeProcess('ingest', env('ingest'), { readyTimeoutMs: 60_000 }),
        startNodeProcess('api', env('api'), { readyTimeoutMs: 60_000 }),
      ])),
    );
    const api = nodes[1] as NodeProcess;
    await untilServed(api.url, [member], 60_000);
    const apiKey = await obtainKey(simulator, member);
    const slots = slotsAtCap(DEFAULT_KV_MAX_BYTES);
    const patch = (body: string) =>
      fetch(`${api.url}/v1/users/${member}/kv`, {
        method: 'PATCH',
        headers: { authorization: apiKey, 'content-type': 'application/json' },
        body,
      });
    for (const body of patchBodies(
      slots.map((slot) => [slot.key, valueFor(slot)] as const),
      PATCH_BODY_LIMIT,
    )) {
      const answer = await patch(body);
      if (answer.status !== 204) throw new Error(`filling the KV answered ${answer.status}`);
    }

    const idle = await pings(PHASE_SECONDS * 1_000, pinger);

    const full = slots.filter((slot) => slot.emoji === KV_VALUE_MAX_CHARS);
    const writeEveryMs = 60_000 / defaults.rateLimitWrite;
    let active = true;
    const answered: Record<number, number> = {};
    const writer = (async () => {
      for (let n = 0; active; n++) {
        const started = performance.now();
        const slot = full[n % full.length] as (typeof full)[number];
        const answer = await patch(JSON.stringify({ [slot.key]: valueFor(slot) }));
        answered[answer.status] = (answered[answer.status] ?? 0) + 1;
        await sleep(Math.max(0, writeEveryMs - (performance.now() - started)));
      }
    })();
    let changes = 0;
    const changer = (async () => {
      for (let n = 0; active; n++) {
        const other = 1 + (n % OTHERS);
        simulator.setPresence(benchUserId(other), realisticPresence(other + n));
        if ((n * OTHER_CHANGE_EVERY_MS) % MEMBER_CHANGE_EVERY_MS === 0) {
          simulator.setPresence(member, realisticPresence(n));
          changes++;
        }
        changes++;
        await sleep(OTHER_CHANGE_EVERY_MS);
      }
    })();
    const loaded = await pings(PHASE_SECONDS * 1_000, pinger);
    active = false;
    await Promise.all([writer, changer]);
    for (const node of nodes) {
      if (node.child.exitCode !== null) throw new Error(`${node.name} exited:\n${node.output()}`);
    }

    const figure = (q: number) => quantile(loaded, q);
    const idleAt = (q: number) => quantile(idle, q);
    const notes =
      `PING sent one after another every ${PING_EVERY_MS} ms for ${PHASE_SECONDS} s a phase; ` +
      `the member's KV at ${formatNumber(DEFAULT_KV_MAX_BYTES)} bytes, one full value rewritten every ` +
      `${formatNumber(writeEveryMs)} ms (answers: ${JSON.stringify(answered)}), ${changes} presence ` +
      `changes meanwhile, the member's every ${MEMBER_CHANGE_EVERY_MS} ms; Redis, both nodes and the ` +
      'bench share this machine';
    const row = (name: string, q: number, target: Row['target']): Row => ({
      scenario: 'redis-kv-cap',
      figure: `Redis PING ${name} while a member at the KV cap rewrites at the write limit (scale-out)`,
      value: q === 1 ? Math.max(...loaded) : figure(q),
      unit: 'ms',
      baseline: { label: 'Redis idle, same run', value: q === 1 ? Math.max(...idle) : idleAt(q) },
      target,
      notes,
    });
    return [
      row('p99', 0.99, { text: `< ${TARGET_P99_MS} ms`, met: figure(0.99) < TARGET_P99_MS }),
      row('p50', 0.5, null),
      row('max', 1, null),
    ];
  } finally {
    await Promise.all(nodes.map((node) => node.stop()));
    await simulator.stop();
    const keys = await pinger.keys(`${prefix}*`);
    if (keys.length > 0) await pinger.del(...keys);
    pinger.disconnect();
  }
}

/** Round trips of PING for `ms`, one at a time, in milliseconds. */
async function pings(ms: number, redis: Redis): Promise<number[]> {
  const samples: number[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const started = performance.now();
    await redis.ping();
    const took = performance.now() - started;
    samples.push(took);
    await sleep(Math.max(0, PING_EVERY_MS - took));
  }
  return samples;
}
