import { GatewayDispatchEvents } from 'discord-api-types/v10';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { PresenceChange } from '../presence/registry/registry.js';
import type { ShardReport } from './readiness.js';

/** Where a subscribed socket's presences come from: one id, a list, or everyone (Lanyard's op 2). */
export type SubscriptionKind = 'id' | 'ids' | 'all';
export type StoreBackend = 'sqlite' | 'postgres' | 'redis';
/**
 * Which budget refused: per-IP reads, KV writes, sockets per IP, sockets of the process, connections per IP,
 * a socket's commands, a socket's frames, event streams a client opened, a user's bot commands.
 */
export type RateLimit =
  | 'read'
  | 'write'
  | 'sockets_per_ip'
  | 'max_sockets'
  | 'max_subscriptions'
  | 'connections_per_ip'
  | 'socket_commands'
  | 'socket_frames'
  | 'stream_opens'
  | 'bot_commands';
/**
 * What became of webhook events: `delivered`; `retried`, an attempt failed and another is due; `failed`,
 * given up; `collapsed`, replaced in the backlog by a newer event of its type; `dropped`, the backlog was
 * full or the webhook gone.
 */
export type WebhookOutcome = 'delivered' | 'retried' | 'failed' | 'collapsed' | 'dropped';
/** `new`: READY after IDENTIFY (the first session included); `resumed`: RESUMED, nothing lost. */
export type GatewaySessionKind = 'new' | 'resumed';

/** What the scrape reads from the parts of the app that exist on this node; absent parts report nothing. */
export interface MetricSources {
  monitoredUsers(): number;
  /** Monitored users, each once (see unique-users.ts); absent: 0. */
  uniqueUsers?(): number;
  sockets?(): { open: number; subscribed: Record<SubscriptionKind, number> };
  /** Bytes handed to the sockets that their connections have not taken yet, all sockets together. */
  socketBufferedBytes?(): number;
  /** Open Server-Sent Events streams. */
  sseStreams?(): number;
  gatewayShards?(): { total: number; ready: number };
  /** Each shard's state and when it last heard from Discord. */
  shardReports?(): ShardReport[];
  /** Users whose presence is stale (`PresenceRegistry.staleCount`). */
  staleUsers?(): number;
  /** The SQLite file's write thread has died (its writes are the event loop's from then on). */
  storeWriteThreadDown?(): boolean;
  /** Pending members: served, not rendered and announced yet (`PresenceRegistry.pendingCount`). */
  pendingMembers?(): number;
}

/** Discord's daily IDENTIFY budget as the gateway knows it; null until it has been read. */
export type IdentifyBudgetSource = () => { total: number; remaining: number } | null;

/** The route label of requests that matched no route, so a scanner's URLs never become label values. */
export const UNMATCHED_ROUTE = 'unmatched';
/** The route the fast path answers (src/http/fast-read.ts): the label Fastify would give it. */
const FAST_READ_LABELS = { method: 'GET', route: '/v1/users/:id', status: '200' } as const;

/** Dispatch types Discord documents; anything else is counted as `other`, so a label never takes a made-up value. */
const DISPATCH_TYPES: ReadonlySet<string> = new Set(Object.values(GatewayDispatchEvents));

const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const FANOUT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

let processRegistry: Registry | undefined;

/**
 * A gauge read when scraped that has no sample while its value is not known (prom-client's own gauges
 * without labels always show one, 0 by default), so that "unknown" never reads as 0.
 */
class GaugeWhenKnown extends Gauge {
  constructor(
    configuration: { name: string; help: string; registers: Registry[] },
    private readonly read: () => number | null,
  ) {
    super(configuration);
  }

  override async get(): ReturnType<Gauge['get']> {
    const metric = await super.get();
    const value = this.read();
    return { ...metric, values: value === null ? [] : [{ labels: {}, value }] };
  }
}

