import type { Logger } from 'pino';
import type { Snowflake } from '../presence/model.js';
import type { PresenceRegistry } from '../presence/registry/registry.js';
import type { GatewayStateStore, SavedGatewaySession } from '../store/ports.js';
import type { DiscordGateway } from './gateway.js';
import type { GatewayIngest } from './ingest.js';
import type { MonitorPolicy } from './monitor-policy.js';
import { decodeSnapshot, encodeSnapshot } from './restart-snapshot.js';
import { openState, sealState } from './state-seal.js';

/** The gateway state is saved at most this often (and on shutdown). */
export const STATE_SAVE_INTERVAL_MS = 5_000;
/**
 * Making a snapshot takes the event loop's time for as long as it takes to go over every presence (a
 * turn at a time): the next one waits this many times as long, so saving takes a small share of it.
 */
export const STATE_SAVE_SPACING = 50;
/**
 * A saved state older than this is not taken back: Discord keeps a session resumable only for a while
 * (it does not say how long), and presences this old would be served as current until refused.
 */
export const STATE_MAX_AGE_MS = 5 * 60_000;
/** A state saved this far in the future (by another host's clock) is still taken back. */
const CLOCK_SKEW_MS = 60_000;
/** The save at shutdown waits this long for the store at most. */
export const FINAL_SAVE_TIMEOUT_MS = 3_000;

export interface RestartStateOptions {
  store: GatewayStateStore;
  /** Seals what is saved (`stateKey` of the bot's token). */
  key: Buffer;
  /**
   * The settings a snapshot depends on (shards, intents, who is monitored), as text: a state saved under
   * others is not taken back.
   */
  settings: string;
  /** Which ingest node this is: each saves its own shards' state. */
  node: string;
  /** The shards this node runs; null: every shard. */
  shardIds: readonly number[] | null;
  gateway: DiscordGateway;
  ingest: GatewayIngest;
  registry: PresenceRegistry;
  policy: MonitorPolicy;
  logger: Logger;
  /** After presences were taken back: they wait to be rendered, as pending members. */
  onRestored(): void;
  /**
   * On an instance that monitors only who opted in: who has. Saved with the state, so the next process
   * can tell who opted in while no process was there to hear it.
   */
  optedIn?: () => Iterable<Snowflake>;
}

/** What a process took back. */
export interface Restored {
  /** Who opted in since the state was saved (see `RestartStateOptions.optedIn`). */
  optedInSince: Snowflake[];
}

/**
 * Resume across restarts: each shard's session and the presences held, saved every few seconds and on
 * shutdown, and taken back by the next process before it connects, so that it resumes its sessions
 * rather than identifying and listing every guild again. The sequence numbers saved are those of the
 * snapshot's start: after a crash Discord replays what came since.
 */
export class RestartState {
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<boolean> | null = null;
  /** When the state last saved (or taken back) was saved. */
  private lastSavedAt = 0;
  /** The final save was given up on: nothing is written after the shutdown moved on. */
  private abandoned = false;
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
   * Takes back what the previous process saved when it is recent, sealed with this bot's token and made
   * under the same settings, and hands its sessions to the gateway to resume. Anything else (nothing
   * saved, too old, damaged or forged, other settings, the store down): the gateway identifies and lists
   * every guild, as on a first start. Whether anything was taken back.
   */
  async restore(): Promise<Restored | null> {
    const { logger } = this.options;
    try {
      return await this.restoreSaved();
    } catch (error) {
      logger.warn({ err: error }, 'could not take back the saved gateway state; identifying');
      await this.clear();
      return null;
    }
  }

  private async restoreSaved(): Promise<Restored | null> {
    const { store, node, logger, registry, policy, ingest, gateway, key } = this.options;
    let state: Awaited<ReturnType<GatewayStateStore['load']>>;
    try {
      state = await store.load(node);
    } catch (error) {
      logger.warn({ err: error }, 'could not read the saved gateway state; identifying');
      return null;
    }
    if (!state) return null;
    const now = Date.now();
    const ageMs = now - state.savedAt;
    const saved = Array.isArray(state.sessions) ? state.sessions : [];
    if (!Number.isFinite(ageMs) || ageMs > STATE_MAX_AGE_MS || ageMs < -CLOCK_SKEW_MS) {
      logger.info({ ageMs }, 'the saved gateway state is too old to resume from; identifying');
      await this.clear();
      return null;
    }
    const sealed = openState(key, node, state.savedAt, saved, state.presences);
    const snapshot = sealed && saved.every(isSession) ? await decodeSnapshot(sealed) : null;
    if (!snapshot) {
      logger.warn('the saved gateway state is damaged or was not made by this bot; identifying');
      await this.clear();
      return null;
    }
    if (snapshot.settings !== this.options.settings) {
      logger.info('the settings changed since the gateway state was saved; identifying');
      await this.clear();
      return null;
    }
    const sessions = saved.filter((session) => this.runs(session));
    const shardIds = sessions.map((session) => session.shardId);
    const startedAt = new Map(sessions.map((session) => [session.shardId, session.sequence]));
    const guilds = new Set<Snowflake>();
    for (const [guildId, shardId] of snapshot.guildShards) {
      if (startedAt.has(shardId) && policy.countsGuild(guildId)) guilds.add(guildId);
    }
    // Everything is checked before anything is taken back: what follows only applies it.
    policy.restoreRoleHolders(snapshot.roleHolders, guilds);
    const heldUpTo = new Map<number, Map<Snowflake, number>>();
    let users = 0;
    for (const presence of snapshot.presences) {
      const guildIds = presence.guildIds.filter((guildId) => guilds.has(guildId));
      if (guildIds.length === 0 || !policy.monitors(presence.userId)) continue;
      try {
        registry.restore({ ...presence, guildIds });
      } catch (error) {
        logger.warn({ err: error, userId: presence.userId }, 'could not take back a presence');
        continue;
      }
      users++;
      for (const [shardId, sequence] of presence.sequences) {
        const start = startedAt.get(shardId);
        if (start === undefined || sequence <= start) continue;
        const held = heldUpTo.get(shardId) ?? new Map<Snowflake, number>();
        heldUpTo.set(shardId, held);
        held.set(presence.userId, sequence);
      }
    }
    ingest.restore(
      shardIds,
      snapshot.guildShards.filter(([guildId]) => guilds.has(guildId)),
      heldUpTo,
    );
    // Disconnected since about when it was saved: gone stale as soon as any disconnected shard would.
    gateway.resumeFrom(sessions, Math.max(0, ageMs));
    this.lastSavedAt = state.savedAt;
    this.options.onRestored();
    logger.info(
      { users, guilds: guilds.size, shards: shardIds, ageMs },
      'took back what the previous process held; resuming its gateway sessions',
    );
    const before = new Set(snapshot.optedIn);
    const optedInSince = [...(this.options.optedIn?.() ?? [])].filter((userId) => !before.has(userId));
    return { optedInSince };
  }

