import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AccountExport } from './account/export.js';
import type { RetentionOverrides, RetentionSweep } from './account/retention.js';
import { AccountService } from './account/service.js';
import { LocalBus } from './bus/local.js';
import type { Bus } from './bus/ports.js';
import { type ClusterLink, connectCluster } from './cluster/connect.js';
import { ReplicaSync } from './cluster/replica-sync.js';
import type { Config } from './config.js';
import { type Demo, startDemo } from './demo/index.js';
import { DemoCommandError } from './demo/try-bot.js';
import type { DiscordGateway } from './discord/gateway.js';
import { intentsFor } from './discord/intents.js';
import { type DiscordEndpoints, type DiscordSide, startDiscordSide } from './discord/side.js';
import { RECENT_STATUS_MS, RecentStatuses } from './history/recent-status.js';
import type { HistoryRecorder } from './history/recorder.js';
import { instanceFacts } from './http/page/legal.js';
import { buildHttpServer } from './http/server.js';
import { ReadTokenService } from './keys/read-tokens.js';
import { ApiKeyService } from './keys/service.js';
import { KvService } from './kv/service.js';
import { SocketSlots } from './limits/socket-slots.js';
import { SubscriptionCap } from './limits/subscription-cap.js';
import { clientAddressOf } from './net/client-address.js';
import { trustFunction } from './net/trust-proxy.js';
import { Metrics, type StoreBackend } from './ops/metrics.js';
import { gatewayCheck, type ReadinessCheck, redisCheck, replicaCheck, storeCheck } from './ops/readiness.js';
import './ops/tick-shape.js';
import { timeStore } from './ops/timed-store.js';
import { watchUniqueUsers } from './ops/unique-users.js';
import { musicApps } from './presence/normalize/music-apps.js';
import { recordsHistory } from './presence/privacy.js';
import type { PresenceRegistry, PresenceSource } from './presence/registry/registry.js';
import { PresenceReplica } from './presence/registry/replica.js';
import { PrivacyDirectory } from './privacy/directory.js';
import { PublicView } from './privacy/public-view.js';
import { PrivacyService } from './privacy/service.js';
import { redactUrl } from './redact-url.js';
import { SocketGateway, type SocketGatewayOptions } from './socket/gateway.js';
import { SseHub, type SseHubOptions } from './sse/hub.js';
import type { Store } from './store/ports.js';
import { openPostgresStore } from './store/postgres/index.js';
import { openRedisStore } from './store/redis/index.js';
import { openSqliteStore } from './store/sqlite/index.js';
import { readVersionInfo } from './version.js';
import { busReportingKvWrites } from './webhooks/kv-writes-bus.js';
import { startWebhooks, type WebhookOptions, type WebhookSide } from './webhooks/side.js';

export interface App {
  readonly config: Config;
  readonly http: FastifyInstance;
  /** What REST, sockets and cards serve: the registry on one machine, the replica of shared state with Redis. */
  readonly view: PresenceSource;
  /** The Discord side (ROLE all or ingest); null on an API node. */
  readonly registry: PresenceRegistry | null;
  readonly gateway: DiscordGateway | null;
  readonly history: HistoryRecorder | null;
  /** Retention's sweep (ROLE all or ingest); null on an API node. */
  readonly retention: RetentionSweep | null;
  /** The socket gateway (ROLE all or api); null on an ingest node. */
  readonly sockets: SocketGateway | null;
  /** The Server-Sent Events streams (ROLE all or api); null on an ingest node. */
  readonly sse: SseHub | null;
  readonly store: Store;
  readonly bus: Bus;
  /** Webhooks: every role keeps the service and delivers. */
  readonly webhooks: WebhookSide;
  /** The built-in simulated Discord and its users, in demo mode. */
  readonly demo: Demo | null;
  /** Where the HTTP server listens, e.g. http://127.0.0.1:4001 */
  readonly url: string;
  /** Stops accepting, closes the gateway and the store. Safe to call twice. */
  close(): Promise<void>;
}

