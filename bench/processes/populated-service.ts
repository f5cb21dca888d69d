import '../../src/ops/tick-shape.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { writeHeapSnapshot } from 'node:v8';
import pino from 'pino';
import type { DiscordUser } from '../../src/presence/model.js';
import { OFFLINE_PRESENCE, rawPresenceFrom } from '../../src/presence/normalize/raw.js';
import { defaultUser } from '../../src/simulator/state.js';
import { onMessage, report, serveBenchProcess } from '../lib/child.js';
import { serveMemoryQuestions } from '../lib/memory.js';
import { isOfflineInPopulation, populationPresence, populationUser } from '../lib/population.js';
import { startProductionApp } from '../lib/production-app.js';
import { median } from '../lib/stats.js';
import { BENCH_GUILD, benchUserId } from '../lib/workload.js';

/**
 * The service as production runs it (startApp, ROLE all, the embedded store in a SQLite file) against a
 * simulated Discord in another process (`discord`, TOKEN, API_URL, CDN_URL) whose guild lists one member,
 * population user 0, then filled with the population's users (bench/lib/population.ts) through the
 * registry's domain API: each `{type: 'fill', from, to}` makes users from..to-1 members of the bench
 * guild with their presence, as the ingest does for a member listing (registry.memberSeen with the
 * member's user and rawPresenceFrom of their presence, offline members with OFFLINE_PRESENCE). The user
 * and presence are JSON text parsed first, so the registry keeps what a parsed gateway payload gives it,
 * not objects shared between users. Everything the service does for a newly monitored user runs as it
 * does for the gateway's (history, stored KV and profile look-ups, the profile queue, the profile fetches
 * from the simulated Discord).
 *
 * Answers `memory` (started with MEMORY_FLAGS), `lookups` (below), and with BENCH_PROFILE_DIR=<dir> `heap-snapshot` `{name}`
 * (a heap snapshot written to <dir>/<name>.heapsnapshot) and `cpu-profile-start`, then `cpu-profile-stop`
 * `{name}` (a CPU profile of what ran in between, <dir>/<name>.cpuprofile): where a phase's bytes and time
 * go, rather than the whole process's (BENCH_CPU_PROF).
 */
const start = Date.now() - 30_000;

// A SQLite file, as in production: an in-memory database would put the history rows written for every
// new user into the process's RSS.
const dir = mkdtempSync(join(tmpdir(), 'presently-bench-memory-'));
const app = await startProductionApp(
  {
    DATABASE_URL: `sqlite:${join(dir, 'presently.db')}`,
    SOCKETS_PER_IP: '0',
    CONNECTIONS_PER_IP: '0',
    RATE_LIMIT_READ: '0',
    RATE_LIMIT_WRITE: '0',
  },
  { logger: pino({ level: 'warn' }) },
);
serveBenchProcess(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

const { registry } = app;
if (!registry) throw new Error('the bench service runs ROLE all');
const deadline = Date.now() + 60_000;
while (registry.size < 1) {
  if (Date.now() > deadline) throw new Error('the gateway member never arrived');
  await new Promise((resolve) => setTimeout(resolve, 20));
}

/** User n as a member listing carries them: the full user object, parsed from JSON. */
function memberUser(n: number): DiscordUser {
  const user = populationUser(n);
  return JSON.parse(JSON.stringify({ ...defaultUser(user.id), ...user })) as DiscordUser;
}

let filling = Promise.resolve();
onMessage<{ type: string; from: number; to: number }>('fill', ({ from, to }) => {
  filling = filling.then(async () => {
    const started = process.hrtime.bigint();
    const cpuBefore = process.cpuUsage();
    let bodyBytes = 0;
    for (let n = from; n < to; n++) {
      const user = memberUser(n);
      const raw = isOfflineInPopulation(n)
        ? OFFLINE_PRESENCE
        : rawPresenceFrom(JSON.parse(JSON.stringify(populationPresence(n, start))));
      registry.memberSeen(BENCH_GUILD, user, raw);
      bodyBytes += registry.get(user.id)?.body.length ?? 0;
      // A member listing arrives 1,000 members per chunk, one chunk per event-loop turn: what the
      // listeners started (store look-ups) runs between chunks, as it would.
      if (n % 1000 === 999) await setImmediate();
    }
    const cpu = process.cpuUsage(cpuBefore);
    report({
      type: 'filled',
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      size: registry.size,
      bodyBytes,
    });
  });
});

/**
 * `{type: 'lookups', users, count, rounds}`: the registry's part of a REST read alone, ns per read —
 * registry.body of a random one of users 0..users-1, as src/http/fast-read.ts takes it — the median of
 * `rounds` rounds of `count`.
 */
onMessage<{ type: string; users: number; count: number; rounds: number }>('lookups', (asked) => {
  const ids = Array.from({ length: asked.count }, () => benchUserId(Math.floor(Math.random() * asked.users)));
  const rounds: number[] = [];
  let bytes = 0;
  for (let round = 0; round < asked.rounds; round++) {
    const started = process.hrtime.bigint();
    for (const id of ids) {
      const held = registry.body(id);
      if (held === undefined) throw new Error(`user ${id} is not monitored`);
      bytes += held.body.length + held.digest.length;
    }
    rounds.push(Number(process.hrtime.bigint() - started) / asked.count);
  }
  report({ type: 'lookups', nanoseconds: median(rounds), bytes });
});

serveMemoryQuestions();
const profiles = process.env.BENCH_PROFILE_DIR;
const inspector = new Session();
const profileTo = (name: string) => {
  if (!profiles) throw new Error('heap snapshots and CPU profiles need BENCH_PROFILE_DIR=<dir>');
  return join(profiles, name);
};
onMessage<{ type: string; name: string }>('heap-snapshot', ({ name }) => {
  report({ type: 'heap-snapshot', path: writeHeapSnapshot(profileTo(`${name}.heapsnapshot`)) });
});
onMessage('cpu-profile-start', () => {
  profileTo('');
  inspector.connect();
  void inspector
    .post('Profiler.enable')
    .then(() => inspector.post('Profiler.start'))
    .then(() => report({ type: 'cpu-profile-started' }));
});
onMessage<{ type: string; name: string }>('cpu-profile-stop', ({ name }) => {
  void inspector.post('Profiler.stop').then(({ profile }) => {
    inspector.disconnect();
    const path = profileTo(`${name}.cpuprofile`);
    writeFileSync(path, JSON.stringify(profile));
    report({ type: 'cpu-profile', path });
  });
});
report({ type: 'ready', url: app.url });
