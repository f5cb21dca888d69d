import { REST } from '@discordjs/rest';
import { GatewayDispatchEvents } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { AccountExport } from '../account/export.js';
import { type RetentionOverrides, RetentionSweep } from '../account/retention.js';
import type { AccountService } from '../account/service.js';
import type { Bus } from '../bus/ports.js';
import type { ClusterLink } from '../cluster/connect.js';
import { SharedPresencePublisher } from '../cluster/publisher.js';
import type { Config } from '../config.js';
import { HistoryRecorder } from '../history/recorder.js';
import type { ApiKeyService } from '../keys/service.js';
import type { KvService } from '../kv/service.js';
import type { Metrics } from '../ops/metrics.js';
import type { ListingWait } from '../ops/readiness.js';
import { musicApps } from '../presence/normalize/music-apps.js';
import { youtubeMusicMatcher } from '../presence/normalize/youtube-music.js';
import { recordsHistory } from '../presence/privacy.js';
import { PresenceRegistry } from '../presence/registry/registry.js';
import type { PrivacyDirectory } from '../privacy/directory.js';
import type { PrivacyService } from '../privacy/service.js';
import type { Store } from '../store/ports.js';
import type { WebhookService } from '../webhooks/service.js';
import { BotIdentity } from './bot-identity.js';
import { Bot, type BotOptions, COMMANDS } from './commands/index.js';
import { registerCommands } from './commands/registration.js';
import { DiscordGateway, type GatewayOptions } from './gateway.js';
import { GatewayIngest } from './ingest.js';
import { installLinks } from './install-links.js';
import { intentsFor } from './intents.js';
import { Messenger } from './messenger.js';
import { MonitorPolicy } from './monitor-policy.js';
import { MonitoredLoader } from './monitored-loader.js';
import { PendingRenderer } from './pending-renderer.js';
import { ProfileFetcher } from './profiles.js';
import { RestartState } from './restart-state.js';
import { stateKey } from './state-seal.js';

/** The Discord side of a node (ROLE all or ingest), as the rest of the node sees it. */
export interface DiscordSide {
  registry: PresenceRegistry;
  gateway: DiscordGateway;
  history: HistoryRecorder;
  /** Erases what is kept of users gone from every monitored guild for RETENTION_DAYS. */
  retention: RetentionSweep;
  /** Scale-out: shares what the registry sees; started before the gateway. */
  publisher: SharedPresencePublisher | null;
  /** The bot's own user, as the gateway last named it. */
  identity: BotIdentity;
  /** The bot's voice, for DMs. */
  messenger: Messenger;
  /** The bot's commands, for interactions Discord POSTs to `/interactions`. */
  bot: Bot;
  /** Every guild has been listed once since the start. */
  listed(): boolean;
  /** Resolves once every guild has been listed since the start: from then on every member is known. */
  firstListed: Promise<void>;
  /** Guild listings Discord deferred (RATE_LIMITED), not yet sent again. */
  waiting(): readonly ListingWait[];
  /**
   * Before the gateway starts: takes back what the previous process saved, to resume its sessions, and
   * saves every few seconds from then on (not in demo mode, whose Discord starts afresh with the process).
   */
  restore(): Promise<void>;
  /** Shutdown: nothing deferred is sent again, Discord is disconnected, and what to resume from is saved. */
  stop(): Promise<void>;
}

/** Where Discord is and the bot's token: Discord's own, or the simulator's in demo mode. */
export interface DiscordEndpoints {
  token: string;
  apiUrl: string;
  cdnUrl: string;
}

/** How often a minute one user's becoming monitored asks Discord for their presence at most. */
export const OPT_IN_REQUESTS_PER_MINUTE = 3;

export interface DiscordSideDeps {
  config: Config;
  logger: Logger;
  /** A close from Discord that reconnecting cannot fix. */
  onFatal?(code: number, reason: string): void;
  /** Tests lengthen the history batch interval to hold changes queued. */
  history?: { flushMs?: number };
  /** Tests drive retention's clock and timing. */
  retention?: RetentionOverrides;
  /** Tests shorten the wait before a slow command's answer is deferred. */
  bot?: Pick<BotOptions, 'deferAfterMs'>;
  /** Tests shorten how long a disconnected shard's users stay current, and identify without pacing. */
  gateway?: Pick<GatewayOptions, 'staleAfterMs' | 'identifyIntervalMs'>;
  discord: DiscordEndpoints;
  /** Whether sessions are saved to be resumed after a restart: not in demo mode. */
  resumesAcrossRestarts: boolean;
  /** The waiting store: what the Discord side writes may wait out a Redis outage. */
  store: Store;
  bus: Bus;
  keys: ApiKeyService;
  kv: KvService;
  webhooks: WebhookService;
  /** Each user's privacy settings: what the registry renders and history records follow them. */
  privacy: { directory: PrivacyDirectory; service: PrivacyService };
  /** Erasing everything kept about a user: the bot's `?forget all confirm`. */
  account: AccountService;
  cluster: ClusterLink | null;
  cleanups: Array<() => Promise<void> | void>;
  metrics: Metrics;
}

