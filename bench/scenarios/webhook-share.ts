import { setTimeout as sleep } from 'node:timers/promises';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { DEFAULT_WEBHOOKS_PER_USER } from '../../src/webhooks/rules.js';
import { DELIVERIES_PER_USER, DELIVERY_CONCURRENCY } from '../../src/webhooks/worker.js';
import { type NodeProcess, startNodeProcess } from '../../test/support/node-process.js';
import { obtainKey, untilServed } from '../lib/api-key.js';
import { type DelayedReceiver, startDelayedReceiver } from '../lib/delayed-receiver.js';
import { markerText, nowMicros } from '../lib/fanout-marker.js';
import { processCpuMicros } from '../lib/proc-cpu.js';
import type { Row } from '../lib/results.js';
import { formatNumber, quantile } from '../lib/stats.js';
import { BENCH_GUILD, benchUser, benchUserId, realisticPresence } from '../lib/workload.js';

/** How long each phase is measured; a short run (a few seconds) checks that the scenario works. */
const PHASE_SECONDS = Number(process.env.BENCH_WEBHOOK_SHARE_SECONDS ?? 60);
/** Users whose receivers are slow, each with as many webhooks as a user may have. */
const SLOW_USERS = 7;
/** Just inside the sender's timeout: every delivery to them holds a slot this long, and succeeds. */
const SLOW_ANSWER_MS = 4_800;
/** The victim is the bench user after the slow ones, with one webhook to a receiver answering at once. */
const VICTIM = SLOW_USERS;
const USERS = SLOW_USERS + 1;
/** One user's presence changes this often, in turn: each user changes every USERS × this. */
const CHANGE_EVERY_MS = 125;
/** Before measuring, the slow receivers hold as much as they will: one slow answer and a bit. */
const WARMUP_MS = SLOW_ANSWER_MS + 1_000;
const DRAIN_TIMEOUT_MS = 60_000;
const TARGET_P50_MS = 500;

interface Phase {
  /** The victim's delivery latencies (change sent to Discord → its delivery arrived), in ms. */
  latencies: number[];
  victimChanges: number;
  deliveries: number;
  serverCpuMicros: number;
}

/**
 * One service (SQLite) delivers the webhooks of eight users whose presences change in turn through the
 * simulated Discord. Seven have every webhook they may have on receivers answering after 4.8 s, enough to
 * fill every delivery slot of a node; the victim has one, answering at once. The victim's delivery latency
 * is measured while the seven's receivers are slow, against a phase of the same run where they answer at
 * once.
 */