  /** Saves every few seconds from now on. */
  start(): void {
    this.schedule();
  }

  /**
   * Shutdown, once the gateway is disconnected with its sessions kept: the last state is saved, for the
   * next process to resume from.
   */
  async stop(): Promise<boolean> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    // Saved even when nothing changed, so a quiet bot's state is as recent as the shutdown; within a
    // bound, so a store that does not answer cannot hold the shutdown.
    const saved = (this.saving ?? Promise.resolve(false)).then(() => this.saveNow(true));
    const timeout = new Promise<'late'>((resolve) =>
      setTimeout(resolve, FINAL_SAVE_TIMEOUT_MS, 'late').unref(),
    );
    const outcome = await Promise.race([saved, timeout]);
    if (outcome !== 'late') return outcome;
    this.abandoned = true;
    this.options.logger.warn(
      'the gateway state was not saved in time: the next start resumes from the one saved before, if any is recent enough',
    );
    return false;
  }

  /** Saves the sessions and the presences as of now, unless no session changed since the last save. */
  save(): Promise<boolean> {
    this.saving ??= this.saveNow(false).finally(() => {
      this.saving = null;
    });
    return this.saving;
  }

  private schedule(): void {
    if (this.stopped) return;
    // Never so far apart that the state a crash leaves is too old to be taken back.
    const delay = Math.min(
      Math.max(STATE_SAVE_INTERVAL_MS, this.lastCostMs * STATE_SAVE_SPACING),
      STATE_MAX_AGE_MS / 2,
    );
    this.timer = setTimeout(() => {
      void this.save().finally(() => this.schedule());
    }, delay);
    this.timer.unref();
  }

  /**
   * The sessions of shards whose guilds are all known in full (none being listed, or waiting to be: a
   * resume would never list them), and the presences. `always` (the shutdown): even when nothing changed,
   * and with no such shard, what was saved before is dropped, its sessions no longer the current ones.
   * Whether a state was saved.
   */
  private async saveNow(always: boolean): Promise<boolean> {
    const { store, node, gateway, ingest, registry, policy, logger, key } = this.options;
    const sessions = gateway
      .savedSessions()
      .filter((session) => this.runs(session) && ingest.knownInFull(session.shardId));
    const described = JSON.stringify(sessions);
    if (sessions.length === 0) {
      if (always) await this.clear();
      return false;
    }
    // A quiet bot's state is refreshed before it would be too old to take back after a crash.
    const due = Date.now() - this.lastSavedAt >= STATE_MAX_AGE_MS / 2;
    if (!always && !due && described === this.lastSaved && !this.changed) return false;
    this.changed = false;
    const savedAt = Date.now();
    try {
      // The sessions' sequence numbers are read before the presences: a resume replays what came after.
      const { bytes, busyMs } = await encodeSnapshot({
        settings: this.options.settings,
        sequences: () => gateway.handledSequences(),
        guildShards: ingest.guildShardEntries(),
        roleHolders: policy.roleHolderEntries(),
        optedIn: [...(this.options.optedIn?.() ?? [])],
        presences: registry.saved(),
      });
      this.lastCostMs = busyMs;
      if (this.abandoned) return false;
      const presences = sealState(key, node, savedAt, sessions, bytes);
      await store.save(node, { savedAt, sessions, presences }, STATE_MAX_AGE_MS);
      this.lastSaved = described;
      this.lastSavedAt = savedAt;
      return true;
    } catch (error) {
      this.changed = true;
      logger.warn({ err: error }, 'could not save the gateway state; a restart now would identify');
      return false;
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
function isSession(session: unknown): session is SavedGatewaySession {
  if (typeof session !== 'object' || session === null) return false;
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
