import type { AddressInfo } from 'node:net';
import {
  type APIApplicationCommand,
  type APIEmbed,
  type APIMessage,
  type APIUser,
  ApplicationFlags,
  GatewayDispatchEvents,
  GatewayIntentBits,
  GatewayOpcodes,
  type MessageFlags,
  MessageReferenceType,
  MessageType,
  type RESTPostAPIChannelMessageJSONBody,
  type UserFlags,
} from 'discord-api-types/v10';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Profile, RawPresence } from '../presence/model.js';
import { BotMessages, DEFAULT_WAIT_MS } from './bot-messages.js';
import { cdnRoutes } from './cdn.js';
import { SimulatorFaults } from './faults.js';
import {
  ALL_INTENTS,
  type MemberRequest,
  type OutgoingDispatch,
  type Session,
  SimulatedGateway,
  type SimulatorLogger,
} from './gateway.js';
import {
  DEFAULT_INTERACTION_RESPONSE_MS,
  DEFAULT_INTERACTION_TOKEN_MS,
  type InteractInput,
  Interactions,
  type MessageChange,
  type SimInteraction,
} from './interactions.js';
import { RequestLog, type RequestRecord } from './request-log.js';
import { type RateLimitOptions, RestErrorCodes, restRoutes, sendError } from './rest.js';
import {
  defaultUser,
  discordTimestamp,
  type GuildInput,
  type MemberInput,
  normalizePresence,
  type PresenceInput,
  type SimChannel,
  type SimGuild,
  SimulatorState,
  type UserInput,
} from './state.js';

export { DEFAULT_WAIT_MS } from './bot-messages.js';
export type { MemberRequest, SimulatorLogger } from './gateway.js';
export type { InteractInput, SimInteraction } from './interactions.js';
export type { RateLimitOptions } from './rest.js';
export type { GuildInput, MemberInput, MessageRefusal, PresenceInput, UserInput } from './state.js';
export { shardFor } from './state.js';

export const DEFAULT_TOKEN = 'simulator-token';
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 41_250;
export const DEFAULT_BOT_USER: Readonly<APIUser> = {
  id: '1204567890123456789',
  username: 'Presently',
  discriminator: '0',
  global_name: null,
  avatar: null,
  bot: true,
  public_flags: 0 as UserFlags,
  flags: 0 as UserFlags,
  avatar_decoration_data: null,
};
/** Generous enough that a test never waits on it; @discordjs/rest still sees real headers. */
export const DEFAULT_RATE_LIMIT: RateLimitOptions = { limit: 50, windowMs: 1000 };
/** Discord lists a guild's members in full once per bot in this window; a request inside it gets RATE_LIMITED. */
export const DEFAULT_MEMBER_REQUEST_COOLDOWN_MS = 30_000;
/** Discord's GUILD_CREATE lists only the bot and who is in voice past this many members. */
export const DEFAULT_HUGE_GUILD_MEMBERS = 75_000;
/** Discord's session start limit for most bots: 1,000 IDENTIFYs a day. */
export const DEFAULT_SESSION_START_LIMIT = { total: 1000, resetAfterMs: 24 * 60 * 60 * 1000 } as const;
/**
 * How long a session without a connection stays resumable. Discord does not document its window; this is a
 * conservative stand-in.
 */
export const DEFAULT_SESSION_RESUME_WINDOW_MS = 120_000;
/** Messages kept for replies and for sentMessages(). */
const MAX_KEPT_MESSAGES = 5000;