/**
 * The gateway, the registry it feeds, history, profiles and the bot. With Redis, what the registry sees
 * is shared through the publisher, and history records what this node published (once per real change
 * across all ingest nodes); alone, history records the registry's changes directly.
 */
export function startDiscordSide(deps: DiscordSideDeps): DiscordSide {
  const { config, logger, discord, store, bus, keys, kv, webhooks, cluster, cleanups, metrics } = deps;
  const registry = new PresenceRegistry({
    cdnUrl: discord.cdnUrl,
    youtubeMusic: youtubeMusicMatcher(config.youtubeMusicApplicationIds, config.youtubeMusicNames),
    musicApps: musicApps(config.musicAppIds),
    privacy: (userId) => deps.privacy.directory.of(userId),
  });

  const history = new HistoryRecorder({
    store: store.history,
    // A user let go because they opted out (or erased everything) gets no last moment written after it.
    records: (userId, at) => recordsHistory(deps.privacy.directory.of(userId), at) && policy.monitors(userId),
    logger,
    bus,
    onDropped: (writes) => metrics.historyWritesDropped(writes),
    ...deps.history,
  });
  cleanups.push(() => history.close());
  let publisher: SharedPresencePublisher | null = null;
  if (cluster) {
    const shared = new SharedPresencePublisher({
      registry,
      presences: cluster.presences,
      kv: store.kv,
      bus: cluster.bus,
      node: config.shardIds?.[0] ?? 0,
      logger,
    });
    publisher = shared;
    shared.onPublished(history.observe);
    shared.onReleased((userId) => history.release(userId));
    cleanups.push(() => shared.close());
  } else {
    registry.onChange(history.observe);
  }

  const rest = new REST({ api: discord.apiUrl, cdn: discord.cdnUrl, version: '10' }).setToken(discord.token);
  const profiles = new ProfileFetcher({ rest, store: store.profiles, registry, logger });
  cleanups.push(() => profiles.stop());
  const loader = new MonitoredLoader({ registry, profiles, kv: store.kv, logger });
  bus.subscribe('kv.changed', loader.kvChanged);
  registry.onChange(loader.observe);
  registry.onPending(loader.pending);

  const gateway = new DiscordGateway({
    token: discord.token,
    rest,
    logger,
    shardCount: config.shardCount,
    shardIds: config.shardIds,
    onFatal: (code, reason) => deps.onFatal?.(code, reason),
    metrics,
    intents: intentsFor(config),
    compression: config.gatewayCompression,
    ...deps.gateway,
  });
  const syncedShards = new Set<number>();
  let listed = false;
  let markListed = (): void => undefined;
  const firstListed = new Promise<void>((resolve) => {
    markListed = resolve;
  });
  // In scale-out, a leave is heard as published: once no ingest node sees the user any more.
  const retention = new RetentionSweep({
    store: store.retention,
    registry,
    account: deps.account,
    retentionDays: config.retentionDays,
    ...(cluster
      ? { clustered: { monitored: async (userId) => (await cluster.presences.read(userId)) !== null } }
      : {}),
    logger,
    onErased: (users) => metrics.retentionErased(users),
    // A guild back from an outage lists its members again: until it has, those not listed yet look gone.
    outage: () => ingest.outage || ingest.listing,
    ...deps.retention,
  });
  if (publisher) publisher.onPublished(retention.observe);
  else registry.onChange(retention.observe);
  retention.start(firstListed);
  cleanups.push(() => retention.close());
  const startedAt = Date.now();
  const renderer = new PendingRenderer(registry, logger, { listing: () => ingest.listing });
  cleanups.push(() => renderer.stop());
  const policy = new MonitorPolicy({
    mode: config.monitor,
    roleId: config.monitorRoleId,
    guildIds: config.guildIds,
    allowedUserIds: config.allowedUserIds,
    optedIn: (userId) => deps.privacy.directory.of(userId)?.opted_in === true,
  });
  if (!policy.monitorsEveryone) {
    // Opting in or out takes effect at once: the user's presence is asked for, or let go. Asked for only
    // when they were not wanted before, and OPT_IN_REQUESTS_PER_MINUTE times a minute at most: each asks
    // every guild, and a key holder can change their settings as often as they may write.
    const wantedBefore = new Set<string>();
    const asked = new Map<string, number[]>();
    deps.privacy.directory.onChange((userId) => {
      if (!policy.monitors(userId)) {
        wantedBefore.delete(userId);
        registry.stopMonitoring(userId);
        return;
      }
      const already = wantedBefore.has(userId);
      wantedBefore.add(userId);
      if (already || registry.isMonitored(userId)) return;
      const now = Date.now();
      const recent = (asked.get(userId) ?? []).filter((at) => now - at < 60_000);
      if (recent.length >= OPT_IN_REQUESTS_PER_MINUTE) return;
      asked.set(userId, [...recent, now]);
      ingest.requestUser(userId);
    });
  }
  const ingest: GatewayIngest = new GatewayIngest({
    registry,
    policy,
    requestMembers: (shardId, data) => void gateway.requestMembers(shardId, data),
    onUserUpdated: (userId) => profiles.enqueue(userId),
    onShardSynced: (shardId) => {
      syncedShards.add(shardId);
      if (syncedShards.size < gateway.shardCountHere) return;
      listed = true;
      markListed();
      // Once at start-up, and again whenever a fresh session has re-listed everything.
      logger.info(
        {
          guilds: registry.guildIds().length,
          monitoredUsers: registry.size,
          seconds: Math.round((Date.now() - startedAt) / 100) / 10,
        },
        'every guild loaded',
      );
      if (publisher) void publisher.markSynced();
    },
    onMembersListed: () => renderer.kick(),
    logger,
  });
  gateway.onDispatch((payload, shardId) => ingest.handle(payload, shardId));
  gateway.onSessionLost((shardId) => {
    ingest.sessionLost(shardId);
    renderer.kick();
  });
  gateway.onShardGone((shardId, shardCount, runs) => {
    ingest.shardGone(shardId, shardCount, runs);
    renderer.kick();
  });
  gateway.onSilence((shardId, silent) => {
    ingest.shardSilent(shardId, silent);
    renderer.kick();
  });
  const restartState = deps.resumesAcrossRestarts
    ? new RestartState({
        store: store.gatewayState,
        key: stateKey(discord.token),
        settings: JSON.stringify({
          shardCount: config.shardCount,
          shardIds: config.shardIds,
          intents: intentsFor(config),
          monitor: config.monitor,
          roleId: config.monitorRoleId,
          guildIds: config.guildIds && [...config.guildIds].sort(),
          allowedUserIds: config.allowedUserIds && [...config.allowedUserIds].sort(),
        }),
        node: config.shardIds === null ? 'all' : config.shardIds.join(','),
        shardIds: config.shardIds,
        gateway,
        ingest,
        registry,
        policy,
        logger,
        onRestored: () => renderer.kick(),
        ...(policy.monitorsEveryone
          ? {}
          : {
              optedIn: function* () {
                for (const [userId, settings] of deps.privacy.directory.entries()) {
                  if (settings.opted_in) yield userId;
                }
              },
            }),
      })
    : null;
  const messenger = new Messenger(rest, logger);
  const bot = new Bot({
    prefix: config.commandPrefix,
    keys,
    kv,
    history,
    webhooks,
    privacy: deps.privacy.service,
    account: deps.account,
    accounts: store.accounts,
    exports: new AccountExport({ view: registry, store, webhooks, privacy: deps.privacy.service }),
    monitor: config.monitor,
    publicUrl: config.publicUrl,
    messenger,
    logger,
    cooldown: { burst: config.botCommandBurst, perMinute: config.botCommandsPerMinute },
    metrics,
    serves: (userId) => policy.serves(userId),
    ...deps.bot,
  });
  gateway.onDispatch((payload) => void bot.handle(payload));
  const identity = new BotIdentity();
  gateway.onDispatch(identity.observe);
  let registering = false;
  gateway.onDispatch((payload, shardId) => {
    // Once a process, by the node that runs shard 0: the application's id comes with READY.
    if (payload.t !== GatewayDispatchEvents.Ready || shardId !== 0 || registering) return;
    registering = true;
    const links = installLinks(payload.d.application.id);
    logger.info(
      { server: links.server, user: links.user },
      'add the bot to a server, or install it for yourself',
    );
    registerCommands({
      rest,
      applicationId: payload.d.application.id,
      guildIds: config.commandGuildIds,
      commands: COMMANDS,
      logger,
    }).catch((error: unknown) => {
      registering = false;
      logger.error({ err: error }, 'could not register the slash commands; trying again at the next READY');
    });
  });
  return {
    registry,
    gateway,
    history,
    retention,
    publisher,
    identity,
    messenger,
    bot,
    listed: () => listed,
    firstListed,
    waiting: () => ingest.listingsWaiting,
    restore: async () => {
      if (!restartState) return;
      const restored = await restartState.restore();
      if (restored && restored.optedInSince.length > 0) {
        // Who opted in while no process heard it (through an API node) is asked for once resumed, as a
        // listing would have found them.
        void firstListed.then(() => {
          for (const userId of restored.optedInSince) {
            if (policy.monitors(userId) && !registry.isMonitored(userId)) ingest.requestUser(userId);
          }
        });
      }
      restartState.start();
    },
    stop: async () => {
      ingest.close();
      await gateway.destroy({ keepSessions: restartState !== null });
      // Held for a successor only when there is something for it to resume.
      if (await restartState?.stop()) publisher?.willRestart();
    },
  };
}