/**
 * prom-client's process metrics (CPU, memory, heap, event loop lag, GC, handles), registered once per
 * process: they describe the process, and each registration starts an event-loop-delay timer that runs
 * for good, so tests that start many apps in one process would pile them up.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * The metrics of one app, in a registry of its own (tests run several apps in one process), exposed at
 * `GET /metrics`. The hot paths (gateway dispatches, presence changes, socket frames, fast-path reads)
 * only add to plain numbers here; they are handed to prom-client when a scrape reads them, so counting
 * costs them no label hashing and no allocation.
 */
export class Metrics {
  readonly registry: Registry;
  private readonly own = new Registry();
  private sources: MetricSources = { monitoredUsers: () => 0 };
  private identifyBudget: IdentifyBudgetSource = () => null;

  private readonly dispatches = new Map<string, number>();
  private readonly changes = { monitored: 0, updated: 0, unmonitored: 0 };
  private framesSent = 0;
  private sseEvents = 0;
  private fastReads = 0;

  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route'>;
  private readonly fanOutDuration: Histogram<never>;
  private readonly storeDuration: Histogram<'backend' | 'operation'>;
  private readonly gatewaySessions: Counter<'kind'>;
  private readonly gatewayDisconnects: Counter<'code'>;
  private readonly botCommands: Counter<'command'>;
  private readonly rateLimits: Counter<'limit'>;
  private readonly cardsDrawn: Counter<'format'>;
  private readonly historyDropped: Counter;
  private readonly webhookEvents: Counter<'outcome'>;
  private readonly retentionErasures: Counter;