export interface AppOptions {
  logger: Logger;
  /** A close from Discord that reconnecting cannot fix; main ends the process. */
  onFatal?(code: number, reason: string): void;
  /** Tests shorten the socket heartbeat and shrink the send buffer cap to see them act. */
  socket?: Pick<SocketGatewayOptions, 'heartbeatIntervalMs' | 'sendBufferCapBytes' | 'pacedBytesPerSecond'>;
  /** Tests shorten the keep-alive and stall times, shrink the caps and the replay ring. */
  sse?: Omit<SseHubOptions, 'source' | 'ownSource' | 'slots' | 'logger' | 'metrics' | 'membersKnown'>;
  /** Tests lengthen the history batch interval to hold changes queued. */
  history?: { flushMs?: number };
  /** Tests drive retention's clock and timing. */
  retention?: RetentionOverrides;
  /** Tests shorten the wait before a slow command's answer is deferred. */
  bot?: { deferAfterMs?: number };
  /**
   * Tests shorten how long a disconnected shard's users stay current (STALE_AFTER_DISCONNECT_MS), and
   * identify without pacing (IDENTIFY_INTERVAL_MS).
   */
  gateway?: { staleAfterMs?: number; identifyIntervalMs?: number };
  /** Tests answer the refusals of abusive clients at once (ABUSE_REFUSAL_DELAY_MS). */
  abuseRefusalDelayMs?: number;
  /** Tests resolve host names, shorten the delivery timeout and drive the worker's time. */
  webhooks?: WebhookOptions;
}

/** How long a KV write on an API node waits for its presence to show the change before answering. */
export const KV_VISIBLE_TIMEOUT_MS = 2_000;

/**
 * The composition root: builds the store and the bus (embedded, or Redis when REDIS_URL is set), the
 * Discord side (ROLE all or ingest: gateway, registry, history, bot) and the serving side (ROLE all or
 * api: REST, sockets, cards), then listens.
 */