export interface DiscordSimulatorOptions {
  /** The bot token clients must present (without "Bot "). Default 'simulator-token'. */
  token?: string;
  /** Shards `GET /gateway/bot` recommends. Default 1. */
  shardCount?: number;
  /** HELLO's heartbeat_interval. Default 41,250 ms, as Discord's; keep it short in tests. */
  heartbeatIntervalMs?: number;
  /** Merged over DEFAULT_BOT_USER. */
  botUser?: Partial<APIUser>;
  /** Default: the bot user's id, as for every bot made since 2016. */
  applicationId?: string;
  /**
   * Intents the app may use, privileged ones being what matters: identifying with a privileged intent not
   * in here closes with 4014. Default: all.
   */
  allowedIntents?: number;
  /** session_start_limit.max_concurrency. Default 1 (so @discordjs/ws waits 5 s between identifies). */
  maxConcurrency?: number;
  /**
   * The bot's session starts (`session_start_limit` of `GET /gateway/bot`): `total` IDENTIFYs per window of
   * `resetAfterMs`, windows counted from when the simulator is made; `remaining` is what the first window
   * has left (default: all of it), as if spent before. Each IDENTIFY the gateway accepts spends one (RESUMEs
   * none); one past the last is closed with 4004 Authentication failed, as Discord's is once it has reset
   * the bot's token (the simulator keeps the token, and counts the refusal in `sessionStarts.refused`).
   * Default 1,000 a day, as Discord's.
   */
  sessionStartLimit?: { total?: number; remaining?: number; resetAfterMs?: number };
  /**
   * Minimum time between two all-member requests for one guild, across sessions (RATE_LIMITED dispatch).
   * Default 30 s, as Discord's; 0: off. Requests by user id are not limited.
   */
  memberRequestCooldownMs?: number;
  /**
   * Past this many members a guild's GUILD_CREATE carries only the bot (and members in voice, whom the
   * simulator has none of), as Discord's does past 75,000. Default 75,000; tests lower it.
   */
  hugeGuildMembers?: number;
  /**
   * How long a session that lost its connection stays resumable: a RESUME of a session without a connection
   * for longer is answered op 9 `d: false` (counted in `refusedResumeCount`) and the session is gone, so the
   * client identifies anew. A session with a connection never expires. Discord keeps a disconnected session
   * only for a while but does not document how long; the default, 120 s, is a conservative stand-in.
   * `faults.expireDetachedSessions()` ends them at once, for tests that should not wait.
   */
  sessionResumeWindowMs?: number;
  /** REST buckets. Default 50 requests per second per route. */
  rateLimit?: RateLimitOptions;
  /**
   * How long after dispatching an interaction the app may send its initial callback; later, the callback
   * gets 404 Unknown interaction (10062) and the interaction's response() rejects. Default 3 s, as Discord's.
   */
  interactionResponseMs?: number;
  /**
   * How long an interaction's token serves its edits and follow-ups; later, 404 Unknown Webhook (10015).
   * Default 15 minutes, as Discord's.
   */
  interactionTokenMs?: number;
  /** Loopback address to listen on. Default 127.0.0.1. */
  host?: string;
  logger?: SimulatorLogger;
}

export interface SetPresenceOptions {
  /**
   * Shift each guild's copy's activity timestamps (start, end, created_at) by a different amount up to
   * this many ms, as Discord's per-guild copies differ. Default 0: identical copies.
   */
  jitterMs?: number;
  /** Send the full user object instead of `{id}`. */
  fullUser?: boolean;
}

export interface MemberUpdate {
  /** `id` names the member; other fields change the user. */
  user: UserInput;
  nick?: string | null;
  roles?: string[];
}

export interface UserMessage {
  /** Default: the author's DM channel with the bot (unless guildId is given). */
  channelId?: string;
  guildId?: string;
  /** A user id or user object. */
  author: string | UserInput;
  content: string;
}

/**
 * A simulated Discord on loopback: gateway v10 (JSON, zlib-stream compressed if asked) and REST v10 on one
 * HTTP server, plus a tiny CDN. The real @discordjs/ws and @discordjs/rest talk to it unchanged. Drivers
 * change the world (guilds, members, presences, messages), run the app's slash commands, and dispatch what
 * Discord would; `faults` breaks connections the ways Discord does.
 */
export class DiscordSimulator {
  private readonly state: SimulatorState;
  private readonly gateway: SimulatedGateway;
  private readonly options: Required<
    Omit<DiscordSimulatorOptions, 'botUser' | 'logger' | 'applicationId' | 'sessionStartLimit'>
  > & {
    logger?: SimulatorLogger;
  };
  private http: FastifyInstance | null = null;
  private origin: string | null = null;
  private readonly messages = new Map<string, APIMessage>();
  private readonly botMessages = new BotMessages(MAX_KEPT_MESSAGES);
  private readers: Array<(message: APIMessage) => Promise<void> | void> = [];
  private readonly requestLog = new RequestLog();
  private readonly interactions: Interactions;
  /** Breaks connections and refuses the bot the ways Discord does. */
  readonly faults: SimulatorFaults;
  private readonly sessionStartLimit: { total: number; resetAfterMs: number };
  /** The session start window under way: when it ends, and what is left of it. */
  private sessionWindow: { endsAt: number; remaining: number };
  private refusedSessionStarts = 0;

