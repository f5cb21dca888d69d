import { setTimeout as sleep } from 'node:timers/promises';
import { DiscordAPIError, type REST } from '@discordjs/rest';
import {
  CloseCodes,
  CompressionMethod,
  type SessionInfo,
  WebSocketManager,
  WebSocketShardEvents,
} from '@discordjs/ws';
import {
  type GatewayDispatchPayload,
  GatewayOpcodes,
  type GatewayRequestGuildMembersData,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Metrics } from '../ops/metrics.js';
import type { ShardReport } from '../ops/readiness.js';
import type { SavedGatewaySession } from '../store/ports.js';
import { IdentifyBudget, type IdentifyBudgetReading } from './identify-budget.js';
import { FATAL_CLOSE_CODES, LARGE_THRESHOLD } from './intents.js';

/** Reaching Discord at all (before any gateway session) is retried with backoff between these bounds. */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;

/**
 * A shard disconnected this long has not resumed as a resume does (at once): its users are stale from
 * then on (Discord may still let it resume, which makes them current again), not served as if current.
 */
export const STALE_AFTER_DISCONNECT_MS = 30_000;

export type DispatchHandler = (payload: GatewayDispatchPayload, shardId: number) => void;

export interface GatewayOptions {
  token: string;
  rest: REST;
  logger: Logger;
  /** null: Discord's recommended count. */
  shardCount?: number | null;
  /** null: every shard of shardCount. */
  shardIds?: number[] | null;
  /** A close that reconnecting cannot fix (bad token, disallowed intents). */
  onFatal(code: number, reason: string): void;
  /** Counts dispatches, sessions and disconnects. */
  metrics?: Metrics;
  /** The intents identified with (intentsFor). */
  intents: number;
  /** Tests shorten it; default STALE_AFTER_DISCONNECT_MS. */
  staleAfterMs?: number;
  /** Tests identify without pacing; default IDENTIFY_INTERVAL_MS. */
  identifyIntervalMs?: number;
  /** `compress=zlib-stream`, inflated with node:zlib (GATEWAY_COMPRESSION). */
  compression?: boolean;
}

/**
 * The connection to Discord's gateway. Sharding, heartbeats, resume and reconnect are @discordjs/ws's;
 * this class hands every dispatch to the handlers, tells whether every shard is connected, and when a
 * shard's session is lost (not to be resumed: what was sent meanwhile is never replayed).
 */
export class DiscordGateway {
  private readonly manager: WebSocketManager;
  private readonly handlers: DispatchHandler[] = [];
  private readonly lostHandlers: Array<(shardId: number) => void> = [];
  private readonly silenceHandlers: Array<(shardId: number, silent: boolean) => void> = [];
  private readonly goneHandlers: Array<
    (shardId: number, shardCount: number, runs: (shardId: number) => boolean) => void
  > = [];
  /** Per shard disconnected: when it goes silent, or that it has (null). */
  private readonly silences = new Map<number, NodeJS.Timeout | null>();
  /** Per instance: the library's default session store is shared by every manager in the process. */
  private readonly sessions = new Map<number, SessionInfo>();
  /**
   * Per shard, the sequence number of the last dispatch every handler has taken in. The library counts a
   * dispatch before handing it over: what is saved to resume from is this, so nothing is skipped.
   */
  private readonly handled = new Map<number, number>();
  /** Each shard this node runs, by id, once Discord told how many. */
  private readonly shardLinks = new Map<number, ShardReport>();
  private shards = 0;
  private fatal = false;
  private destroyed = false;
  /** Discord's daily IDENTIFY budget, and the pace of IDENTIFYs: the library's identify throttler. */
  private readonly budget: IdentifyBudget;
  /** Aborts a wait for the IDENTIFY budget when destroyed. */
  private readonly stopping = new AbortController();