  constructor() {
    const registers = [this.own];
    const self = this;
    /** A gauge read from the app when scraped. */
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    };
    const histogram = <L extends string>(name: string, help: string, labels: L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames: labels, buckets, registers });
    gauge(
      'presently_monitored_users',
      'Users sharing a guild with the bot, online or offline, as this node serves or sees them.',
      () => this.sources.monitoredUsers(),
    );
    gauge(
      'presently_unique_users',
      'Monitored users, each once: across every node where the shared presences are replicated, else this node. Discord reviews privileged intents past 10,000.',
      () => this.sources.uniqueUsers?.() ?? 0,
    );
    gauge('presently_socket_connections', 'Open WebSocket connections on /socket.', () => {
      return this.sources.sockets?.().open ?? 0;
    });
    gauge(
      'presently_socket_buffered_bytes',
      'Bytes written to open sockets that their connections have not taken yet: what slow readers hold here.',
      () => this.sources.socketBufferedBytes?.() ?? 0,
    );
    new Gauge({
      name: 'presently_socket_subscriptions',
      help: 'Open sockets by what they subscribed to: one id, a list of ids, or every user.',
      labelNames: ['kind'],
      registers,
      collect() {
        const subscribed = self.sources.sockets?.().subscribed ?? { id: 0, ids: 0, all: 0 };
        for (const [kind, count] of Object.entries(subscribed)) this.set({ kind }, count);
      },
    });
    new Counter({
      name: 'presently_socket_frames_sent_total',
      help: 'Frames handed to sockets: hello, INIT_STATE and PRESENCE_UPDATE.',
      registers,
      collect() {
        this.reset();
        this.inc(self.framesSent);
      },
    });
    gauge(
      'presently_sse_streams',
      'Open Server-Sent Events streams (/v1/users/:id/events, /v1/events).',
      () => {
        return this.sources.sseStreams?.() ?? 0;
      },
    );
    new Counter({
      name: 'presently_sse_events_sent_total',
      help: 'Presence events handed to Server-Sent Events streams: the first ones of a stream, replays and changes.',
      registers,
      collect() {
        this.reset();
        this.inc(self.sseEvents);
      },
    });
    this.fanOutDuration = histogram(
      'presently_socket_fanout_seconds',
      "Time from a presence change reaching the socket gateway to its frames handed to every subscriber's socket.",
      [],
      FANOUT_BUCKETS,
    );
    new Counter({
      name: 'presently_presence_changes_total',
      help: 'Presence changes emitted: a user becoming monitored, their presence changing, or no longer monitored.',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        for (const [kind, count] of Object.entries(self.changes)) this.inc({ kind }, count);
      },
    });
    new Counter({
      name: 'presently_gateway_events_total',
      help: 'Dispatches received from the Discord gateway, by dispatch type.',
      labelNames: ['type'],
      registers,
      collect() {
        this.reset();
        for (const [type, count] of self.dispatches) this.inc({ type }, count);
      },
    });
    this.gatewaySessions = new Counter({
      name: 'presently_gateway_sessions_total',
      help: 'Gateway sessions established per shard: new (READY after IDENTIFY, the first included) or resumed.',
      labelNames: ['kind'],
      registers,
    });
    this.gatewayDisconnects = new Counter({
      name: 'presently_gateway_disconnects_total',
      help: 'Gateway connections lost or closed by Discord, by close code (1006: dropped without a close frame).',
      labelNames: ['code'],
      registers,
    });
    gauge('presently_gateway_shards', 'Gateway shards this node runs.', () => {
      return this.sources.gatewayShards?.().total ?? 0;
    });
    gauge(
      'presently_gateway_shards_ready',
      'Gateway shards of this node with a live session (READY or RESUMED).',
      () => this.sources.gatewayShards?.().ready ?? 0,
    );
    new Gauge({
      name: 'presently_gateway_shard_up',
      help: 'Per shard of this node: 1 while it has a live session (READY or RESUMED), 0 while it resumes or identifies.',
      labelNames: ['shard'],
      registers,
      collect() {
        this.reset();
        for (const shard of self.sources.shardReports?.() ?? []) {
          this.set({ shard: String(shard.id) }, shard.state === 'ready' ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'presently_gateway_shard_last_event_seconds',
      help: 'Per shard of this node: seconds since Discord last sent it a dispatch or a heartbeat acknowledgement; no sample before any.',
      labelNames: ['shard'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const { id, lastEventAt } of self.sources.shardReports?.() ?? []) {
          if (lastEventAt !== null) this.set({ shard: String(id) }, Math.max(0, now - lastEventAt) / 1000);
        }
      },
    });
    gauge(
      'presently_stale_users',
      'Users this node sees only through shards that lost their session, until Discord reports them again: their presences say stale.',
      () => this.sources.staleUsers?.() ?? 0,
    );
    /** A gauge of the IDENTIFY budget: no sample where there is no gateway, or before it was read. */
    const identifyGauge = (
      name: string,
      help: string,
      read: (budget: { total: number; remaining: number }) => number,
    ) =>
      new GaugeWhenKnown({ name, help, registers }, () => {
        const budget = this.identifyBudget();
        return budget ? read(budget) : null;
      });
    identifyGauge(
      'presently_gateway_identify_remaining',
      "IDENTIFYs left in Discord's daily session start limit: as last read from GET /gateway/bot, less those sent since. Under 10% of the limit the gateway waits for the reset.",
      (budget) => budget.remaining,
    );
    identifyGauge(
      'presently_gateway_identify_limit',
      "IDENTIFYs Discord's daily session start limit allows (session_start_limit.total; 1,000 for most bots).",
      (budget) => budget.total,
    );
    gauge(
      'presently_store_write_thread_down',
      'The SQLite write thread has died: history and profiles are written on the event loop (1), or not (0).',
      () => (this.sources.storeWriteThreadDown?.() ? 1 : 0),
    );
    gauge(
      'presently_listed_members_unrendered',
      'Members of a listing served but not rendered and announced yet (to history, webhooks, subscribers).',
      () => this.sources.pendingMembers?.() ?? 0,
    );
    this.httpRequests = new Counter({
      name: 'presently_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
      collect() {
        // Presence reads the fast path answered since the last scrape.
        if (self.fastReads > 0) this.inc(FAST_READ_LABELS, self.fastReads);
        self.fastReads = 0;
      },
    });
    this.httpDuration = histogram(
      'presently_http_request_duration_seconds',
      'Time from a request arriving to its answer sent, by method and route pattern (fast-path presence reads left out).',
      ['method', 'route'],
      HTTP_BUCKETS,
    );
    this.storeDuration = histogram(
      'presently_store_operation_duration_seconds',
      'Time a store operation took, by backend and operation.',
      ['backend', 'operation'],
      STORE_BUCKETS,
    );
    this.botCommands = new Counter({
      name: 'presently_bot_commands_total',
      help: 'Bot commands handled, by command ("unknown" for a name the bot does not know).',
      labelNames: ['command'],
      registers,
    });
    this.rateLimits = new Counter({
      name: 'presently_rate_limited_total',
      help: 'Requests, connections and socket commands refused by a limit: read, write, connections_per_ip, sockets_per_ip, max_sockets, max_subscriptions, socket_commands, socket_frames, stream_opens or bot_commands.',
      labelNames: ['limit'],
      registers,
    });
    this.cardsDrawn = new Counter({
      name: 'presently_cards_drawn_total',
      help: 'Cards rendered, by format (svg, png); requests for a card already drawn that second are answered from it.',
      labelNames: ['format'],
      registers,
    });
    this.historyDropped = new Counter({
      name: 'presently_history_writes_dropped_total',
      help: 'History writes dropped because more than HISTORY_PENDING_MAX waited while the store could not take them.',
      registers,
    });
    this.webhookEvents = new Counter({
      name: 'presently_webhook_deliveries_total',
      help: 'Webhook events by outcome: delivered, retried (an attempt failed), failed (given up), collapsed (replaced by a newer one while waiting) or dropped.',
      labelNames: ['outcome'],
      registers,
    });
    this.retentionErasures = new Counter({
      name: 'presently_retention_erased_total',
      help: 'Users whose data was erased by retention: gone from every monitored guild for RETENTION_DAYS.',
      registers,
    });
    this.registry = Registry.merge([this.own, processMetrics()]);
  }

  /** The parts a scrape reads: called once the app has built them. */
  observe(sources: MetricSources): void {
    this.sources = sources;
  }

  /** Where the IDENTIFY budget gauges read from: the gateway, once it exists. */
  identifyBudgetFrom(read: IdentifyBudgetSource): void {
    this.identifyBudget = read;
  }

  /** The exposition text, and its content type. */
  async scrape(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }

  gatewayDispatch(type: string): void {
    const known = DISPATCH_TYPES.has(type) ? type : 'other';
    this.dispatches.set(known, (this.dispatches.get(known) ?? 0) + 1);
  }

  gatewaySession(kind: GatewaySessionKind): void {
    this.gatewaySessions.inc({ kind });
  }

  gatewayDisconnect(code: number): void {
    this.gatewayDisconnects.inc({ code: String(code) });
  }

  presenceChanged(kind: PresenceChange['kind']): void {
    this.changes[kind]++;
  }

  frameSent(): void {
    this.framesSent++;
  }

  sseEventsSent(count: number): void {
    this.sseEvents += count;
  }

  fannedOut(seconds: number): void {
    this.fanOutDuration.observe(seconds);
  }

  fastRead(): void {
    this.fastReads++;
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route }, seconds);
  }

  storeOperation(backend: StoreBackend, operation: string, seconds: number): void {
    this.storeDuration.observe({ backend, operation }, seconds);
  }

  botCommand(command: string): void {
    this.botCommands.inc({ command });
  }

  rateLimited(limit: RateLimit): void {
    this.rateLimits.inc({ limit });
  }

  cardDrawn(format: 'svg' | 'png'): void {
    this.cardsDrawn.inc({ format });
  }

  historyWritesDropped(writes: number): void {
    this.historyDropped.inc(writes);
  }

  webhookDeliveries(outcome: WebhookOutcome, count = 1): void {
    if (count > 0) this.webhookEvents.inc({ outcome }, count);
  }

  retentionErased(users: number): void {
    if (users > 0) this.retentionErasures.inc(users);
  }
}