  constructor(options: DiscordSimulatorOptions = {}) {
    this.options = {
      token: options.token ?? DEFAULT_TOKEN,
      shardCount: options.shardCount ?? 1,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
      allowedIntents: options.allowedIntents ?? ALL_INTENTS,
      maxConcurrency: options.maxConcurrency ?? 1,
      memberRequestCooldownMs: options.memberRequestCooldownMs ?? DEFAULT_MEMBER_REQUEST_COOLDOWN_MS,
      hugeGuildMembers: options.hugeGuildMembers ?? DEFAULT_HUGE_GUILD_MEMBERS,
      sessionResumeWindowMs: options.sessionResumeWindowMs ?? DEFAULT_SESSION_RESUME_WINDOW_MS,
      rateLimit: options.rateLimit ?? DEFAULT_RATE_LIMIT,
      interactionResponseMs: options.interactionResponseMs ?? DEFAULT_INTERACTION_RESPONSE_MS,
      interactionTokenMs: options.interactionTokenMs ?? DEFAULT_INTERACTION_TOKEN_MS,
      host: options.host ?? '127.0.0.1',
      ...(options.logger ? { logger: options.logger } : {}),
    };
    const total = options.sessionStartLimit?.total ?? DEFAULT_SESSION_START_LIMIT.total;
    const resetAfterMs = Math.max(
      1,
      options.sessionStartLimit?.resetAfterMs ?? DEFAULT_SESSION_START_LIMIT.resetAfterMs,
    );
    this.sessionStartLimit = { total, resetAfterMs };
    this.sessionWindow = {
      endsAt: Date.now() + resetAfterMs,
      remaining: options.sessionStartLimit?.remaining ?? total,
    };
    const bot: APIUser = { ...DEFAULT_BOT_USER, ...options.botUser, bot: true };
    const applicationId = options.applicationId ?? bot.id;
    this.state = new SimulatorState(bot.id);
    this.state.users.set(bot.id, bot);
    this.gateway = new SimulatedGateway({
      state: this.state,
      token: this.options.token,
      heartbeatIntervalMs: this.options.heartbeatIntervalMs,
      allowedIntents: this.options.allowedIntents,
      applicationId,
      applicationFlags: applicationFlags(this.options.allowedIntents),
      resumeUrl: () => this.gatewayUrl,
      memberRequestCooldownMs: this.options.memberRequestCooldownMs,
      hugeGuildMembers: this.options.hugeGuildMembers,
      sessionResumeWindowMs: this.options.sessionResumeWindowMs,
      logger: this.options.logger,
      startSession: () => this.startSession(),
    });
    this.faults = new SimulatorFaults(this.gateway, this.state);
    this.interactions = new Interactions({
      state: this.state,
      gateway: this.gateway,
      applicationId,
      responseMs: this.options.interactionResponseMs,
      tokenMs: this.options.interactionTokenMs,
      waitMs: DEFAULT_WAIT_MS,
      cdnUrl: () => this.cdnUrl,
      publish: (change, message, channel) => this.publishInteractionMessage(change, message, channel),
    });
  }

  // ---- lifecycle ------------------------------------------------------------------------------------

  /** Listens on an ephemeral port: REST under /api, the CDN under /cdn, the gateway on websocket upgrade. */
  async start(): Promise<void> {
    if (this.http) throw new Error('simulated Discord: already started');
    // Interaction tokens in paths run to some 200 characters.
    const app = Fastify({
      logger: false,
      forceCloseConnections: true,
      routerOptions: { maxParamLength: 1000 },
    });
    this.http = app;

    app.addHook('onResponse', async (request, reply) => this.requestLog.record(request, reply.statusCode));
    app.setNotFoundHandler((_request, reply) =>
      sendError(reply, 404, { message: '404: Not Found', code: 0 }),
    );
    app.setErrorHandler((error: { statusCode?: number }, _request, reply) => {
      const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
      if (status === 413) {
        return sendError(reply, 413, {
          message: 'Request entity too large',
          code: RestErrorCodes.RequestEntityTooLarge,
        });
      }
      const text = status === 500 ? 'Internal Server Error' : 'Bad Request';
      return sendError(reply, status, { message: `${status}: ${text}`, code: 0 });
    });
    app.register(
      restRoutes({
        token: this.options.token,
        state: this.state,
        gatewayUrl: () => this.gatewayUrl,
        shardCount: this.options.shardCount,
        maxConcurrency: this.options.maxConcurrency,
        sessionStarts: () => this.sessionStartsNow(),
        rateLimit: this.options.rateLimit,
        postMessage: (channel, body) => this.postBotMessage(channel, body),
        routes: this.interactions.routes,
      }),
      { prefix: '/api/v10' },
    );
    app.register(cdnRoutes, { prefix: '/cdn' });
    app.server.on('upgrade', (request, socket, head) => this.gateway.handleUpgrade(request, socket, head));

    await app.listen({ port: 0, host: this.options.host });
    const { port } = app.server.address() as AddressInfo;
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    this.origin = `${host}:${port}`;
    this.options.logger?.info({ api: this.apiUrl, gateway: this.gatewayUrl }, 'simulated Discord listening');
  }

