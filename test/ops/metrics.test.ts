import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../src/ops/metrics.js';
import type { RawPresence } from '../../src/presence/model.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { SocketClient } from '../socket/client.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { type Family, parseExposition, sampleValue, scrape } from '../support/prometheus.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * `GET /metrics` of the whole service against the simulated Discord: what happens (presence changes,
 * sockets, requests, bot commands, a dropped gateway connection) moves the numbers a scrape reads, and the
 * text is valid Prometheus exposition without a label value a client chose.
 */

const GUILD = '600000000000000001';
const ALICE = '80351110224678912';
const BOB = '80351110224678913';
/** Not in any guild. */
const STRANGER = '80351110224678999';

const GUILD_SETUP = (sim: Harness['simulator']) =>
  sim.createGuild({
    id: GUILD,
    name: 'Guild',
    members: [
      { user: { id: ALICE, username: 'alice' }, presence: { status: 'online' } },
      { user: { id: BOB, username: 'bob' }, presence: { status: 'idle' } },
    ],
  });

describe('GET /metrics', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ setup: GUILD_SETUP });
    await eventually(() => expect(h.app.registry.size).toBe(2));
  });
  afterAll(() => h.close());

  const metrics = () => scrape(h.base);

  it('answers Prometheus text with every metric described, process metrics included', async () => {
    const response = await fetch(`${h.base}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const families = parseExposition(await response.text());
    expect([...families.keys()].filter((name) => name.startsWith('presently_')).sort()).toEqual([
      'presently_bot_commands_total',
      'presently_cards_drawn_total',
      'presently_gateway_disconnects_total',
      'presently_gateway_events_total',
      'presently_gateway_identify_limit',
      'presently_gateway_identify_remaining',
      'presently_gateway_sessions_total',
      'presently_gateway_shard_last_event_seconds',
      'presently_gateway_shard_up',
      'presently_gateway_shards',
      'presently_gateway_shards_ready',
      'presently_history_writes_dropped_total',
      'presently_http_request_duration_seconds',
      'presently_http_requests_total',
      'presently_listed_members_unrendered',
      'presently_monitored_users',
      'presently_presence_changes_total',
      'presently_rate_limited_total',
      'presently_retention_erased_total',
      'presently_socket_buffered_bytes',
      'presently_socket_connections',
      'presently_socket_fanout_seconds',
      'presently_socket_frames_sent_total',
      'presently_socket_subscriptions',
      'presently_sse_events_sent_total',
      'presently_sse_streams',
      'presently_stale_users',
      'presently_store_operation_duration_seconds',
      'presently_store_write_thread_down',
      'presently_unique_users',
      'presently_webhook_deliveries_total',
    ]);
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(families.get(name)?.samples.length, name).toBeGreaterThan(0);
    }
    expect(sampleValue(families, 'presently_monitored_users')).toBe(2);
    expect(sampleValue(families, 'presently_unique_users')).toBe(2);
    expect(sampleValue(families, 'presently_gateway_shards')).toBe(1);
    expect(sampleValue(families, 'presently_gateway_shards_ready')).toBe(1);
    expect(sampleValue(families, 'presently_gateway_shard_up', { shard: '0' })).toBe(1);
    // Heard from within the last heartbeats (1 s apart here).
    expect(sampleValue(families, 'presently_gateway_shard_last_event_seconds', { shard: '0' })).toBeLessThan(
      5,
    );
    expect(sampleValue(families, 'presently_stale_users')).toBe(0);
    // The simulated Discord's day: 1,000 session starts, one spent.
    expect(sampleValue(families, 'presently_gateway_identify_limit')).toBe(1000);
    expect(sampleValue(families, 'presently_gateway_identify_remaining')).toBe(999);
    expect(sampleValue(families, 'presently_store_write_thread_down')).toBe(0);
    expect(sampleValue(families, 'presently_gateway_sessions_total', { kind: 'new' })).toBe(1);
    expect(sampleValue(families, 'presently_gateway_events_total', { type: 'READY' })).toBe(1);
    expect(
      sampleValue(families, 'presently_gateway_events_total', { type: 'GUILD_MEMBERS_CHUNK' }),
    ).toBeGreaterThan(0);
    expect(sampleValue(families, 'presently_presence_changes_total', { kind: 'monitored' })).toBe(2);
    // Listed, then rendered and announced (the two monitored changes above).
    expect(sampleValue(families, 'presently_listed_members_unrendered')).toBe(0);
  });

  it('a private user is still one of the unique users Discord counts', async () => {
    const key = await insertApiKey(h.app.store, BOB);
    const setVisibility = async (visibility: string) => {
      const response = await fetch(`${h.base}/v1/users/@me/privacy`, {
        method: 'PATCH',
        headers: { authorization: key, 'content-type': 'application/json' },
        body: JSON.stringify({ visibility }),
      });
      expect(response.status).toBe(200);
    };
    await setVisibility('private');
    try {
      await eventually(async () => expect((await fetch(`${h.base}/v1/users/${BOB}`)).status).toBe(404));
      expect(sampleValue(await metrics(), 'presently_unique_users')).toBe(2);
    } finally {
      await setVisibility('public');
    }
    await eventually(async () => expect((await fetch(`${h.base}/v1/users/${BOB}`)).status).toBe(200));
  });

  it('a presence change raises the change counter, and reaching a subscriber, the fan-out histogram', async () => {
    const client = await SocketClient.connect(h.base);
    await client.subscribe({ subscribe_to_id: ALICE });
    const before = await metrics();

    h.simulator.setPresence(ALICE, { status: 'dnd' });
    await client.until((frame) => frame.t === 'PRESENCE_UPDATE');
    // Bob's change reaches nobody: counted as a change, not as a fan-out.
    h.simulator.setPresence(BOB, { status: 'online' });
    await eventually(() => expect(h.app.registry.get(BOB)?.presence.discord_status).toBe('online'));

    const after = await metrics();
    const delta = (name: string, labels?: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta('presently_presence_changes_total', { kind: 'updated' })).toBe(2);
    expect(delta('presently_socket_fanout_seconds_count')).toBe(1);
    expect(delta('presently_socket_frames_sent_total')).toBe(1);
    expect(delta('presently_gateway_events_total', { type: 'PRESENCE_UPDATE' })).toBe(2);
    client.ws.close();
  });

  it('sockets and what they subscribe to show in the gauges, and leave them when they close', async () => {
    const one = await SocketClient.connect(h.base);
    const several = await SocketClient.connect(h.base);
    const everyone = await SocketClient.connect(h.base);
    const idle = await SocketClient.connect(h.base);
    await one.subscribe({ subscribe_to_id: ALICE });
    await several.subscribe({ subscribe_to_ids: [ALICE, BOB] });
    await everyone.subscribe({ subscribe_to_all: true });

    await eventually(async () => {
      const families = await metrics();
      expect(sampleValue(families, 'presently_socket_connections')).toBe(4);
      expect(sampleValue(families, 'presently_socket_subscriptions', { kind: 'id' })).toBe(1);
      expect(sampleValue(families, 'presently_socket_subscriptions', { kind: 'ids' })).toBe(1);
      expect(sampleValue(families, 'presently_socket_subscriptions', { kind: 'all' })).toBe(1);
    });

    for (const client of [one, several, everyone, idle]) client.ws.close();
    await eventually(async () => {
      const families = await metrics();
      expect(sampleValue(families, 'presently_socket_connections')).toBe(0);
      for (const kind of ['id', 'ids', 'all']) {
        expect(sampleValue(families, 'presently_socket_subscriptions', { kind })).toBe(0);
      }
    });
  });

  it('counts requests by route pattern and status, the fast path included, never by the URL sent', async () => {
    const before = await metrics();
    const requests: Array<[string, number]> = [
      [`/v1/users/${ALICE}`, 200],
      [`/v1/users/${ALICE}?cache=bust`, 200],
      [`/v1/users/${STRANGER}`, 404],
      [`/v1/users/${STRANGER}/stats`, 200],
      ['/v1/users/not-an-id', 400],
      [`/wp-admin/${STRANGER}/setup.php?x=1`, 404],
    ];
    for (const [path, status] of requests)
      expect((await fetch(`${h.base}${path}`)).status, path).toBe(status);
    const after = await metrics();
    const delta = (labels: Record<string, string>) =>
      sampleValue(after, 'presently_http_requests_total', labels) -
      sampleValue(before, 'presently_http_requests_total', labels);

    // The two 200s are the fast path's; the 404 of a user not monitored is Fastify's, on the same route.
    expect(delta({ method: 'GET', route: '/v1/users/:id', status: '200' })).toBe(2);
    expect(delta({ method: 'GET', route: '/v1/users/:id', status: '404' })).toBe(1);
    expect(delta({ method: 'GET', route: '/v1/users/:id', status: '400' })).toBe(1);
    expect(delta({ method: 'GET', route: '/v1/users/:id/stats', status: '200' })).toBe(1);
    expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    const durations = (labels: Record<string, string>) =>
      sampleValue(after, 'presently_http_request_duration_seconds_count', labels) -
      sampleValue(before, 'presently_http_request_duration_seconds_count', labels);
    expect(durations({ method: 'GET', route: '/v1/users/:id/stats' })).toBe(1);
    // The stats route read the store, and the read was timed.
    expect(
      sampleValue(after, 'presently_store_operation_duration_seconds_count', {
        backend: 'sqlite',
        operation: 'history.stats',
      }),
    ).toBeGreaterThan(0);
    expectNoClientChosenLabels(after);
  });

  it('counts a bot command by its name, and an unknown one as unknown', async () => {
    const before = await metrics();
    for (const content of ['?help', '?nonsense']) {
      const sent = h.simulator.sendMessage({ author: ALICE, content });
      await h.simulator.waitForMessage((message) => message.message_reference?.message_id === sent.id);
    }
    const after = await metrics();
    for (const command of ['help', 'unknown']) {
      expect(
        sampleValue(after, 'presently_bot_commands_total', { command }) -
          sampleValue(before, 'presently_bot_commands_total', { command }),
        command,
      ).toBe(1);
    }
    expectNoClientChosenLabels(after);
  });

  it('counts a dropped gateway connection and the session resumed after it', async () => {
    const before = await metrics();
    const resumes = h.simulator.resumeCount;
    h.simulator.faults.dropConnection();
    await eventually(() => expect(h.simulator.resumeCount).toBe(resumes + 1));
    await eventually(async () => {
      const after = await metrics();
      const delta = (name: string, labels?: Record<string, string>) =>
        sampleValue(after, name, labels) - sampleValue(before, name, labels);
      expect(delta('presently_gateway_sessions_total', { kind: 'resumed' })).toBe(1);
      expect(delta('presently_gateway_sessions_total', { kind: 'new' })).toBe(0);
      // Cut without a close frame: the WebSocket's 1006.
      expect(delta('presently_gateway_disconnects_total', { code: '1006' })).toBe(1);
      expect(sampleValue(after, 'presently_gateway_shards_ready')).toBe(1);
    });
  });
});

/** Label values come from a fixed set (route patterns, names of ours or Discord's): no id, path or query. */
function expectNoClientChosenLabels(families: Map<string, Family>): void {
  for (const family of families.values()) {
    for (const sample of family.samples) {
      for (const [label, value] of Object.entries(sample.labels)) {
        const where = `${sample.name}{${label}="${value}"}`;
        expect(value, where).not.toMatch(/\d{17,20}|\?|not-an-id|wp-admin/);
        if (label === 'route') expect(value, where).toMatch(/^(unmatched|(\/[\w@.-]+|\/:\w+)+)$/);
      }
    }
  }
}

describe('METRICS_TOKEN', () => {
  const TOKEN = 'scrape-me-0123456789abcdef';
  let h: Harness;
  const lines: string[] = [];

  beforeAll(async () => {
    h = await startHarness({
      env: { METRICS_TOKEN: TOKEN },
      logger: pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) }),
    });
  });
  afterAll(() => h.close());

  it('asks for the token as a Bearer credential, in the error envelope, and never logs it', async () => {
    for (const authorization of [
      undefined,
      TOKEN,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      'Bearer ',
    ]) {
      const response = await fetch(`${h.base}/metrics`, {
        headers: authorization === undefined ? {} : { authorization },
      });
      expect(response.status, String(authorization)).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await response.json()).toEqual({
        success: false,
        error: { code: 'invalid_metrics_token', message: expect.stringContaining('Bearer') },
      });
    }
    const families = await scrape(h.base, { headers: { authorization: `bearer ${TOKEN}` } });
    expect(
      sampleValue(families, 'presently_http_requests_total', {
        method: 'GET',
        route: '/metrics',
        status: '401',
      }),
    ).toBe(5);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(TOKEN.slice(4));
  });

  it('leaves health and readiness open', async () => {
    expect((await fetch(`${h.base}/v1/health`)).status).toBe(200);
    await eventually(async () => expect((await fetch(`${h.base}/v1/ready`)).status).toBe(200));
  });
});

describe('rate limits', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ setup: GUILD_SETUP, env: { RATE_LIMIT_READ: '3' } });
    await eventually(() => expect(h.app.registry.size).toBe(2));
  });
  afterAll(() => h.close());

  it('count refused reads; /metrics, /v1/health and /v1/ready have a budget of their own', async () => {
    await inOneReadWindow();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await fetch(`${h.base}/v1/users/${ALICE}`)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    for (const path of ['/v1/health', '/v1/ready']) {
      const response = await fetch(`${h.base}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('ratelimit-limit'), path).toBe('3');
    }
    // The third request of the probes' budget.
    const families = await scrape(h.base);
    expect(sampleValue(families, 'presently_rate_limited_total', { limit: 'read' })).toBe(2);
    expect(
      sampleValue(families, 'presently_http_requests_total', {
        method: 'GET',
        route: '/v1/users/:id',
        status: '429',
      }),
    ).toBe(2);
    expect(
      sampleValue(families, 'presently_http_requests_total', {
        method: 'GET',
        route: '/v1/users/:id',
        status: '200',
      }),
    ).toBe(3);
  });
});