export async function startApp(config: Config, options: AppOptions): Promise<App> {
  const { logger } = options;
  const metrics = new Metrics();
  const cleanups: Array<() => Promise<void> | void> = [];
  const close = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        logger.warn({ err: error }, 'error while shutting down');
      }
    }
  };

  try {
    const cluster =
      config.redisUrl === null
        ? null
        : connectCluster(config.redisUrl, config.redisPrefix, logger, nodeName(config));
    if (cluster) cleanups.push(() => cluster.close());
    if (cluster) await cluster.ready();
    const { store, background, backend, writeThreadDown } = await openStores(config, cluster, logger);
    cleanups.push(() => store.close());
    for (const timed of new Set([store, background])) timeStore(timed, backend, metrics);
    const bus: Bus = cluster?.bus ?? new LocalBus();
    cleanups.push(() => bus.close());
    if (cluster) {
      logger.info(
        { role: config.role, shards: config.shardIds ?? 'all' },
        backend === 'postgres'
          ? 'scale-out mode: live state in Redis, durable data in PostgreSQL'
          : 'scale-out mode: shared state in Redis',
      );
    }

    // Read before anything is rendered or served: a presence is never shown as its owner hid it.
    const privacyDirectory = new PrivacyDirectory(background.privacy);
    await privacyDirectory.load();
    cleanups.push(() => privacyDirectory.close());
    const rereadPrivacy = (work: Promise<void>) =>
      work.catch((error: unknown) => logger.warn({ err: error }, 'could not read privacy settings again'));
    bus.subscribe('privacy.changed', ({ userId }) => void rereadPrivacy(privacyDirectory.refresh(userId)));
    // Changes announced while this node could not hear the bus.
    cluster?.bus.onResubscribed(() => void rereadPrivacy(privacyDirectory.load()));
    const privacy = new PrivacyService(store.privacy, bus, privacyDirectory);

    const webhooks = await startWebhooks({
      config,
      logger,
      options: options.webhooks,
      store,
      background,
      bus,
      cluster,
      cleanups,
      metrics,
      privacy: privacyDirectory,
    });
    const replica = cluster && config.role !== 'ingest' ? new PresenceReplica() : null;
    const replicaSync = cluster && replica ? new ReplicaSync({ replica, ...cluster, logger }) : null;
    const keys = new ApiKeyService(store.apiKeys);
    const readTokens = new ReadTokenService(store.readTokens, bus, logger);
    const kv = new KvService(
      store.kv,
      busReportingKvWrites(bus, webhooks.feed.kvWritten),
      config.kvMaxBytes,
      replicaSync
        ? (userId, revision) => replicaSync.waitForKv(userId, revision, KV_VISIBLE_TIMEOUT_MS)
        : undefined,
    );
    const account = new AccountService({
      store: store.accounts,
      bus,
      kv,
      webhooks: webhooks.service,
      privacy,
      logger,
    });

    let demo: Demo | null = null;
    let discordSide: DiscordSide | null = null;
    let cdnUrl = config.discordCdnUrl;
    if (config.role !== 'api') {
      let discord: DiscordEndpoints;
      if (config.discordToken === null) {
        const started = await startDemo(logger, { keys, kv, privacy });
        demo = started;
        cleanups.push(() => started.stop());
        const { simulator } = started;
        discord = { token: simulator.token, apiUrl: simulator.apiUrl, cdnUrl: simulator.cdnUrl };
        logger.info(
          { api: discord.apiUrl },
          'demo mode: no DISCORD_TOKEN set, using the built-in simulated Discord',
        );
      } else {
        discord = { token: config.discordToken, apiUrl: config.discordApiUrl, cdnUrl: config.discordCdnUrl };
        logger.info({ api: redactUrl(discord.apiUrl) }, 'connecting to Discord');
      }
      cdnUrl = discord.cdnUrl;
      discordSide = startDiscordSide({
        config,
        logger,
        onFatal: options.onFatal,
        history: options.history,
        retention: options.retention,
        ...(options.bot ? { bot: options.bot } : {}),
        ...(options.gateway ? { gateway: options.gateway } : {}),
        discord,
        resumesAcrossRestarts: demo === null,
        store: background,
        bus,
        keys,
        kv,
        webhooks: webhooks.service,
        privacy: { directory: privacyDirectory, service: privacy },
        account,
        cluster,
        cleanups,
        metrics,
      });
      webhooks.attach(discordSide);
      await discordSide.publisher?.start();
      await discordSide.restore();
    }

    if (replicaSync) {
      cleanups.push(() => replicaSync.close());
      await replicaSync.start();
    }
    const ownView: PresenceSource = replica ?? (discordSide?.registry as PresenceSource);
    // What this node saw change: the registry's own changes, or on an API node the replica's.
    (discordSide?.registry ?? ownView).onChange((change) => metrics.presenceChanged(change.kind));
    // On a node with the replica, each user once, whichever ingest nodes see them.
    const uniqueUsers = watchUniqueUsers(ownView, logger);
    // Following the directory before the registry does: a user turning private is gone from what everyone
    // reads before their presence is rendered again.
    const view = new PublicView(ownView, privacyDirectory);
    view.start(privateUsers(privacyDirectory));
    cleanups.push(() => view.close());
    const registry = discordSide?.registry;
    if (registry) privacyDirectory.onChange((userId) => registry.privacyChanged(userId));
    const recordsOf = (userId: string, at: number) => recordsHistory(privacyDirectory.of(userId), at);
    const recent =
      config.role === 'ingest' ? undefined : new RecentStatuses(Date.now, RECENT_STATUS_MS, recordsOf);
    if (recent) {
      cleanups.push(() => recent.close());
      ownView.onChange(recent.observe);
      // An erased history is erased here too, whichever node ran `?forget`.
      bus.subscribe('history.forgotten', ({ userId, at }) => recent.forget(userId, at));
    }
    const readiness: ReadinessCheck[] = [storeCheck(store, backend === 'redis' ? cluster : null)];
    if (cluster && backend !== 'redis') readiness.push(redisCheck(cluster));
    if (discordSide) readiness.push(gatewayCheck(discordSide.gateway, discordSide));
    if (replicaSync) readiness.push(replicaCheck(replicaSync));

    // Shutdown begins with every entry point, everything that takes work in, all at once: the HTTP server
    // stops accepting, sockets are sent away with 1001, Discord is disconnected. It ends when the last
    // request in flight has been answered; only then do history, the bus and the store close (the
    // cleanups before this).
    const entryPoints: Array<() => Promise<void>> = [];
    cleanups.push(async () => {
      const results = await Promise.allSettled(entryPoints.map((stop) => stop()));
      const failed = results.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    });

    const trustProxy = trustFunction(config.trustProxy);
    const slots = new SocketSlots(config.socketsPerIp, config.maxSockets);
    const subscriptionCap = new SubscriptionCap(config.maxSubscriptions);
    const sse =
      config.role === 'ingest'
        ? null
        : new SseHub({
            source: view,
            ownSource: ownView,
            slots,
            subscriptionCap,
            logger,
            metrics,
            // An API node's replica holds what the ingest nodes listed; only a node that lists knows its start.
            ...(discordSide ? { membersKnown: discordSide.firstListed } : {}),
            ...options.sse,
          });
    if (sse) {
      entryPoints.push(async () => sse.close());
      privacyDirectory.onChange((userId) => sse.withdraw(userId));
      bus.subscribe('read-tokens.revoked', ({ userId, tokenId }) => sse.revoked(userId, tokenId));
    }
    const bot = discordSide?.bot;
    if (config.interactionsPublicKey !== null && !bot) {
      logger.warn(
        'INTERACTIONS_PUBLIC_KEY is set, but this node runs no bot (ROLE=api): send /interactions to a node of ROLE all or ingest',
      );
    }
    const http = await buildHttpServer({
      view,
      ownView,
      keys,
      kv,
      history: store.history,
      ...(recent ? { recent } : {}),
      version: readVersionInfo(),
      logger,
      cdnUrl,
      inviteUrl: config.discordInviteUrl,
      botName: () => discordSide?.identity.name ?? null,
      installLinks: () => discordSide?.identity.links ?? null,
      optInPrefix: config.monitor === 'opt-in' ? config.commandPrefix : null,
      serveApi: config.role !== 'ingest',
      examples: demo?.users ?? [],
      ...(demo
        ? {
            demoBot: {
              run: (line: string) => demo.bot.run(line),
              press: (interaction: string, customId: string) => demo.bot.press(interaction, customId),
              refused: (error: unknown): error is Error => error instanceof DemoCommandError,
            },
          }
        : {}),
      instance: instanceFacts(config, intentsFor(config)),
      timeouts: {
        headersMs: config.httpHeadersTimeoutMs,
        requestMs: config.httpRequestTimeoutMs,
        keepAliveMs: config.httpKeepAliveTimeoutMs,
      },
      trustProxy,
      connectionsPerIp: config.connectionsPerIp,
      rateLimits: {
        read: config.rateLimitRead,
        write: config.rateLimitWrite,
        ...(cluster ? { redis: { client: cluster.limiter, prefix: config.redisPrefix } } : {}),
        onLimited: (kind) => metrics.rateLimited(kind),
      },
      ...(options.abuseRefusalDelayMs === undefined
        ? {}
        : { abuseRefusalDelayMs: options.abuseRefusalDelayMs }),
      ops: {
        metrics,
        metricsToken: config.metricsToken,
        readiness,
        ...(discordSide ? { shards: () => discordSide.gateway.shardReports() } : {}),
      },
      webhooks: webhooks.service,
      privacy,
      readTokens,
      account: {
        service: account,
        export: new AccountExport({ view: ownView, store, webhooks: webhooks.service, privacy }),
      },
      historyPrivacy: {
        of: (userId) => privacyDirectory.of(userId),
        isPrivate: (userId) => view.isPrivate(userId),
      },
      musicApps: musicApps(config.musicAppIds),
      interactions:
        config.interactionsPublicKey !== null && bot
          ? {
              publicKey: config.interactionsPublicKey,
              handle: (interaction, respond) => bot.handleHttp(interaction, respond),
            }
          : null,
      ...(sse ? { events: { hub: sse, maxIds: config.subscriptionsPerSocket } } : {}),
    });
    entryPoints.push(
      () => http.close(),
      () => webhooks.worker.close(),
    );
    const sockets =
      config.role === 'ingest'
        ? null
        : new SocketGateway({
            server: http.server,
            source: view,
            logger,
            socketsPerIp: config.socketsPerIp,
            slots,
            subscriptionCap,
            clientAddress: clientAddressOf(trustProxy),
            maxIdsPerSocket: config.subscriptionsPerSocket,
            commandsPerMinute: config.socketCommandsPerMinute,
            subscribeToAll: config.subscribeToAll,
            metrics,
            ...options.socket,
            ...(options.abuseRefusalDelayMs === undefined
              ? {}
              : { refusalDelayMs: options.abuseRefusalDelayMs }),
          });
    if (sockets) entryPoints.push(() => sockets.close());
    const gateway = discordSide?.gateway;
    metrics.observe({
      monitoredUsers: () => view.size,
      uniqueUsers: () => uniqueUsers.read(),
      ...(sockets
        ? {
            sockets: () => ({ open: sockets.socketCount, subscribed: sockets.subscribedSockets() }),
            socketBufferedBytes: () => sockets.bufferedBytes(),
          }
        : {}),
      ...(sse ? { sseStreams: () => sse.streamCount } : {}),
      ...(gateway
        ? {
            gatewayShards: () => ({ total: gateway.shardCountHere, ready: gateway.readyShardCount }),
            shardReports: () => gateway.shardReports(),
          }
        : {}),
      ...(writeThreadDown ? { storeWriteThreadDown: writeThreadDown } : {}),
      ...(discordSide
        ? {
            pendingMembers: () => discordSide?.registry.pendingCount ?? 0,
            staleUsers: () => discordSide?.registry.staleCount ?? 0,
          }
        : {}),
    });
    const url = await http.listen({ port: config.port, host: config.host });

    // Only once the port is bound: a service that cannot listen, restarted in a loop, would otherwise
    // spend Discord's daily session starts.
    if (discordSide) {
      const side = discordSide;
      entryPoints.push(() => side.stop());
      side.gateway.start();
    }
    webhooks.worker.start();

    return {
      config,
      http,
      view,
      registry: discordSide?.registry ?? null,
      gateway: discordSide?.gateway ?? null,
      history: discordSide?.history ?? null,
      retention: discordSide?.retention ?? null,
      sockets,
      sse,
      store,
      bus,
      webhooks,
      demo,
      url,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

interface Stores {
  /** What requests use. */
  store: Store;
  /** What background work uses: with Redis it waits out an outage rather than fail. */
  background: Store;
  backend: StoreBackend;
  /** A SQLite file's: whether its write thread has died. */
  writeThreadDown?: () => boolean;
}

/**
 * The durable store: PostgreSQL when DATABASE_URL names it (alone, or beside Redis, which then keeps only
 * what is live); else Redis with REDIS_URL; else the embedded SQLite store.
 */
async function openStores(config: Config, cluster: ClusterLink | null, logger: Logger): Promise<Stores> {
  const { database } = config;
  if (database.kind === 'postgres') {
    const store = await openPostgresStore(database.url, {
      onError: (error) => logger.warn({ err: error }, 'PostgreSQL connection error; reconnecting'),
    });
    logger.info({ database: redactUrl(database.url) }, 'durable data in PostgreSQL');
    return { store, background: store, backend: 'postgres' };
  }
  if (cluster) {
    // Requests fail fast while Redis is away; background work waits for it and catches up.
    return {
      store: openRedisStore(cluster.requests, config.redisPrefix),
      background: openRedisStore(cluster.redis, config.redisPrefix),
      backend: 'redis',
    };
  }
  let down = false;
  const store = openSqliteStore(database, {
    onWriteThreadDown: (error) => {
      down = true;
      logger.error(
        { err: error },
        'the SQLite write thread stopped; history and profiles are written on the event loop from now on',
      );
    },
  });
  return { store, background: store, backend: 'sqlite', writeThreadDown: () => down };
}

/** The users whose settings keep their presence from anyone but them. */
function* privateUsers(directory: PrivacyDirectory): Iterable<string> {
  for (const [userId, settings] of directory.entries()) if (settings.visibility === 'private') yield userId;
}

/** Names this node's Redis connections, so CLIENT LIST tells the nodes apart. */
function nodeName(config: Config): string {
  const shards = config.shardIds === null ? '' : `-shards-${config.shardIds.join('_')}`;
  return `presently-${config.role}${shards}-${process.pid}`;
}
