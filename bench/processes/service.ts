import pino from 'pino';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DiscordSimulator } from '../../src/discord/simulator/index.js';
import { rawPresenceFrom } from '../../src/presence/raw.js';
import { onMessage, report, serveBenchProcess } from '../lib/child.js';
import { markerText, nowMicros } from '../lib/fanout-marker.js';
import { serveMemoryQuestions } from '../lib/memory.js';
import { BENCH_GUILD, benchUser, benchUserId, realisticPresence } from '../lib/workload.js';

/**
 * The service as production runs it (startApp, ROLE all, embedded store) behind the simulated Discord,
 * which delivers `USERS` realistic presences through the real gateway client. With `FANOUT=1`, user 0's
 * custom status carries a marker, and each `{type: 'update', seq}` changes it the way a PRESENCE_UPDATE
 * does (registry.memberSeen with the raw presence), so normalization, the one serialization and the
 * socket fan-out all run as they do for Discord's updates. It answers `memory` (started with MEMORY_FLAGS)
 * and `sockets`: how many sockets its gateway holds and how many of them are subscribed.
 */
const users = Number(process.env.USERS ?? 1);
const fanout = process.env.FANOUT === '1';
const start = Date.now() - 30_000;
const presenceOf = (n: number, customText?: string) =>
  realisticPresence(n, customText === undefined ? { start } : { start, customText });

const simulator = new DiscordSimulator();
await simulator.start();
simulator.createGuild({
  id: BENCH_GUILD,
  name: 'Bench',
  members: Array.from({ length: users }, (_, n) => ({
    user: benchUser(n),
    presence: presenceOf(n, n === 0 && fanout ? markerText(0, 0) : undefined),
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
serveBenchProcess(async () => {
  await app.close();
  await simulator.stop();
});

const { registry } = app;
if (!registry) throw new Error('the bench service runs ROLE all');
const first = benchUserId(users - 1);
const deadline = Date.now() + 60_000;
while (registry.size < users || registry.get(first)?.presence.spotify == null) {
  if (Date.now() > deadline) throw new Error(`only ${registry.size} of ${users} users arrived`);
  await new Promise((resolve) => setTimeout(resolve, 20));
}

const user = benchUser(0);
onMessage<{ type: string; seq: number }>('update', ({ seq }) => {
  const raw = rawPresenceFrom(presenceOf(0, markerText(seq, nowMicros())));
  registry.memberSeen(BENCH_GUILD, user, raw);
});
serveMemoryQuestions();
onMessage('sockets', () => {
  const gateway = app.sockets;
  report({
    type: 'sockets',
    open: gateway?.socketCount ?? 0,
    subscribed: gateway?.subscriptions.subscriberCount ?? 0,
  });
});
report({ type: 'ready', url: app.url, userId: user.id, json: registry.get(user.id)?.json ?? '' });