  /** Terminates every gateway socket, closes the server; pending waits reject. Safe to call twice. */
  async stop(): Promise<void> {
    const app = this.http;
    if (!app) return;
    this.http = null;
    this.gateway.shutdown();
    this.botMessages.stop();
    this.interactions.stop();
    await app.close();
  }

  // ---- session starts (IDENTIFYs a day) -------------------------------------------------------------

  /** The window under way, a new one begun if the last has ended. */
  private sessionStartsNow(): { total: number; remaining: number; resetAfterMs: number } {
    const { total, resetAfterMs } = this.sessionStartLimit;
    const now = Date.now();
    const window = this.sessionWindow;
    if (now >= window.endsAt) {
      const ended = Math.floor((now - window.endsAt) / resetAfterMs) + 1;
      this.sessionWindow = { endsAt: window.endsAt + ended * resetAfterMs, remaining: total };
    }
    return { total, remaining: this.sessionWindow.remaining, resetAfterMs: this.sessionWindow.endsAt - now };
  }

  /** An IDENTIFY the gateway accepts spends a session start; none left, it is refused. */
  private startSession(): boolean {
    if (this.sessionStartsNow().remaining <= 0) {
      this.refusedSessionStarts++;
      this.options.logger?.warn(
        { total: this.sessionStartLimit.total },
        'IDENTIFY past the session start limit: refused with 4004 (Discord resets the token)',
      );
      return false;
    }
    this.sessionWindow.remaining--;
    return true;
  }

  // ---- addresses and identity -----------------------------------------------------------------------

  /** REST base without the version, e.g. http://127.0.0.1:PORT/api (give it to @discordjs/rest as `api`). */
  get apiUrl(): string {
    return `http://${this.address}/api`;
  }

  get cdnUrl(): string {
    return `http://${this.address}/cdn`;
  }

  get gatewayUrl(): string {
    return `ws://${this.address}`;
  }

  get token(): string {
    return this.options.token;
  }

  get botUser(): APIUser {
    return this.state.botUser;
  }

  private get address(): string {
    if (this.origin === null) throw new Error('simulated Discord: not started (await start() first)');
    return this.origin;
  }

  // ---- guilds and members ---------------------------------------------------------------------------

  /** Adds a guild with its members and their presences; a connected shard that owns it gets GUILD_CREATE. */
  createGuild(input: GuildInput): void {
    if (this.state.guilds.has(input.id))
      throw new Error(`simulated Discord: guild ${input.id} exists already`);
    const guild = this.state.addGuild(input, Date.now());
    this.gateway.dispatchToGuild(guild.id, (session) => this.gateway.guildCreate(guild, session));
  }

  /**
   * GUILD_DELETE. By default the bot left (or was removed from) the guild and it is forgotten;
   * `unavailable: true` is an outage instead: the guild stays, unavailable, until restoreGuild().
   */
  deleteGuild(guildId: string, options: { unavailable?: boolean } = {}): void {
    const guild = this.guild(guildId);
    if (options.unavailable) {
      guild.unavailable = true;
    } else {
      this.state.guilds.delete(guildId);
      for (const channelId of guild.channelIds) this.state.channels.delete(channelId);
    }
    this.gateway.dispatchToGuild(guildId, () => ({
      op: GatewayOpcodes.Dispatch,
      t: GatewayDispatchEvents.GuildDelete,
      d: options.unavailable ? { id: guildId, unavailable: true } : { id: guildId },
    }));
  }

  /** Ends an outage started with deleteGuild(id, {unavailable: true}): GUILD_CREATE. */
  restoreGuild(guildId: string): void {
    const guild = this.guild(guildId);
    if (!guild.unavailable) return;
    guild.unavailable = false;
    this.gateway.dispatchToGuild(guildId, (session) => this.gateway.guildCreate(guild, session));
  }

