import type { Logger } from 'pino';
import type { Bus } from '../bus/ports.js';
import type { ClusterLink } from '../cluster/connect.js';
import type { SharedPresencePublisher } from '../cluster/publisher.js';
import type { Config } from '../config.js';
import type { Metrics } from '../ops/metrics.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceRegistry } from '../presence/registry/registry.js';
import type { PrivacyDirectory } from '../privacy/directory.js';
import type { Store } from '../store/ports.js';
import { PostgresStore } from '../store/postgres/index.js';
import { PostgresWebhookQueue } from '../store/postgres/webhook-queue.js';
import { RedisWebhookQueue } from '../store/redis/webhook-queue.js';
import { SqliteStore } from '../store/sqlite/index.js';
import { SqliteWebhookQueue } from '../store/sqlite/webhook-queue.js';
import type { WebhookQueue } from '../store/webhook-queue.js';
import { readVersionInfo } from '../version.js';
import { WebhookDirectory } from './directory.js';
import { WebhookFeed } from './feed.js';
import { RedisNotices } from './redis-notices.js';
import { WebhookSender } from './sender.js';
import { WebhookService } from './service.js';
import { type Resolve, systemResolve, type TargetPolicy } from './target.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from './worker.js';

/** Webhooks on this node: the service the routes and the bot use, the worker delivering, the feed. */
export interface WebhookSide {
  readonly service: WebhookService;
  readonly worker: DeliveryWorker;
  readonly feed: WebhookFeed;
  /** Feeds the Discord side's changes to the webhooks, and lets notices go out through its bot. */
  attach(side: WebhookChanges): void;
}

/** The bot's direct messages, as the webhooks use them. */
export interface DirectMessages {
  dm(userId: Snowflake, content: string): Promise<unknown>;
}

/** What the webhooks take of a node's Discord side. */
export interface WebhookChanges {
  /** Scale-out: what this node published, once per real change across the ingest nodes. */
  readonly publisher: SharedPresencePublisher | null;
  /** Alone: the registry's own changes. */
  readonly registry: PresenceRegistry;
  /** The bot's voice, for the notice of a disabled webhook. */
  readonly messenger: DirectMessages;
}

/** Tests resolve host names, shorten the delivery timeout and drive the worker's time. */
export interface WebhookOptions {
  resolve?: Resolve;
  timeoutMs?: number;
  worker?: Pick<DeliveryWorkerOptions, 'now' | 'backoff' | 'pollMs' | 'leaseMs'>;
}

export interface WebhookDeps {
  config: Config;
  logger: Logger;
  options?: WebhookOptions;
  /** The request store (routes) and the waiting one (deliveries, which may wait out a Redis outage). */
  store: Store;
  background: Store;
  bus: Bus;
  cluster: ClusterLink | null;
  cleanups: Array<() => Promise<void> | void>;
  metrics: Metrics;
  /** Each user's privacy settings: a hidden KV is in no event. */
  privacy: Pick<PrivacyDirectory, 'of'>;
}

/**
 * The webhooks of any role: registrations in the store, events in the queue (in the store's database for
 * one process, a queue shared in Redis in scale-out), a worker delivering. The directory of who has
 * webhooks is read before anything may be queued.
 */
export async function startWebhooks(deps: WebhookDeps): Promise<WebhookSide> {
  const { config, logger, options, store, background, bus, cluster, cleanups, metrics } = deps;
  const policy: TargetPolicy = {
    allowPrivate: config.webhooksAllowPrivate,
    resolve: options?.resolve ?? systemResolve,
  };
  let queue: WebhookQueue;
  if (cluster) queue = new RedisWebhookQueue(cluster.redis, config.redisPrefix);
  else if (store instanceof SqliteStore) queue = new SqliteWebhookQueue(store.db);
  else if (store instanceof PostgresStore) queue = new PostgresWebhookQueue(store.pool);
  else throw new Error('a store without Redis is SQLite or PostgreSQL');
  const directory = new WebhookDirectory(background.webhooks);
  await directory.load();
  const reread = (work: Promise<void>) =>
    work.catch((error: unknown) => logger.warn({ err: error }, 'could not read webhooks again'));
  bus.subscribe('webhooks.changed', ({ userId }) => void reread(directory.refresh(userId)));
  // Changes announced while this node could not hear the bus.
  cluster?.bus.onResubscribed(() => void reread(directory.load()));

  // In scale-out the node that disables a webhook may have no bot: its notice waits in Redis for one.
  const notices = cluster ? new RedisNotices(cluster.redis, config.redisPrefix) : null;
  let messenger: DirectMessages | null = null;
  const service = new WebhookService({
    store: store.webhooks,
    queue,
    directory,
    bus,
    policy,
    maxPerUser: config.webhooksPerUser,
    notify: async (userId, content) => {
      if (notices) await notices.send(userId, content);
      else await messenger?.dm(userId, content);
    },
    commandPrefix: config.commandPrefix,
    logger,
  });
  const sender = new WebhookSender({
    policy,
    userAgent: `Presently-Webhooks/${readVersionInfo().version}`,
    ...(options?.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  cleanups.push(() => sender.close());
  const worker = new DeliveryWorker({
    queue,
    store: background.webhooks,
    sender,
    webhooks: service,
    logger,
    metrics,
    ...options?.worker,
  });
  const feed = new WebhookFeed({
    directory,
    queue,
    kv: background.kv,
    logger,
    metrics,
    queued: () => void worker.poll(),
    hidesKv: (userId) => deps.privacy.of(userId)?.hide_kv === true,
  });
  // Runs after Discord and the HTTP server have stopped (cleanups run last first), before the store closes.
  cleanups.push(() => feed.drain());
  return {
    service,
    worker,
    feed,
    attach(side) {
      if (side.publisher) side.publisher.onPublished(feed.observe);
      else side.registry.onChange(feed.observe);
      messenger = side.messenger;
      if (notices)
        cleanups.push(notices.relay((userId, content) => side.messenger.dm(userId, content), logger));
    },
  };
}
