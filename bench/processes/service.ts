import pino from 'pino';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DiscordSimulator } from '../../src/discord/simulator/index.js';
import { report } from '../lib/child.js';
import { BENCH_GUILD, benchUserId, realisticPresence } from '../lib/workload.js';

/**
 * The service as production runs it (ROLE all, embedded store), fed by the simulated Discord with
 * `USERS` realistic presences. On `{type: 'update', seq}` it changes user 0's KV to carry the seq and
 * the send time, through the same path a KV write takes: one new snapshot, fanned out to subscribers.
 */
const users = Number(process.env.USERS ?? 1);
const simulator = new DiscordSimulator({ heartbeatIntervalMs: 41_250 });
await simulator.start();
simulator.createGuild({
  id: BENCH_GUILD,
  name: 'Bench',
  members: Array.from({ length: users }, (_, n) => ({
    user: { id: benchUserId(n), username: `bench_user_${n}`, global_name: `Bench User ${n}` },
    presence: realisticPresence(n),
  })),
});
const app = await startApp(
  loadConfig({
    DISCORD_TOKEN: simulator.token,
    DISCORD_API_URL: simulator.apiUrl,
    DISCORD_CDN_URL: simulator.cdnUrl,
    DATABASE_URL: 'sqlite::memory:',
    HOST: '127.0.0.1',
    PORT: '0',
    SOCKETS_PER_IP: '0',
    RATE_LIMIT_READ: '0',
    RATE_LIMIT_WRITE: '0',
  }),
  { logger: pino({ level: 'warn' }) },
);
const registry = app.registry;
if (!registry) throw new Error('the bench service runs ROLE all');
const first = benchUserId(0);
const deadline = Date.now() + 60_000;
while (registry.size < users || registry.get(first)?.presence.spotify === null) {
  if (Date.now() > deadline) throw new Error(`only ${registry.size} of ${users} users arrived`);
  await new Promise((resolve) => setTimeout(resolve, 50));
}

let revision = 1_000_000;
process.on('message', (message: { type: string; seq?: number }) => {
  if (message.type === 'update') {
    registry.kvChanged(first, { t: String(Date.now()), seq: String(message.seq) }, revision++);
  }
});
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => simulator.stop())
    .then(() => process.exit(0));
});
report({ type: 'ready', url: app.url, userId: first, json: registry.get(first)?.json ?? '' });