  constructor(private readonly options: GatewayOptions) {
    this.budget = new IdentifyBudget({
      // Read through the library, so that its own reading (checked as it connects) is this one.
      fetchGatewayBot: () => this.manager.fetchGatewayInformation(true),
      logger: options.logger,
      ...(options.identifyIntervalMs === undefined ? {} : { intervalMs: options.identifyIntervalMs }),
    });
    this.manager = new WebSocketManager({
      token: options.token,
      intents: options.intents,
      largeThreshold: LARGE_THRESHOLD,
      compression: options.compression ? CompressionMethod.ZlibNative : null,
      rest: options.rest,
      buildIdentifyThrottler: () => this.budget,
      shardCount: options.shardCount ?? null,
      shardIds: options.shardIds ?? null,
      retrieveSessionInfo: (shardId) => this.sessions.get(shardId) ?? null,
      // The library drops a session exactly when it will identify rather than resume.
      updateSessionInfo: (shardId, info) => {
        if (info) this.sessions.set(shardId, info);
        // Shutting down the library drops every session; they are kept, to be resumed after the restart.
        else if (!this.destroyed && this.sessions.delete(shardId)) this.sessionLost(shardId);
      },
    });
    options.metrics?.identifyBudgetFrom(() => this.identifyBudget);
    this.listen();
  }

  onDispatch(handler: DispatchHandler): void {
    this.handlers.push(handler);
  }

  /** A shard's session ended and will not be resumed: it identifies again, then lists its guilds anew. */
  onSessionLost(handler: (shardId: number) => void): void {
    this.lostHandlers.push(handler);
  }

  /**
   * A shard disconnected for STALE_AFTER_DISCONNECT_MS went silent (true): nothing is heard through its
   * guilds. Resumed since (false): Discord replayed what was sent meanwhile. Lost instead, the session
   * is reported by `onSessionLost`.
   */
  onSilence(handler: (shardId: number, silent: boolean) => void): void {
    this.silenceHandlers.push(handler);
  }

  /** How many shards this node runs; 0 until Discord told the total. */
  get shardCountHere(): number {
    return this.shards;
  }

  /** Shards of this node with a live session. */
  get readyShardCount(): number {
    let ready = 0;
    for (const shard of this.shardLinks.values()) if (shard.state === 'ready') ready++;
    return ready;
  }

  /** Each shard's state and when it last heard from Discord, by id. */
  shardReports(): ShardReport[] {
    return [...this.shardLinks.values()].map((shard) => ({ ...shard }));
  }

  /** Discord's IDENTIFY budget as this node knows it; null until read at the start. */
  get identifyBudget(): IdentifyBudgetReading | null {
    return this.budget.current();
  }

  /** How long the gateway still waits for the IDENTIFY budget to reset before identifying; 0: it does not. */
  get identifyWaitMs(): number {
    return this.budget.waitMs;
  }

  /** Every shard this node runs has a live session. */
  get ready(): boolean {
    const ready = this.readyShardCount;
    return !this.fatal && !this.destroyed && ready > 0 && ready === this.shards;
  }

  /**
   * Before `start`: the sessions a previous process saved, resumed rather than identified (a session of
   * another shard count is identified anew by the library).
   */
  resumeFrom(sessions: readonly SavedGatewaySession[], disconnectedForMs = 0): void {
    for (const saved of sessions) {
      this.sessions.set(saved.shardId, {
        shardId: saved.shardId,
        shardCount: saved.shardCount,
        sessionId: saved.sessionId,
        resumeURL: saved.resumeUrl,
        sequence: saved.sequence,
      });
      this.handled.set(saved.shardId, saved.sequence);
      this.shardLinks.set(saved.shardId, { id: saved.shardId, state: 'resuming', lastEventAt: null });
      // What was taken back goes stale, like any shard's, if Discord cannot be reached to resume it: the
      // previous process has been disconnected for a while already.
      this.disconnected(saved.shardId, disconnectedForMs);
    }
  }

  /**
   * A shard of a previous process that this one does not run as it did (the shard count changed): its
   * session is not resumed, and its guilds are listed anew by the shards that hold them now.
   */
  onShardGone(
    handler: (shardId: number, shardCount: number, runs: (shardId: number) => boolean) => void,
  ): void {
    this.goneHandlers.push(handler);
  }

  /** By shard, the sequence number of the last dispatch every handler has taken in. */
  handledSequences(): ReadonlyMap<number, number> {
    return new Map(this.handled);
  }

  /** Each live session, with the sequence number of what has been taken in: what `resumeFrom` takes. */
  savedSessions(): SavedGatewaySession[] {
    return [...this.sessions.values()].map((session) => ({
      shardId: session.shardId,
      shardCount: session.shardCount,
      sessionId: session.sessionId,
      resumeUrl: session.resumeURL,
      sequence: this.handled.get(session.shardId) ?? session.sequence,
    }));
  }

