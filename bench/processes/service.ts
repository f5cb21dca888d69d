import '../../src/ops/tick-shape.js';
import pino from 'pino';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { rawPresenceFrom } from '../../src/presence/normalize/raw.js';
import { type Message, onMessage, report, serveBenchProcess } from '../lib/child.js';
import { markerText, nowMicros } from '../lib/fanout-marker.js';
import { kvBytes, kvDigest } from '../lib/kv-at-cap.js';
import { serveMemoryQuestions } from '../lib/memory.js';
import { startProductionApp } from '../lib/production-app.js';
import { BENCH_GUILD, benchUser, benchUserId, realisticPresence } from '../lib/workload.js';

/**
 * The service as production runs it (startApp, ROLE all, embedded store) against a simulated Discord in
 * another process (bench/processes/discord.ts with `WORKLOAD=realistic`; TOKEN, API_URL, CDN_URL), which
 * delivers USERS bench users (1 unless told) with realistic presences through the real gateway client.
 * START is when their tracks started (epoch ms), the same in both processes. Each `{type: 'update', seq}`
 * (fanout) sets user 0's custom status to a marker the way a PRESENCE_UPDATE does (registry.memberSeen with
 * the raw presence), so normalization, the one serialization and the socket fan-out all run as they do for
 * Discord's updates; `user: n` sets bench user n's instead (sse). It answers `memory` (started with MEMORY_FLAGS) and `sockets`: how many sockets its
 * gateway holds, how many of them are subscribed, and whether the subscriptions of sockets gone are all let go.
 *
 * The per-address limits are off, so one load generator measures the service rather than its limits;
 * with DEFAULT_LIMITS=1 every limit is left as a public instance runs it (hostile, rest-read), and TRUST_PROXY
 * says whose X-Forwarded-For names the client. API_KEY_USER=n puts a
 * live API key for bench user n in the store, as `?apikey` would, and sends it in `ready`; `{type: 'kv',
 * userId}` answers with the fingerprint (bench/lib/kv-at-cap.ts) and size of that user's stored KV.
 */
const users = Number(process.env.USERS ?? 1);
const start = Number(process.env.START);
if (!Number.isSafeInteger(start)) {
  throw new Error('START (epoch ms) is required: bench/lib/service.ts sets it');
}

const noLimits = {
  SOCKETS_PER_IP: '0',
  CONNECTIONS_PER_IP: '0',
  RATE_LIMIT_READ: '0',
  RATE_LIMIT_WRITE: '0',
};
const app = await startProductionApp(
  {
    DATABASE_URL: 'sqlite::memory:',
    ...(process.env.DEFAULT_LIMITS === '1' ? {} : noLimits),
    ...(process.env.TRUST_PROXY === undefined ? {} : { TRUST_PROXY: process.env.TRUST_PROXY }),
  },
  { logger: pino({ level: 'warn' }) },
);
serveBenchProcess(() => app.close());

const { registry } = app;
if (!registry) throw new Error('the bench service runs ROLE all');
const user = benchUser(0);
const last = benchUserId(users - 1);
const deadline = Date.now() + 60_000;
while (registry.size < users || registry.get(last)?.presence.spotify == null) {
  if (Date.now() > deadline) throw new Error(`only ${registry.size} of ${users} users arrived`);
  await new Promise((resolve) => setTimeout(resolve, 20));
}

onMessage<{ type: string; seq: number; user?: number }>('update', ({ seq, user: n = 0 }) => {
  const raw = rawPresenceFrom(realisticPresence(n, { start, customText: markerText(seq, nowMicros()) }));
  registry.memberSeen(BENCH_GUILD, n === 0 ? user : benchUser(n), raw);
});
serveMemoryQuestions();
onMessage('sockets', () => {
  const gateway = app.sockets;
  report({
    type: 'sockets',
    open: gateway?.socketCount ?? 0,
    subscribed: gateway?.subscriptions.subscriberCount ?? 0,
    tidied: gateway?.subscriptions.tidied ?? true,
  });
});
onMessage<Message & { userId: string }>('kv', async ({ userId }) => {
  const { kv } = await app.store.kv.getKv(userId);
  report({ type: 'kv', digest: kvDigest(kv), bytes: kvBytes(kv) });
});
let apiKey: string | undefined;
if (process.env.API_KEY_USER !== undefined) {
  apiKey = generateApiKey();
  await app.store.apiKeys.replaceKey(
    benchUserId(Number(process.env.API_KEY_USER)),
    hashApiKey(apiKey),
    Date.now(),
  );
}
report({ type: 'ready', url: app.url, userId: user.id, json: registry.get(user.id)?.json ?? '', apiKey });