describe('presently_store_write_thread_down', () => {
  it('reads 1 once the SQLite write thread has died, as the app tells it, and 0 before', async () => {
    const metrics = new Metrics();
    let down = false;
    metrics.observe({ monitoredUsers: () => 0, storeWriteThreadDown: () => down });
    const read = async () =>
      sampleValue(parseExposition((await metrics.scrape()).text), 'presently_store_write_thread_down');
    expect(await read()).toBe(0);
    down = true;
    expect(await read()).toBe(1);
  });
});

describe('presently_gateway_identify_remaining and _limit', () => {
  it('read the gateway’s IDENTIFY budget once it is known, and have no sample before (or with no gateway)', async () => {
    const metrics = new Metrics();
    const families = async () => parseExposition((await metrics.scrape()).text);
    const names = ['presently_gateway_identify_remaining', 'presently_gateway_identify_limit'];
    for (const name of names)
      expect((await families()).get(name)).toMatchObject({ type: 'gauge', samples: [] });
    let budget: { total: number; remaining: number } | null = null;
    metrics.identifyBudgetFrom(() => budget);
    for (const name of names) expect((await families()).get(name)?.samples).toEqual([]);
    budget = { total: 1000, remaining: 87 };
    expect(sampleValue(await families(), 'presently_gateway_identify_remaining')).toBe(87);
    expect(sampleValue(await families(), 'presently_gateway_identify_limit')).toBe(1000);
  });
});

describe('presently_listed_members_unrendered', () => {
  it('counts the members a listing brought that are not rendered yet, down to 0 as they are', async () => {
    const registry = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: { applicationIds: new Set(), names: new Set() },
    });
    const metrics = new Metrics();
    metrics.observe({ monitoredUsers: () => registry.size, pendingMembers: () => registry.pendingCount });
    const read = async (name: string) => sampleValue(parseExposition((await metrics.scrape()).text), name);
    const offline: RawPresence = { status: 'offline', client_status: {}, activities: [] };
    for (let n = 0; n < 3; n++) {
      registry.memberListed('100000000000000001', { id: String(80351110224678912n + BigInt(n)) }, offline);
    }
    expect(await read('presently_listed_members_unrendered')).toBe(3);
    expect(await read('presently_monitored_users')).toBe(3);
    registry.renderPending(2);
    expect(await read('presently_listed_members_unrendered')).toBe(1);
    registry.get('80351110224678914');
    expect(await read('presently_listed_members_unrendered')).toBe(0);
  });
});