  /**
   * Connects in the background and returns at once: HTTP keeps answering while Discord is slow or down.
   * `ready` tells when every shard has a session.
   */
  start(): void {
    void this.connectWithRetry();
  }

  private async connectWithRetry(): Promise<void> {
    const { logger } = this.options;
    let delay = FIRST_RETRY_MS;
    while (!this.destroyed && !this.fatal) {
      try {
        // Reads the budget (its first reading also serves the library), waiting here, before any
        // connection, while it is under the reserve; not when there are sessions to resume, which spend
        // none of it (a shard that has to identify still waits, in the throttler).
        if (this.sessions.size === 0) await this.budget.ready(this.stopping.signal);
        else await this.budget.observe(this.stopping.signal);
        const ids = await this.manager.getShardIds();
        this.dropSessionsOtherThan(ids, await this.manager.getShardCount());
        this.shards = ids.length;
        for (const id of ids) {
          if (!this.shardLinks.has(id)) {
            this.shardLinks.set(id, { id, state: 'identifying', lastEventAt: null });
            this.disconnected(id);
          }
        }
        await this.manager.connect();
        return;
      } catch (error) {
        if (this.destroyed) return;
        if (error instanceof DiscordAPIError && error.status === 401) {
          this.failed(4004, FATAL_CLOSE_CODES.get(4004) as string);
          return;
        }
        logger.error({ err: error, retryInMs: delay }, 'could not connect to Discord; retrying');
        await sleep(delay, undefined, { ref: false });
        delay = Math.min(delay * 2, MAX_RETRY_MS);
      }
    }
  }

  /** Sessions taken back for shards not run as they were: see `onShardGone`. */
  private dropSessionsOtherThan(ids: readonly number[], shardCount: number): void {
    for (const [shardId, session] of [...this.sessions]) {
      if (ids.includes(shardId) && session.shardCount === shardCount) continue;
      this.sessions.delete(shardId);
      this.handled.delete(shardId);
      const timer = this.silences.get(shardId);
      if (timer) clearTimeout(timer);
      this.silences.delete(shardId);
      if (ids.includes(shardId)) {
        this.setState(shardId, 'identifying');
        this.disconnected(shardId);
      } else {
        this.shardLinks.delete(shardId);
      }
      this.options.logger.info({ shardId, shardCount }, 'not resuming a session of another shard count');
      for (const handler of this.goneHandlers) {
        try {
          handler(shardId, shardCount, (id) => ids.includes(id));
        } catch (error) {
          this.options.logger.error({ err: error, shardId }, 'failed to let go of a shard');
        }
      }
    }
  }

  private failed(code: number, reason: string): void {
    if (this.fatal) return;
    this.fatal = true;
    this.options.logger.fatal({ code }, `Discord refused the bot: ${reason}`);
    this.options.onFatal(code, reason);
  }

  async requestMembers(shardId: number, data: GatewayRequestGuildMembersData): Promise<void> {
    try {
      await this.manager.send(shardId, { op: GatewayOpcodes.RequestGuildMembers, d: data });
    } catch (error) {
      this.options.logger.warn({ err: error, shardId, guildId: data.guild_id }, 'member request failed');
    }
  }

  /**
   * Disconnects. `keepSessions`: closed with a code that leaves each session resumable (any but 1000 and
   * 1001), for the next process to resume from `savedSessions`; else the sessions end.
   */
  async destroy(options: { keepSessions?: boolean } = {}): Promise<void> {
    this.destroyed = true;
    this.stopping.abort();
    for (const timer of this.silences.values()) if (timer) clearTimeout(timer);
    this.silences.clear();
    await this.manager.destroy({
      reason: 'shutting down',
      ...(options.keepSessions ? { code: CloseCodes.Resuming } : {}),
    });
    if (!options.keepSessions) this.sessions.clear();
  }

