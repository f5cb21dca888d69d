import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Snowflake } from '../presence/model.js';
import type { PresenceRegistry } from '../presence/registry.js';
import type { GatewayStateStore, SavedGatewaySession } from '../store/ports.js';
import type { DiscordGateway } from './gateway.js';
import type { GatewayIngest } from './ingest.js';
import type { MonitorPolicy } from './monitor-policy.js';
import { decodeSnapshot, encodeSnapshot } from './restart-snapshot.js';

/** The gateway state is saved at most this often (and on shutdown). */
export const STATE_SAVE_INTERVAL_MS = 5_000;
/**
 * Making a snapshot blocks the process for as long as it takes to go over every presence: the next one
 * waits this many times as long, so saving takes at most a small share of the process's time.
 */
export const STATE_SAVE_SPACING = 50;
/**
 * A saved state older than this is not taken back: Discord keeps a session resumable only for a while
 * (it does not say how long), and presences this old would be served as current until refused.
 */
export const STATE_MAX_AGE_MS = 5 * 60_000;

export interface RestartStateOptions {
  store: GatewayStateStore;
  /** Which ingest node this is: each saves its own shards' state. */
  node: string;
  /** The shards this node runs; null: every shard. */
  shardIds: readonly number[] | null;
  gateway: DiscordGateway;
  ingest: GatewayIngest;
  registry: PresenceRegistry;
  policy: MonitorPolicy;
  logger: Logger;
  /** After presences were taken back: they wait to be rendered, as listed members do. */
  onRestored(): void;
}

/**
 * Resume across restarts: each shard's session and the presences held, saved every few seconds and on
 * shutdown, and taken back by the next process before it connects, so that it resumes its sessions
 * rather than identifying and listing every guild again. The sequence numbers saved are those of the
 * snapshot's moment: after a crash Discord replays what came since.
 */
export class RestartState {
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<void> | null = null;
  /** The sessions as last saved: unchanged, and no presence changed either, nothing is saved again. */
  private lastSaved = '';
  private changed = true;
  /** How long the last snapshot blocked the process. */
  private lastCostMs = 0;
  private stopped = false;

  constructor(private readonly options: RestartStateOptions) {
    // A presence let go without a dispatch (an opt-out) is out of the next save too.
    options.registry.onChange(() => {
      this.changed = true;
    });
  }

  /**
   * Takes back what the previous process saved when it is recent and readable, and hands its sessions to
   * the gateway to resume. Anything else (nothing saved, too old, damaged, the store down): the gateway
   * identifies and lists every guild, as on a first start.
   */
  async restore(): Promise<void> {
    const { store, node, logger, registry, policy, ingest, gateway } = this.options;
    let state: Awaited<ReturnType<GatewayStateStore['load']>>;
    try {
      state = await store.load(node);
    } catch (error) {
      logger.warn({ err: error }, 'could not read the saved gateway state; identifying');
      return;
    }
    if (!state) return;
    const ageMs = Date.now() - state.savedAt;
    const sessions = (Array.isArray(state.sessions) ? state.sessions : []).filter(
      (session) => isSession(session) && this.runs(session),
    );
    if (ageMs > STATE_MAX_AGE_MS || sessions.length === 0) {
      logger.info({ ageMs }, 'the saved gateway state is too old to resume from; identifying');
      await this.clear();
      return;
    }
    const snapshot = await decodeSnapshot(state.presences);
    if (!snapshot) {
      logger.warn('the saved gateway state cannot be read; identifying');
      await this.clear();
      return;
    }
    const shardIds = sessions.map((session) => session.shardId);
    const shards = new Set(shardIds);
    const guilds = new Set<Snowflake>();
    for (const [guildId, shardId] of snapshot.guildShards) {
      if (shards.has(shardId) && policy.countsGuild(guildId)) guilds.add(guildId);
    }
    policy.restoreRoleHolders(snapshot.roleHolders);
    ingest.restore(
      shardIds,
      snapshot.guildShards.filter(([guildId]) => guilds.has(guildId)),
    );
    let users = 0;
    for (const saved of snapshot.presences) {
      const guildIds = saved.guildIds.filter((guildId) => guilds.has(guildId));
      if (guildIds.length === 0 || !policy.monitors(saved.user.id)) continue;
      registry.restore({ ...saved, guildIds });
      users++;
    }
    gateway.resumeFrom(sessions);
    this.lastSaved = JSON.stringify(sessions);
    this.options.onRestored();
    logger.info(
      { users, guilds: guilds.size, shards: shardIds, ageMs },
      'took back what the previous process held; resuming its gateway sessions',
    );
  }

  /** Saves every few seconds from now on. */
  start(): void {
    this.schedule();
  }

  /**
   * Shutdown, once the gateway is disconnected with its sessions kept: the last state is saved, for the
   * next process to resume from.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.saving;
    await this.save();
  }

  /** Saves the sessions and the presences as of now, unless no session changed since the last save. */
  save(): Promise<void> {
    this.saving ??= this.saveNow().finally(() => {
      this.saving = null;
    });
    return this.saving;
  }

  private schedule(): void {
    if (this.stopped) return;
    const delay = Math.max(STATE_SAVE_INTERVAL_MS, this.lastCostMs * STATE_SAVE_SPACING);
    this.timer = setTimeout(() => {
      void this.save().finally(() => this.schedule());
    }, delay);
    this.timer.unref();
  }

  private async saveNow(): Promise<void> {
    const { store, node, gateway, ingest, registry, policy, logger } = this.options;
    const sessions = gateway.savedSessions().filter((session) => this.runs(session));
    const described = JSON.stringify(sessions);
    if (sessions.length === 0 || (described === this.lastSaved && !this.changed)) return;
    this.changed = false;
    const savedAt = Date.now();
    const started = performance.now();
    // Made in one go, so the presences are those of the sequence numbers saved with them.
    const encoding = encodeSnapshot({
      guildShards: ingest.guildShardEntries(),
      roleHolders: policy.roleHolderEntries(),
      presences: registry.saved(),
    });
    this.lastCostMs = performance.now() - started;
    try {
      await store.save(node, { savedAt, sessions, presences: await encoding });
      this.lastSaved = described;
    } catch (error) {
      this.changed = true;
      logger.warn({ err: error }, 'could not save the gateway state; a restart now would identify');
    }
  }

  /** Drops a saved state that is not to be used: it holds presences, kept no longer than needed. */
  private async clear(): Promise<void> {
    try {
      await this.options.store.clear(this.options.node);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'could not drop the saved gateway state');
    }
  }

  private runs(session: SavedGatewaySession): boolean {
    const { shardIds } = this.options;
    return shardIds === null || shardIds.includes(session.shardId);
  }
}

/** A session as saved, checked: the store is outside the process. */
function isSession(session: SavedGatewaySession): boolean {
  const { shardId, shardCount, sessionId, resumeUrl, sequence } = session as Partial<SavedGatewaySession>;
  return (
    Number.isInteger(shardId) &&
    Number.isInteger(shardCount) &&
    (shardId as number) >= 0 &&
    (shardId as number) < (shardCount as number) &&
    typeof sessionId === 'string' &&
    typeof resumeUrl === 'string' &&
    /^wss?:\/\//.test(resumeUrl) &&
    Number.isInteger(sequence)
  );
}