  /** GUILD_MEMBER_ADD, then PRESENCE_UPDATE if the member is not offline. */
  addMember(guildId: string, input: MemberInput): void {
    const guild = this.guild(guildId);
    if (guild.members.has(input.user.id)) {
      throw new Error(`simulated Discord: ${input.user.id} is already a member of ${guildId}`);
    }
    const before = this.state.presences.get(input.user.id);
    const member = this.state.addMember(guild, { ...input, presence: undefined }, Date.now());
    this.gateway.dispatchToGuild(guildId, () => ({
      op: GatewayOpcodes.Dispatch,
      t: GatewayDispatchEvents.GuildMemberAdd,
      d: { ...this.state.memberPayload(member), guild_id: guildId },
    }));
    if (input.presence && !samePresence(before, input.presence)) {
      // A new presence: every shared guild (this one included) hears of it.
      this.setPresence(input.user.id, input.presence);
    } else if (this.state.isOnline(input.user.id)) {
      this.dispatchPresence(guildId, input.user.id, {});
    }
  }

  /** GUILD_MEMBER_UPDATE with the full user object. */
  updateMember(guildId: string, update: MemberUpdate): void {
    const guild = this.guild(guildId);
    const member = guild.members.get(update.user.id);
    if (!member) throw new Error(`simulated Discord: ${update.user.id} is not a member of ${guildId}`);
    this.state.upsertUser(update.user);
    if (update.nick !== undefined) member.nick = update.nick;
    if (update.roles !== undefined) member.roles = update.roles;
    this.dispatchMemberUpdate(guildId, update.user.id);
  }

  /** GUILD_MEMBER_REMOVE. */
  removeMember(guildId: string, userId: string): void {
    const guild = this.guild(guildId);
    if (!guild.members.delete(userId))
      throw new Error(`simulated Discord: ${userId} is not a member of ${guildId}`);
    const user = this.state.users.get(userId) ?? defaultUser(userId);
    this.gateway.dispatchToGuild(guildId, () => ({
      op: GatewayOpcodes.Dispatch,
      t: GatewayDispatchEvents.GuildMemberRemove,
      d: { guild_id: guildId, user },
    }));
  }

  // ---- users, presences, profiles -------------------------------------------------------------------

  /**
   * Sets a user's presence and sends one PRESENCE_UPDATE per available guild the user shares with the bot.
   * Returns how many guild copies were sent (to sessions that exist; 0 if the user shares no guild).
   */
  setPresence(userId: string, presence: PresenceInput, options: SetPresenceOptions = {}): number {
    if (!this.state.users.has(userId)) this.state.upsertUser({ id: userId });
    this.state.setPresence(userId, presence);
    const guilds = this.state.guildsOf(userId).filter((guild) => !guild.unavailable);
    const jitter = options.jitterMs ?? 0;
    guilds.forEach((guild, index) => {
      // Distinct shifts in (0, jitter]: no two copies alike.
      const shiftMs = jitter > 0 ? Math.round((jitter * (index + 1)) / guilds.length) : 0;
      this.dispatchPresence(guild.id, userId, { shiftMs, fullUser: options.fullUser ?? false });
    });
    return guilds.length;
  }

  /** The profile `GET /users/:id` answers with (banner hash, accent colour). Creates the user if unknown. */
  setProfile(userId: string, profile: Partial<Profile>): void {
    this.state.upsertUser({ id: userId, ...profile });
  }

  /**
   * Changes a stored user (what `GET /users/:id` returns). The bot: USER_UPDATE to every session. Anyone
   * else: GUILD_MEMBER_UPDATE in each shared guild when a field the gateway shows changed (banner and
   * accent colour are REST-only).
   */
  updateUser(partial: UserInput): void {
    const before = this.state.users.get(partial.id);
    const after = this.state.upsertUser(partial);
    if (after.id === this.state.botUserId) {
      this.gateway.dispatchToAll(() => ({
        op: GatewayOpcodes.Dispatch,
        t: GatewayDispatchEvents.UserUpdate,
        d: after,
      }));
      return;
    }
    if (before && JSON.stringify(before) === JSON.stringify(after)) return;
    for (const guild of this.state.guildsOf(after.id)) {
      if (!guild.unavailable) this.dispatchMemberUpdate(guild.id, after.id);
    }
  }

  // ---- messages -------------------------------------------------------------------------------------

  /** The id of the DM channel between the bot and a user (the one `POST /users/@me/channels` returns). */
  dmChannelFor(userId: string): string {
    if (!this.state.users.has(userId)) this.state.upsertUser({ id: userId });
    return this.state.dmChannelFor(userId).id;
  }

