import '../../src/ops/tick-shape.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { report, serveBenchProcess } from '../lib/child.js';
import { serveMemoryQuestions } from '../lib/memory.js';
import { startProductionApp } from '../lib/production-app.js';

/**
 * The service starting against a simulated Discord in another process (bench/processes/discord.ts): startApp as
 * production runs it (ROLE all, the embedded store in a SQLite file), the real @discordjs/ws client, the
 * ingest, the registry, history, profiles. Times from startApp until every one of MEMBERS members is
 * served: the registry holds them all and `GET /v1/users/<LAST_ID>` answers 200 with that user; then
 * until every one of them is rendered and announced to the registry's listeners (`settled`).
 *
 * With DATA_DIR, the database is that directory's and stays: a second process on it is a restart, which
 * takes back what the first saved and resumes its gateway session. GATEWAY_COMPRESSION is passed on.
 *
 * The service logs at info into this process (pino into an array, nothing printed), so the scenario can
 * say what an operator would have seen while it loaded: `served` carries the log lines about loading
 * members, with the time each was written.
 */
const members = Number(process.env.MEMBERS);
const lastId = process.env.LAST_ID as string;

interface LogLine {
  msg: string;
  atSeconds: number;
  [key: string]: unknown;
}
const lines: LogLine[] = [];
const started = process.hrtime.bigint();
const cpuAtStart = process.cpuUsage();
const cpuSeconds = () => {
  const { user, system } = process.cpuUsage(cpuAtStart);
  return (user + system) / 1e6;
};
const since = () => Number(process.hrtime.bigint() - started) / 1e9;
const logger = pino(
  { level: 'info' },
  {
    write(text: string) {
      const line = JSON.parse(text) as Record<string, unknown>;
      const { level: _level, time: _time, pid: _pid, hostname: _hostname, ...rest } = line;
      lines.push({ ...(rest as { msg: string }), atSeconds: since() });
    },
  },
);

/** DATA_DIR: a directory another run left its database in (a restart); else a fresh one, removed after. */
const kept = process.env.DATA_DIR;
const dir = kept ?? mkdtempSync(join(tmpdir(), 'presently-bench-startup-'));
const app = await startProductionApp(
  {
    DATABASE_URL: `sqlite:${join(dir, 'presently.db')}`,
    RATE_LIMIT_READ: '0',
    GATEWAY_COMPRESSION: process.env.GATEWAY_COMPRESSION ?? 'off',
  },
  { logger },
);
const listeningSeconds = since();
serveBenchProcess(async () => {
  await app.close();
  if (kept === undefined) rmSync(dir, { recursive: true, force: true });
});
serveMemoryQuestions();

const { registry } = app;
if (!registry) throw new Error('the bench service runs ROLE all');
while (registry.size < members) await new Promise((resolve) => setTimeout(resolve, 10));
const inRegistry = since();
const response = await fetch(`${app.url}/v1/users/${lastId}`);
const body = (await response.json()) as { data?: { discord_user?: { id?: string } } };
if (response.status !== 200 || body.data?.discord_user?.id !== lastId) {
  throw new Error(`startup: GET /v1/users/${lastId} answered ${response.status}`);
}
report({
  type: 'served',
  seconds: since(),
  cpuSeconds: cpuSeconds(),
  inRegistrySeconds: inRegistry,
  processSeconds: process.uptime(),
  listeningSeconds,
  size: registry.size,
  logs: lines.filter((line) => /member|guild|ready/i.test(line.msg)),
});
// Members are served as soon as they are listed, and rendered and announced after: how long that takes.
while (registry.pendingCount > 0) await new Promise((resolve) => setTimeout(resolve, 10));
report({ type: 'settled', seconds: since(), cpuSeconds: cpuSeconds() });
// A restart serves what it took back before its session has resumed: when it has, the driver counts it.
const { gateway } = app;
while (!gateway?.ready) await new Promise((resolve) => setTimeout(resolve, 10));
report({ type: 'connected', seconds: since() });
