import { once } from 'node:events';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RedisBus } from '../bus/redis.js';
import { RedisPresences } from '../store/redis/presences.js';

/** What Redis answers a client whose password or user it does not accept (AUTH, or a command before it). */
const REFUSED_CREDENTIALS = /WRONGPASS|NOAUTH/;

export interface ClusterLink {
  /** For background work (presences, history, profiles): waits while Redis is away, then catches up. */
  redis: Redis;
  /** For requests: fails within a couple of seconds while Redis is away, so a client gets an answer. */
  requests: Redis;
  /** For rate-limit counters: fails at once while Redis is away instead of holding requests. */
  limiter: Redis;
  bus: RedisBus;
  presences: RedisPresences;
  /** Resolves once the command connections are up: a fail-fast one refuses commands before that. */
  ready(): Promise<void>;
  /** PING on the fail-fast connection. */
  ping(): Promise<string>;
  /** Why this node cannot use Redis now (a connection down, or its password refused); null when it can. */
  unusable(): string | null;
  close(): Promise<void>;
}

/**
 * The connections a node of a scale-out deployment keeps to Redis: one for commands, one (the bus's) for
 * subscriptions. Commands wait in the client's queue while Redis is away and are sent when it is back,
 * so a short outage delays work instead of failing it.
 */
export function connectCluster(url: string, prefix: string, logger: Logger, name: string): ClusterLink {
  const redis = new Redis(url, {
    // Shown by CLIENT LIST, so an operator can tell the nodes apart; the bus's connection inherits it.
    connectionName: name,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    maxRetriesPerRequest: null,
  });
  let lastError = '';
  redis.on('error', (error: Error) => {
    // While Redis is down every retry fails the same way; one line per kind of failure is enough.
    if (error.message === lastError) return;
    lastError = error.message;
    logger.warn({ err: error }, 'Redis connection error; retrying');
  });
  redis.on('ready', () => {
    lastError = '';
  });
  // What readiness says while a connection is down: whether Redis refused the password, never the error's
  // text, which names hosts.
  let refused = false;
  const noteRefusal = (error: Error): void => {
    refused = REFUSED_CREDENTIALS.test(error.message);
  };
  redis.on('error', noteRefusal);
  const requests = redis.duplicate({
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 2_000,
  });
  requests.on('error', noteRefusal);
  const limiter = redis.duplicate({
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
  });
  limiter.on('error', () => {});
  const bus = new RedisBus(redis, prefix, logger);
  const presences = new RedisPresences(redis, prefix, {
    presence: bus.channelOf('presence.changed'),
    handover: bus.channelOf('presence.handover'),
  });
  return {
    redis,
    requests,
    limiter,
    bus,
    presences,
    ping: () => requests.ping(),
    unusable: () => {
      const up = [redis, requests, limiter].every((client) => client.status === 'ready') && bus.subscribed;
      if (up) return null;
      return refused
        ? 'Redis refused the password in REDIS_URL, retrying'
        : 'a connection to Redis is down, reconnecting';
    },
    ready: async () => {
      for (const client of [redis, requests, limiter]) {
        if (client.status !== 'ready') await once(client, 'ready');
      }
    },
    close: async () => {
      await bus.close();
      for (const client of [limiter, requests, redis]) {
        // QUIT would wait in the queue of a connection that is down.
        if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
        else client.disconnect();
      }
    },
  };
}