  /** A user writes: MESSAGE_CREATE to the bot (DMs go to shard 0). Returns the message. */
  sendMessage(input: UserMessage): APIMessage {
    const author =
      typeof input.author === 'string'
        ? (this.state.users.get(input.author) ?? this.state.upsertUser({ id: input.author }))
        : this.state.upsertUser(input.author);
    let channel: SimChannel;
    if (input.guildId !== undefined) {
      const guild = this.guild(input.guildId);
      const known = input.channelId === undefined ? undefined : this.state.channels.get(input.channelId);
      if (known && known.guildId !== guild.id) {
        throw new Error(`simulated Discord: channel ${input.channelId} is not in guild ${guild.id}`);
      }
      channel =
        known ??
        (input.channelId === undefined
          ? (this.state.channels.get(guild.channelIds[0] ?? '') as SimChannel)
          : this.state.addGuildChannel(guild, input.channelId, `channel-${guild.channelIds.length}`));
    } else {
      const dm = this.state.dmChannelFor(author.id);
      if (input.channelId !== undefined && input.channelId !== dm.id) {
        const known = this.state.channels.get(input.channelId);
        if (!known) throw new Error(`simulated Discord: unknown channel ${input.channelId} (give guildId?)`);
        channel = known;
      } else {
        channel = dm;
      }
    }
    return this.createMessage(channel, author, { content: input.content });
  }

  /**
   * Runs `reader` on each message the bot posts, once it is there to read and before the bot's request is
   * answered: a user who acts on a message the instant it arrives, before the bot knows Discord took it.
   * Returns what removes it.
   */
  readEachMessage(reader: (message: APIMessage) => Promise<void> | void): () => void {
    this.readers.push(reader);
    return () => {
      this.readers = this.readers.filter((other) => other !== reader);
    };
  }

  /** Messages the bot posted through REST, oldest first; only one channel's if given. */
  sentMessages(channelId?: string): APIMessage[] {
    return this.botMessages.sent(channelId);
  }