export async function webhookShare(): Promise<Row[]> {
  const start = Date.now() - 30_000;
  const simulator = new DiscordSimulator();
  await simulator.start();
  simulator.createGuild({
    id: BENCH_GUILD,
    name: 'Bench',
    members: Array.from({ length: USERS }, (_, n) => ({
      user: benchUser(n),
      presence: realisticPresence(n, { start }),
    })),
  });
  const receivers: DelayedReceiver[] = [];
  let node: NodeProcess | undefined;
  try {
    for (let n = 0; n < USERS; n++) receivers.push(await startDelayedReceiver());
    node = await startNodeProcess(
      'webhook-share',
      {
        DISCORD_TOKEN: simulator.token,
        DISCORD_API_URL: simulator.apiUrl,
        DISCORD_CDN_URL: simulator.cdnUrl,
        DATABASE_URL: 'sqlite::memory:',
        WEBHOOKS_ALLOW_PRIVATE: 'true',
      },
      { readyTimeoutMs: 60_000 },
    );
    const service = node;
    await untilServed(
      service.url,
      Array.from({ length: USERS }, (_, n) => benchUserId(n)),
      DRAIN_TIMEOUT_MS,
    );
    for (let n = 0; n < USERS; n++) {
      const key = await obtainKey(simulator, benchUserId(n));
      const webhooks = n === VICTIM ? 1 : DEFAULT_WEBHOOKS_PER_USER;
      for (let i = 0; i < webhooks; i++) {
        const answer = await fetch(`${service.url}/v1/users/@me/webhooks`, {
          method: 'POST',
          headers: { authorization: key, 'content-type': 'application/json' },
          body: JSON.stringify({
            url: `${(receivers[n] as DelayedReceiver).url}/${i}`,
            events: ['presence'],
          }),
        });
        if (answer.status !== 201) throw new Error(`adding a webhook answered ${answer.status}`);
      }
    }
    const pid = service.child.pid as number;

    let seq = 0;
    const lastSeq = new Array<number>(USERS).fill(0);
    const change = (n: number) => {
      lastSeq[n] = ++seq;
      const customText = markerText(seq, nowMicros());
      simulator.setPresence(benchUserId(n), realisticPresence(n, { start, customText }));
    };
    /** Until `receiver` has had user n's last change on each of its webhooks (the newest always goes out). */
    const drained = async (n: number) => {
      const receiver = receivers[n] as DelayedReceiver;
      const webhooks = n === VICTIM ? 1 : DEFAULT_WEBHOOKS_PER_USER;
      const deadline = Date.now() + DRAIN_TIMEOUT_MS;
      for (;;) {
        const last = receiver.arrivals.filter((arrival) => arrival.seq === lastSeq[n]);
        if (new Set(last.map((arrival) => arrival.path)).size === webhooks) return;
        if (Date.now() > deadline) throw new Error(`user ${n}'s last change was not delivered`);
        await sleep(50);
      }
    };

    const phase = async (slowMs: number): Promise<Phase> => {
      for (let n = 0; n < SLOW_USERS; n++) (receivers[n] as DelayedReceiver).delayMs = slowMs;
      let next = 0;
      let victimChanges = 0;
      let measuring = false;
      const changes = setInterval(() => {
        const n = next++ % USERS;
        if (n === VICTIM && measuring) victimChanges++;
        change(n);
      }, CHANGE_EVERY_MS);
      await sleep(WARMUP_MS);
      const from = nowMicros();
      const cpuFrom = await processCpuMicros(pid);
      measuring = true;
      await sleep(PHASE_SECONDS * 1_000);
      measuring = false;
      const to = nowMicros();
      const serverCpuMicros = (await processCpuMicros(pid)) - cpuFrom;
      clearInterval(changes);
      await drained(VICTIM);
      const within = (micros: number) => micros >= from && micros < to;
      const firstArrival = new Map<number, number>();
      for (const arrival of (receivers[VICTIM] as DelayedReceiver).arrivals) {
        if (within(arrival.sentMicros) && !firstArrival.has(arrival.seq)) {
          firstArrival.set(arrival.seq, (arrival.arrivedMicros - arrival.sentMicros) / 1_000);
        }
      }
      const deliveries = receivers
        .flatMap((receiver) => receiver.arrivals)
        .filter((arrival) => within(arrival.arrivedMicros)).length;
      return { latencies: [...firstArrival.values()], victimChanges, deliveries, serverCpuMicros };
    };

    const quiet = await phase(0);
    for (let n = 0; n < USERS; n++) await drained(n);
    const attacked = await phase(SLOW_ANSWER_MS);
    const mostHeld = Math.max(...receivers.slice(0, SLOW_USERS).map((receiver) => receiver.mostHeld));
    if (service.child.exitCode !== null) throw new Error(`the service exited:\n${service.output()}`);

    const quietText = `${SLOW_USERS} users' receivers answering at once, same run`;
    const notes =
      `${USERS} users' presences changed in turn through the simulated Discord, each every ` +
      `${formatNumber((CHANGE_EVERY_MS * USERS) / 1_000)} s, measured for ${PHASE_SECONDS} s a phase after ` +
      `${formatNumber(WARMUP_MS / 1_000)} s of warm-up; ${SLOW_USERS} users with ${DEFAULT_WEBHOOKS_PER_USER} ` +
      `webhooks each answering after ${formatNumber(SLOW_ANSWER_MS / 1_000)} s, the victim with one answering ` +
      `at once; the victim's changes delivered: ${attacked.latencies.length} of ${attacked.victimChanges} ` +
      `(${quiet.latencies.length} of ${quiet.victimChanges} at baseline; a change left waiting is replaced by ` +
      `the next); most deliveries one slow user's receiver held at once: ${mostHeld} (share ` +
      `${DELIVERIES_PER_USER} of ${DELIVERY_CONCURRENCY}); service, simulator and receivers share this machine`;
    const figure = (name: string) =>
      `victim's webhook delivery ${name} (change sent to Discord → receiver) while ${SLOW_USERS} users' receivers take ${formatNumber(SLOW_ANSWER_MS / 1_000)} s`;
    const latencyRow = (name: string, q: number, target: Row['target']): Row => ({
      scenario: 'webhook-share',
      figure: figure(name),
      value: quantile(attacked.latencies, q),
      unit: 'ms',
      baseline: { label: quietText, value: quantile(quiet.latencies, q) },
      target,
      ...(target ? { notes } : {}),
    });
    const cpuPerDelivery = (measured: Phase) => measured.serverCpuMicros / measured.deliveries / 1_000;
    const cpuPerSecond = (measured: Phase) => measured.serverCpuMicros / PHASE_SECONDS / 1_000;
    const p50 = quantile(attacked.latencies, 0.5);
    return [
      latencyRow('p50', 0.5, { text: `< ${TARGET_P50_MS} ms`, met: p50 < TARGET_P50_MS }),
      latencyRow('p99', 0.99, null),
      latencyRow('max', 1, null),
      {
        scenario: 'webhook-share',
        figure: `server CPU per delivery while ${SLOW_USERS} users' receivers are slow`,
        value: cpuPerDelivery(attacked),
        unit: 'ms',
        baseline: { label: quietText, value: cpuPerDelivery(quiet) },
        target: null,
        notes:
          `the service's CPU over the measured time, the presence changes it takes in included, over the ` +
          `deliveries sent meanwhile: ${attacked.deliveries} (${quiet.deliveries} at baseline); its CPU ` +
          `a second: ${formatNumber(cpuPerSecond(attacked))} ms (${formatNumber(cpuPerSecond(quiet))} ms at baseline)`,
      },
    ];
  } finally {
    for (const receiver of receivers) receiver.answerAll();
    await node?.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await simulator.stop();
  }
}