  private sessionLost(shardId: number): void {
    this.setState(shardId, 'identifying');
    if (this.destroyed) return;
    this.disconnected(shardId);
    // After a fatal close nothing identifies again, and nothing more is heard either.
    if (!this.fatal) this.options.logger.warn({ shardId }, 'gateway session lost; identifying again');
    for (const handler of this.lostHandlers) {
      try {
        handler(shardId);
      } catch (error) {
        this.options.logger.error({ err: error, shardId }, 'failed to handle a lost gateway session');
      }
    }
  }

  private setState(shardId: number, state: ShardReport['state']): void {
    const shard = this.shardLinks.get(shardId);
    if (shard) shard.state = state;
  }

  private disconnected(shardId: number, alreadyMs = 0): void {
    if (this.destroyed || this.silences.has(shardId)) return;
    const timer = setTimeout(
      () => {
        this.silences.set(shardId, null);
        this.options.logger.warn({ shardId }, 'gateway shard disconnected for too long: its users are stale');
        this.tellSilence(shardId, true);
      },
      Math.max(0, (this.options.staleAfterMs ?? STALE_AFTER_DISCONNECT_MS) - alreadyMs),
    );
    timer.unref();
    this.silences.set(shardId, timer);
  }

  /** `resumed`: with everything sent meanwhile replayed; else a new session, which lists anew. */
  private connected(shardId: number, resumed: boolean): void {
    const timer = this.silences.get(shardId);
    if (timer === undefined) return;
    this.silences.delete(shardId);
    if (timer) clearTimeout(timer);
    else if (resumed) this.tellSilence(shardId, false);
  }

  private tellSilence(shardId: number, silent: boolean): void {
    for (const handler of this.silenceHandlers) {
      try {
        handler(shardId, silent);
      } catch (error) {
        this.options.logger.error({ err: error, shardId }, 'failed to handle a silent gateway shard');
      }
    }
  }

  /** Discord sent the shard something: a dispatch, or a heartbeat acknowledgement. */
  private heard(shardId: number): void {
    const shard = this.shardLinks.get(shardId);
    if (shard) shard.lastEventAt = Date.now();
  }

  private listen(): void {
    const { logger, metrics } = this.options;
    this.manager.on(WebSocketShardEvents.Dispatch, (payload, shardId) => {
      this.heard(shardId);
      metrics?.gatewayDispatch(payload.t);
      for (const handler of this.handlers) {
        try {
          handler(payload, shardId);
        } catch (error) {
          logger.error({ err: error, event: payload.t, shardId }, 'failed to handle a gateway event');
        }
      }
      this.handled.set(shardId, payload.s);
    });
    this.manager.on(WebSocketShardEvents.HeartbeatComplete, (_stats, shardId) => this.heard(shardId));
    this.manager.on(WebSocketShardEvents.Ready, (data, shardId) => {
      this.setState(shardId, 'ready');
      this.connected(shardId, false);
      metrics?.gatewaySession('new');
      logger.info({ shardId, guilds: data.guilds.length, user: data.user.username }, 'gateway session ready');
    });
    this.manager.on(WebSocketShardEvents.Resumed, (shardId) => {
      this.setState(shardId, 'ready');
      this.connected(shardId, true);
      metrics?.gatewaySession('resumed');
      logger.info({ shardId }, 'gateway session resumed');
    });
    this.manager.on(WebSocketShardEvents.Closed, (code, shardId) => {
      // Resumed unless the library drops the session, which it does before or just after this.
      this.setState(shardId, this.sessions.has(shardId) ? 'resuming' : 'identifying');
      this.disconnected(shardId);
      if (!this.destroyed) metrics?.gatewayDisconnect(code);
      const fatalReason = FATAL_CLOSE_CODES.get(code);
      if (fatalReason !== undefined) {
        this.failed(code, fatalReason);
        return;
      }
      if (!this.destroyed)
        logger.warn({ shardId, code }, 'gateway connection closed; resuming or reconnecting');
    });
    this.manager.on(WebSocketShardEvents.Error, (error, shardId) => {
      // After a close that must not be retried the library reports it again, as an error with a stack:
      // the fatal line has said it plainly, so this one only matters when debugging.
      if (this.fatal) logger.debug({ err: error, shardId }, 'gateway error after a fatal close');
      else logger.error({ err: error, shardId }, 'gateway error');
    });
    this.manager.on(WebSocketShardEvents.Debug, (message, shardId) => {
      logger.trace({ shardId }, message);
    });
  }
}