  /**
   * The first message the bot posts (or has posted) that matches and that no earlier waitForMessage
   * returned. Rejects after timeoutMs with what the bot did post.
   */
  waitForMessage(
    predicate: (message: APIMessage) => boolean,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<APIMessage> {
    return this.botMessages.waitFor(predicate, timeoutMs);
  }

  // ---- application commands and interactions --------------------------------------------------------

  /** The commands the app registered (`PUT /applications/:id/commands`): the global ones, or a guild's. */
  registeredCommands(guildId?: string): APIApplicationCommand[] {
    return this.interactions.registered(guildId);
  }

  /**
   * A user runs a slash command. Checked as Discord's client checks it first (throws otherwise): the command
   * is registered, allowed in that context and installed there (a guild the bot is not in, or a private
   * channel, takes a user install), the subcommand exists, the options fit. Then INTERACTION_CREATE goes to
   * the shard of the guild (shard 0 outside guilds); the returned interaction shows what the app answered.
   */
  interact(input: InteractInput): SimInteraction {
    return this.interactions.interact(input);
  }

  /** Every message an interaction produced, oldest first, as edited; ephemeral ones included. */
  interactionMessages(): APIMessage[] {
    return this.interactions.messages();
  }

  // ---- observation ---------------------------------------------------------------------------------

  /** Bytes the gateway's sockets sent the clients on the wire, compressed or not. */
  get gatewayBytesSent(): number {
    return this.gateway.bytesSent;
  }

  /** Gateway connections refused while the gateway was unreachable (`faults.gatewayDown`). */
  get refusedConnections(): number {
    return this.gateway.refusedConnections;
  }

  /** Gateway connections opened with `compress=zlib-stream`. */
  get compressedConnections(): number {
    return this.gateway.compressedConnections;
  }

  /** IDENTIFY payloads received (accepted or not). */
  get identifyCount(): number {
    return this.gateway.identifyCount;
  }

  /**
   * The bot's session starts as `GET /gateway/bot` reports them now, and how many IDENTIFYs were refused
   * for want of one (each, at Discord, a reset of the bot's token).
   */
  get sessionStarts(): { total: number; remaining: number; resetAfterMs: number; refused: number } {
    return { ...this.sessionStartsNow(), refused: this.refusedSessionStarts };
  }

  /** Sessions resumed. */
  get resumeCount(): number {
    return this.gateway.resumeCount;
  }

  /**
   * RESUMEs with the right token that restored nothing: the session unknown, ended, past its resume window,
   * or missing events no longer kept (op 9 `d: false`), or a seq from its future (4007).
   */
  get refusedResumeCount(): number {
    return this.gateway.refusedResumeCount;
  }

  /** The sequence number of the last dispatch of the shard's connected session: what a RESUME names. */
  sequenceOf(shardId = 0): number {
    return this.gateway.sequenceOf(shardId);
  }

  /** Every REQUEST_GUILD_MEMBERS received, with the shard it came on. */
  get memberRequests(): readonly MemberRequest[] {
    return this.gateway.memberRequests;
  }

  /** Shards with a live READY (or RESUMED) session. */
  get connectedShards(): number[] {
    return this.gateway.connectedShards;
  }

  /** Resolves when the shard has a live session: at once if it has, else at the next READY or RESUMED. */
  waitForReady(shardId = 0, timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
    return this.gateway.waitForReady(shardId, timeoutMs);
  }

  /** Every HTTP request answered, oldest first. */
  get requests(): readonly RequestRecord[] {
    return this.requestLog.requests;
  }

  /**
   * How many requests matched `"METHOD path"`, where path is concrete (`GET /users/123`) or a route
   * (`GET /users/:id`), relative to apiUrl or cdnUrl (`GET /avatars/:id/:file`).
   */
  requestCount(match: string): number {
    return this.requestLog.count(match);
  }

  // ---- internals ------------------------------------------------------------------------------------

  private guild(guildId: string): SimGuild {
    const guild = this.state.guilds.get(guildId);
    if (!guild) throw new Error(`simulated Discord: unknown guild ${guildId}`);
    return guild;
  }

  private dispatchPresence(
    guildId: string,
    userId: string,
    options: { shiftMs?: number; fullUser?: boolean },
  ): void {
    this.gateway.dispatchToGuild(guildId, () => ({
      op: GatewayOpcodes.Dispatch,
      t: GatewayDispatchEvents.PresenceUpdate,
      d: this.state.presencePayload(guildId, userId, options),
    }));
  }

  private dispatchMemberUpdate(guildId: string, userId: string): void {
    const member = this.state.guilds.get(guildId)?.members.get(userId);
    if (!member) return;
    const { user, ...payload } = this.state.memberPayload(member);
    this.gateway.dispatchToGuild(guildId, () => ({
      op: GatewayOpcodes.Dispatch,
      t: GatewayDispatchEvents.GuildMemberUpdate,
      d: {
        ...payload,
        avatar: payload.avatar ?? null,
        banner: payload.banner ?? null,
        user,
        guild_id: guildId,
      },
    }));
  }

  private async postBotMessage(
    channel: SimChannel,
    body: RESTPostAPIChannelMessageJSONBody,
  ): Promise<APIMessage> {
    const message = this.createMessage(channel, this.state.botUser, body);
    this.botMessages.add(message);
    for (const reader of this.readers) await reader(message);
    return message;
  }

  /**
   * An interaction's message that everyone in its channel sees: one of the bot's messages like any other,
   * dispatched when the bot can see the channel (`channel`; not a guild it is not in, nor a group DM).
   */
  private async publishInteractionMessage(
    change: MessageChange,
    message: APIMessage,
    channel: SimChannel | null,
  ): Promise<void> {
    if (change === 'create') {
      this.keep(message);
      this.botMessages.add(message);
      if (channel) {
        channel.lastMessageId = message.id;
        this.dispatchMessage(channel, message, GatewayDispatchEvents.MessageCreate);
      }
      for (const reader of this.readers) await reader(message);
    } else if (change === 'update') {
      this.botMessages.updated(message);
      if (channel) this.dispatchMessage(channel, message, GatewayDispatchEvents.MessageUpdate);
    } else {
      this.botMessages.remove(message.id);
      this.messages.delete(message.id);
      if (channel) {
        const d = {
          id: message.id,
          channel_id: channel.id,
          ...(channel.guildId ? { guild_id: channel.guildId } : {}),
        };
        this.dispatchToChannel(channel, () => ({
          op: GatewayOpcodes.Dispatch,
          t: GatewayDispatchEvents.MessageDelete,
          d,
        }));
      }
    }
  }

  /** Builds a message as Discord stores it and dispatches MESSAGE_CREATE to whoever may see it. */
  private createMessage(
    channel: SimChannel,
    author: APIUser,
    body: RESTPostAPIChannelMessageJSONBody,
  ): APIMessage {
    const now = Date.now();
    const content = body.content ?? '';
    const reference = body.message_reference;
    const referenced =
      reference?.message_id === undefined ? undefined : this.messages.get(reference.message_id);
    const mentions = this.state.mentionsOf(content, body.allowed_mentions, referenced?.author);
    const message: APIMessage = {
      type: reference ? MessageType.Reply : MessageType.Default,
      channel_id: channel.id,
      content,
      attachments: [],
      embeds: (body.embeds ?? []).map((embed): APIEmbed => ({ type: 'rich' as APIEmbed['type'], ...embed })),
      timestamp: discordTimestamp(now),
      edited_timestamp: null,
      flags: body.flags ?? (0 as MessageFlags),
      components: body.components ?? [],
      id: this.state.ids.next(now),
      author,
      mentions,
      mention_roles: [],
      pinned: false,
      mention_everyone: false,
      tts: body.tts ?? false,
      ...(body.nonce !== undefined ? { nonce: body.nonce } : {}),
      ...(reference
        ? {
            message_reference: {
              type: MessageReferenceType.Default,
              channel_id: reference.channel_id ?? channel.id,
              message_id: reference.message_id,
              ...(channel.guildId ? { guild_id: channel.guildId } : {}),
            },
            referenced_message: referenced ?? null,
          }
        : {}),
    };
    channel.lastMessageId = message.id;
    this.keep(message);
    this.dispatchMessage(channel, message, GatewayDispatchEvents.MessageCreate);
    return message;
  }

  /** Kept for replies to find; past MAX_KEPT_MESSAGES the oldest goes. */
  private keep(message: APIMessage): void {
    this.messages.set(message.id, message);
    if (this.messages.size > MAX_KEPT_MESSAGES) {
      const oldest = this.messages.keys().next().value;
      if (oldest !== undefined) this.messages.delete(oldest);
    }
  }

  /**
   * MESSAGE_CREATE or MESSAGE_UPDATE to the sessions that see the channel; without MESSAGE_CONTENT a guild
   * message's content shows only if the bot wrote it or is mentioned in it.
   */
  private dispatchMessage(
    channel: SimChannel,
    message: APIMessage,
    event: GatewayDispatchEvents.MessageCreate | GatewayDispatchEvents.MessageUpdate,
  ): void {
    const { author } = message;
    const botId = this.state.botUserId;
    const visibleContent = (session: Session): boolean =>
      channel.guildId === null ||
      session.has(GatewayIntentBits.MessageContent) ||
      author.id === botId ||
      message.mentions.some((user) => user.id === botId);
    this.dispatchToChannel(channel, (session) => {
      const hidden = !visibleContent(session);
      return {
        op: GatewayOpcodes.Dispatch,
        t: event,
        d: {
          ...message,
          ...(hidden ? { content: '', embeds: [], attachments: [], components: [] } : {}),
          ...(channel.guildId
            ? { guild_id: channel.guildId, member: this.memberOf(channel.guildId, author.id) }
            : {}),
        },
      } as OutgoingDispatch;
    });
  }

  /** To the sessions that hear of messages in the channel: the guild's shard, or shard 0 for DMs. */
  private dispatchToChannel(channel: SimChannel, build: (session: Session) => OutgoingDispatch): void {
    if (channel.guildId === null) {
      this.gateway.dispatchToShard(0, (session) =>
        session.has(GatewayIntentBits.DirectMessages) ? build(session) : null,
      );
    } else {
      this.gateway.dispatchToGuild(channel.guildId, (session) =>
        session.has(GatewayIntentBits.GuildMessages) ? build(session) : null,
      );
    }
  }

  /** The `member` of a guild MESSAGE_CREATE: the member object without its user. */
  private memberOf(guildId: string, userId: string) {
    const member = this.state.guilds.get(guildId)?.members.get(userId);
    if (!member) return undefined;
    const { user: _user, ...rest } = this.state.memberPayload(member);
    return { ...rest, joined_at: rest.joined_at ?? discordTimestamp(member.joinedAt) };
  }
}

/** Privileged intents show in the app's flags; the simulated app is an unverified bot, hence "limited". */
function applicationFlags(allowedIntents: number): number {
  let flags = 0;
  if (allowedIntents & GatewayIntentBits.GuildPresences) flags |= ApplicationFlags.GatewayPresenceLimited;
  if (allowedIntents & GatewayIntentBits.GuildMembers) flags |= ApplicationFlags.GatewayGuildMembersLimited;
  if (allowedIntents & GatewayIntentBits.MessageContent)
    flags |= ApplicationFlags.GatewayMessageContentLimited;
  return flags;
}

function samePresence(before: RawPresence | undefined, after: PresenceInput): boolean {
  const next = normalizePresence(after);
  if (!before) return next.status === 'offline';
  return JSON.stringify(before) === JSON.stringify(next);
}
