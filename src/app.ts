import { REST } from '@discordjs/rest';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { LocalBus } from './bus/local.js';
import type { Bus } from './bus/ports.js';
import type { Config } from './config.js';
import { Bot } from './discord/commands/index.js';
import { DiscordGateway } from './discord/gateway.js';
import { GatewayIngest } from './discord/ingest.js';
import { Messenger } from './discord/messenger.js';
import { ProfileFetcher } from './discord/profiles.js';
import { type Demo, startDemo } from './discord/simulator/demo.js';
import { HistoryRecorder } from './history/recorder.js';
import { buildHttpServer } from './http/server.js';
import { ApiKeyService } from './keys/service.js';
import { KvService } from './kv/service.js';
import { PresenceRegistry } from './presence/registry.js';
import { youtubeMusicMatcher } from './presence/youtube-music.js';
import { SocketGateway } from './socket/gateway.js';
import type { Store } from './store/ports.js';
import { openSqliteStore } from './store/sqlite/index.js';
import { readVersionInfo } from './version.js';

export interface App {
  readonly config: Config;
  readonly http: FastifyInstance;
  readonly registry: PresenceRegistry;
  readonly gateway: DiscordGateway;
  readonly store: Store;
  readonly bus: Bus;
  readonly sockets: SocketGateway;
  readonly history: HistoryRecorder;
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
  socket?: { heartbeatIntervalMs?: number; sendBufferCapBytes?: number };
}

/** The composition root: builds the store, the registry, Discord (real or simulated) and HTTP, then listens. */
export async function startApp(config: Config, options: AppOptions): Promise<App> {
  const { logger } = options;
  if (config.redisUrl !== null) {
    throw new Error(
      'REDIS_URL: scale-out mode is not part of this build yet; unset it to run on one machine',
    );
  }

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
    const store = openSqliteStore(config.database);
    cleanups.push(() => store.close());

    let discord: { token: string; apiUrl: string; cdnUrl: string };
    let demo: Demo | null = null;
    if (config.discordToken === null) {
      const started = await startDemo(logger);
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
      logger.info({ api: discord.apiUrl }, 'connecting to Discord');
    }

    const bus = new LocalBus();
    cleanups.push(() => bus.close());
    const keys = new ApiKeyService(store.apiKeys);
    const kv = new KvService(store.kv, bus);

    const registry = new PresenceRegistry({
      cdnUrl: discord.cdnUrl,
      youtubeMusic: youtubeMusicMatcher(config.youtubeMusicApplicationIds, config.youtubeMusicNames),
    });

    const history = new HistoryRecorder({ store: store.history, logger });
    registry.onChange(history.observe);
    cleanups.push(() => history.close());

    const rest = new REST({ api: discord.apiUrl, cdn: discord.cdnUrl, version: '10' }).setToken(
      discord.token,
    );
    const profiles = new ProfileFetcher({ rest, store: store.profiles, registry, logger });
    cleanups.push(() => profiles.stop());
    bus.subscribe('kv.changed', (change) => registry.kvChanged(change.userId, change.kv, change.revision));
    registry.onChange((change) => {
      if (change.kind !== 'monitored') return;
      const { userId } = change;
      profiles.userMonitored(userId).catch((error: unknown) => {
        logger.warn({ err: error, userId }, 'could not load the stored profile');
      });
      // KV outlives monitoring: a returning user gets theirs back.
      store.kv.getKv(userId).then(
        (state) => registry.kvChanged(userId, state.kv, state.revision),
        (error: unknown) => logger.error({ err: error, userId }, 'could not load the stored KV'),
      );
    });

    const gateway = new DiscordGateway({
      token: discord.token,
      rest,
      logger,
      onFatal: (code, reason) => options.onFatal?.(code, reason),
    });
    const ingest = new GatewayIngest({
      registry,
      requestMembers: (shardId, data) => void gateway.requestMembers(shardId, data),
      onUserUpdated: (userId) => profiles.enqueue(userId),
      logger,
    });
    gateway.onDispatch((payload, shardId) => ingest.handle(payload, shardId));
    const bot = new Bot({
      prefix: config.commandPrefix,
      keys,
      kv,
      history,
      messenger: new Messenger(rest, logger),
      logger,
    });
    gateway.onDispatch((payload) => void bot.handle(payload));

    const http = await buildHttpServer({
      view: registry,
      keys,
      kv,
      history: store.history,
      version: readVersionInfo(),
      logger,
    });
    cleanups.push(() => http.close());
    const sockets = new SocketGateway({
      server: http.server,
      source: registry,
      logger,
      socketsPerIp: config.socketsPerIp,
      maxIdsPerSocket: config.subscriptionsPerSocket,
      ...options.socket,
    });
    cleanups.push(() => sockets.close());
    const url = await http.listen({ port: config.port, host: config.host });

    cleanups.push(() => gateway.destroy());
    gateway.start();

    return { config, http, registry, gateway, store, bus, sockets, history, demo, url, close };
  } catch (error) {
    await close();
    throw error;
  }
}
