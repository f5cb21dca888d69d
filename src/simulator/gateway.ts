import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createDeflate, type Deflate, constants as zlibConstants } from 'node:zlib';
import {
  GatewayCloseCodes,
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayGuildMembersChunkDispatchData,
  type GatewayIdentifyData,
  GatewayIntentBits,
  GatewayOpcodes,
  type GatewayReadyDispatchData,
  type GatewayRequestGuildMembersData,
  type GatewayResumeData,
} from 'discord-api-types/v10';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { type SimGuild, type SimMember, type SimulatorState, shardFor } from './state.js';

/** Anything with pino's method shapes; pino's Logger fits. */
export interface SimulatorLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A dispatch before the session numbers it. */
export type OutgoingDispatch = DistributiveOmit<GatewayDispatchPayload, 's'>;

export const PRIVILEGED_INTENTS =
  GatewayIntentBits.GuildMembers | GatewayIntentBits.GuildPresences | GatewayIntentBits.MessageContent;
export const ALL_INTENTS = Object.values(GatewayIntentBits)
  .filter((bit): bit is GatewayIntentBits => typeof bit === 'number')
  .reduce((mask, bit) => mask | bit, 0);

/** Discord's default `large_threshold` and the range it accepts. */
export const DEFAULT_LARGE_THRESHOLD = 50;
export const MAX_LARGE_THRESHOLD = 250;
/** Members per GUILD_MEMBERS_CHUNK. */
export const MEMBERS_PER_CHUNK = 1000;
/** REQUEST_GUILD_MEMBERS by query or by ids: at most this many members. */
export const MAX_QUERIED_MEMBERS = 100;
/** A client may send this many payloads per window (heartbeats excepted here: tests beat fast). */
export const SEND_LIMIT = 120;
export const SEND_WINDOW_MS = 60_000;
/** Dispatches a session keeps for RESUME; a resume from further back is refused with op 9. */
export const REPLAY_BUFFER_SIZE = 10_000;
/** A nonce longer than this (in bytes) is ignored, as Discord does. */
export const MAX_NONCE_BYTES = 32;

/** The reasons Discord gives with its close codes. */
export const CLOSE_REASONS: Readonly<Record<number, string>> = {
  [GatewayCloseCodes.UnknownError]: 'Unknown error.',
  [GatewayCloseCodes.UnknownOpcode]: 'Unknown opcode.',
  [GatewayCloseCodes.DecodeError]: 'Error while decoding payload.',
  [GatewayCloseCodes.NotAuthenticated]: 'Not authenticated.',
  [GatewayCloseCodes.AuthenticationFailed]: 'Authentication failed.',
  [GatewayCloseCodes.AlreadyAuthenticated]: 'Already authenticated.',
  [GatewayCloseCodes.InvalidSeq]: 'Invalid seq.',
  [GatewayCloseCodes.RateLimited]: 'Rate limited.',
  [GatewayCloseCodes.SessionTimedOut]: 'Session timed out.',
  [GatewayCloseCodes.InvalidShard]: 'Invalid shard.',
  [GatewayCloseCodes.ShardingRequired]: 'Sharding required.',
  [GatewayCloseCodes.InvalidAPIVersion]: 'Invalid API version.',
  [GatewayCloseCodes.InvalidIntents]: 'Invalid intent(s).',
  [GatewayCloseCodes.DisallowedIntents]: 'Disallowed intent(s).',
};

/**
 * Closes after which the session cannot be resumed. From the client, 1000 and 1001 end the session (Discord
 * documents this); 4200, which @discordjs/ws uses when it means to resume, does not.
 */
const SESSION_ENDING_CODES = new Set<number>([
  1000,
  1001,
  GatewayCloseCodes.NotAuthenticated,
  GatewayCloseCodes.AuthenticationFailed,
  GatewayCloseCodes.InvalidSeq,
  GatewayCloseCodes.SessionTimedOut,
  GatewayCloseCodes.InvalidShard,
  GatewayCloseCodes.ShardingRequired,
  GatewayCloseCodes.InvalidAPIVersion,
  GatewayCloseCodes.InvalidIntents,
  GatewayCloseCodes.DisallowedIntents,
]);

/** The intent a session needs to receive an event; events not listed go to every session. */
const EVENT_INTENTS: Partial<Record<GatewayDispatchEvents, number>> = {
  [GatewayDispatchEvents.GuildCreate]: GatewayIntentBits.Guilds,
  [GatewayDispatchEvents.GuildDelete]: GatewayIntentBits.Guilds,
  [GatewayDispatchEvents.GuildMemberAdd]: GatewayIntentBits.GuildMembers,
  [GatewayDispatchEvents.GuildMemberUpdate]: GatewayIntentBits.GuildMembers,
  [GatewayDispatchEvents.GuildMemberRemove]: GatewayIntentBits.GuildMembers,
  [GatewayDispatchEvents.PresenceUpdate]: GatewayIntentBits.GuildPresences,
};

/** One REQUEST_GUILD_MEMBERS as a client sent it. */
export type MemberRequest = GatewayRequestGuildMembersData & { shardId: number };

export interface GatewayOptions {
  state: SimulatorState;
  token: string;
  heartbeatIntervalMs: number;
  allowedIntents: number;
  applicationId: string;
  applicationFlags: number;
  /** Where READY tells clients to resume (this server). */
  resumeUrl(): string;
  /** Minimum time between two all-member requests for one guild, across sessions; 0: none. */
  memberRequestCooldownMs: number;
  /** Past this many members GUILD_CREATE lists only the bot (and who is in voice, nobody here). */
  hugeGuildMembers: number;
  /** How long a session without a connection stays resumable; a RESUME later is refused with op 9. */
  sessionResumeWindowMs: number;
  logger?: SimulatorLogger | undefined;
  /**
   * Spends one of the bot's daily session starts for an IDENTIFY about to start a session; false when none
   * is left: the IDENTIFY is closed with 4004, as Discord's is once it has reset the token. Absent: no limit.
   */
  startSession?(): boolean;
}

/** A gateway session: what RESUME restores. It outlives the connections that carry it. */
export class Session {
  seq = 0;
  connection: Connection | null = null;
  /** READY or RESUMED has been sent on the current connection. */
  ready = false;
  ended = false;
  /** When the session lost its connection; null while it has one. */
  detachedAt: number | null = null;
  /** JSON text: each connection encodes it as it sends it. */
  readonly replay: Array<{ s: number; frame: string }> = [];

  constructor(
    readonly id: string,
    readonly shardId: number,
    readonly shardCount: number,
    readonly intents: number,
    readonly largeThreshold: number,
  ) {}

  has(intent: number): boolean {
    return (this.intents & intent) === intent;
  }

  owns(guildId: string): boolean {
    return shardFor(guildId, this.shardCount) === this.shardId;
  }
}

/** One websocket. Carries at most one session at a time. */
export class Connection {
  session: Session | null = null;
  /** The shard this socket last identified or resumed as. */
  shardId: number | null = null;
  closing = false;
  heartbeatDeadline: NodeJS.Timeout | null = null;
  windowStart = Date.now();
  sentInWindow = 0;
  /** A zombie: nothing it is given reaches the client any more (a fault). */
  silent = false;
  /** Takes the next frame (its JSON text) instead of sending it (a fault). */
  interceptNext: ((frame: string) => void) | null = null;
  /** Frames waiting for their turn through the deflate context; always settled, never rejected. */
  private queue: Promise<void> = Promise.resolve();
  /** What the deflate context has produced since the last frame was taken. */
  private deflated: Buffer[] = [];

  constructor(
    readonly ws: WebSocket,
    readonly id: number,
    /** The TCP socket under `ws`. */
    readonly socket: Duplex,
    /**
     * compress=zlib-stream: one deflate context for the socket's life, every frame to the client a binary
     * message cut at a sync flush. Null: JSON text frames.
     */
    private readonly deflate: Deflate | null = null,
  ) {
    deflate?.on('data', (chunk: Buffer) => this.deflated.push(chunk));
    // A deflate error reaches the flush callback of the frame it spoils; unheard, the event would throw.
    deflate?.on('error', () => {});
  }

  send(frame: string): void {
    if (this.closing || this.silent || this.ws.readyState !== WebSocket.OPEN) return;
    const intercept = this.interceptNext;
    this.interceptNext = null;
    if (intercept) intercept(frame);
    else if (!this.deflate) this.ws.send(frame);
    else
      this.inOrder(async () => {
        const bytes = await this.compress(frame);
        if (this.ws.readyState === WebSocket.OPEN) this.ws.send(bytes, { binary: true });
      });
  }

  /**
   * The bytes `frame` takes on the wire and whether they go as a binary message, in turn with the frames
   * sent before it (a compressed frame depends on every one before it).
   */
  encode(frame: string): Promise<{ bytes: Buffer; binary: boolean }> {
    return new Promise((resolve, reject) =>
      this.inOrder(async () => {
        try {
          resolve(
            this.deflate
              ? { bytes: await this.compress(frame), binary: true }
              : { bytes: Buffer.from(frame), binary: false },
          );
        } catch (error) {
          reject(error);
        }
      }),
    );
  }

  /** Closes once the frames already given are sent, so that none is cut off by the close frame. */
  close(code: number, reason: string): void {
    this.inOrder(() => this.ws.close(code, reason));
  }

  /** Frees the deflate context once the socket is closed. */
  dispose(): void {
    this.deflate?.close();
  }

  /** Runs `step` after every step before it; at once when nothing is compressed (nothing ever waits). */
  private inOrder(step: () => void | Promise<void>): void {
    if (!this.deflate) {
      step();
      return;
    }
    this.queue = this.queue.then(step).catch(() => {
      // A deflate that fails leaves the stream undecodable: the socket is of no more use.
      this.ws.terminate();
    });
  }

  /**
   * One message through the connection's deflate context, ending with its sync flush (00 00 ff ff): the
   * client inflates each message as it comes, with the context of all before it.
   */
  private compress(frame: string): Promise<Buffer> {
    const deflate = this.deflate as Deflate;
    return new Promise((resolve, reject) => {
      if (deflate.destroyed) {
        reject(new Error("the connection's deflate context is closed"));
        return;
      }
      deflate.write(frame);
      deflate.flush(zlibConstants.Z_SYNC_FLUSH, (error?: Error | null) => {
        const bytes = Buffer.concat(this.deflated);
        this.deflated = [];
        if (error) reject(error);
        else resolve(bytes);
      });
    });
  }
}

interface ReadyWaiter {
  shardId: number;
  resolve(): void;
  reject(error: Error): void;
}

/**
 * Discord's gateway v10 (JSON, plain or with zlib-stream transport compression) on a WebSocketServer without
 * its own port: the HTTP server hands it upgrade requests. Sessions, sequence numbers, the replay buffer,
 * the resume window, heartbeats and the close codes behave as Discord's do, closely enough for
 * @discordjs/ws to connect, resume and give up exactly as it would against Discord.
 */
export class SimulatedGateway {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sessions = new Map<string, Session>();
  private readonly connections = new Set<Connection>();
  /** Shards whose heartbeats go unanswered (a fault). */
  readonly unansweredHeartbeats = new Set<number>();
  private readyWaiters: ReadyWaiter[] = [];
  private nextConnectionId = 1;

  /** Bytes every gateway socket has sent the clients on the wire (what transport compression saves). */
  get bytesSent(): number {
    let sent = this.closedBytesSent;
    for (const connection of this.connections) {
      if (connection.socket instanceof Socket) sent += connection.socket.bytesWritten;
    }
    return sent;
  }

  identifyCount = 0;
  resumeCount = 0;
  /** Connections accepted with `compress=zlib-stream`. */
  compressedConnections = 0;
  /** RESUMEs with the right token that restored nothing: answered op 9 `d: false`, or closed 4007. */
  refusedResumeCount = 0;
  /** Discord's gateway cannot be reached (a fault): every connection attempt is refused with 503. */
  unreachable = false;
  /** Connection attempts refused while unreachable. */
  refusedConnections = 0;
  /** What the sockets closed so far sent, on the wire (TCP payload: frames, compressed or not). */
  private closedBytesSent = 0;
  readonly memberRequests: MemberRequest[] = [];
  /** Per guild, when its members were last listed in full: Discord counts per bot, not per session. */
  private readonly lastMemberListing = new Map<string, number>();

  constructor(private readonly options: GatewayOptions) {}

  // ---- connections ----------------------------------------------------------------------------------

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(request.url ?? '/', 'ws://localhost');
    if (url.pathname !== '/') {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (this.unreachable) {
      this.refusedConnections++;
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => this.accept(ws, socket, url.searchParams));
  }

  private accept(ws: WebSocket, socket: Duplex, params: URLSearchParams): void {
    const compress = params.get('compress');
    // Any other value is refused below, with a close frame, which is never compressed.
    const deflate = compress === 'zlib-stream' ? createDeflate() : null;
    if (deflate) this.compressedConnections++;
    const connection = new Connection(ws, this.nextConnectionId++, socket, deflate);
    this.connections.add(connection);
    ws.on('message', (data, isBinary) => this.onMessage(connection, data, isBinary));
    ws.on('close', (code) => this.onClose(connection, code));
    ws.on('error', (error) =>
      this.log('warn', { err: error, connection: connection.id }, 'gateway socket error'),
    );

    const version = params.get('v');
    if (version !== null && version !== '10') {
      this.close(connection, GatewayCloseCodes.InvalidAPIVersion);
      return;
    }
    // 1003 Unsupported Data: the client asked for something this server does not speak.
    const encoding = params.get('encoding') ?? 'json';
    if (encoding !== 'json') {
      this.close(connection, 1003, `the simulated gateway speaks encoding=json only (asked: ${encoding})`);
      return;
    }
    if (compress !== null && compress !== 'zlib-stream') {
      this.close(
        connection,
        1003,
        `the simulated gateway compresses with compress=zlib-stream only (asked: ${compress})`,
      );
      return;
    }

    connection.send(frame(GatewayOpcodes.Hello, { heartbeat_interval: this.options.heartbeatIntervalMs }));
    this.armHeartbeatDeadline(connection);
  }

  private onClose(connection: Connection, code: number): void {
    this.connections.delete(connection);
    this.closedBytesSent += connection.socket instanceof Socket ? connection.socket.bytesWritten : 0;
    this.clearHeartbeatDeadline(connection);
    connection.dispose();
    const session = connection.session;
    if (!session || session.connection !== connection) return;
    this.detach(session);
    if (SESSION_ENDING_CODES.has(code)) this.endSession(session);
    this.log('debug', { shardId: session.shardId, code }, 'gateway client closed the connection');
  }

  private onMessage(connection: Connection, data: RawData, isBinary: boolean): void {
    if (connection.closing) return;
    if (isBinary) {
      this.close(connection, GatewayCloseCodes.DecodeError);
      return;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(rawToString(data));
    } catch {
      this.close(connection, GatewayCloseCodes.DecodeError);
      return;
    }
    if (!isRecord(payload) || typeof payload.op !== 'number') {
      this.close(connection, GatewayCloseCodes.DecodeError);
      return;
    }
    const op = payload.op;
    if (op !== GatewayOpcodes.Heartbeat && !this.countSend(connection)) {
      this.close(connection, GatewayCloseCodes.RateLimited);
      return;
    }

    switch (op) {
      case GatewayOpcodes.Heartbeat:
        this.armHeartbeatDeadline(connection);
        if (connection.shardId === null || !this.unansweredHeartbeats.has(connection.shardId)) {
          connection.send(frame(GatewayOpcodes.HeartbeatAck, null));
        }
        return;
      case GatewayOpcodes.Identify:
        this.identify(connection, payload.d);
        return;
      case GatewayOpcodes.Resume:
        this.resume(connection, payload.d);
        return;
      case GatewayOpcodes.RequestGuildMembers:
        if (this.requireSession(connection)) this.requestMembers(connection.session as Session, payload.d);
        return;
      case GatewayOpcodes.PresenceUpdate:
      case GatewayOpcodes.VoiceStateUpdate:
      case GatewayOpcodes.RequestSoundboardSounds:
        // Accepted and ignored: nothing in the simulated world depends on the bot's own presence or voice.
        this.requireSession(connection);
        return;
      default:
        this.close(connection, GatewayCloseCodes.UnknownOpcode);
    }
  }

  private requireSession(connection: Connection): boolean {
    if (connection.session) return true;
    this.close(connection, GatewayCloseCodes.NotAuthenticated);
    return false;
  }

  /** Discord allows 120 payloads a minute per connection. */
  private countSend(connection: Connection): boolean {
    const now = Date.now();
    if (now - connection.windowStart >= SEND_WINDOW_MS) {
      connection.windowStart = now;
      connection.sentInWindow = 0;
    }
    connection.sentInWindow++;
    return connection.sentInWindow <= SEND_LIMIT;
  }

  private armHeartbeatDeadline(connection: Connection): void {
    this.clearHeartbeatDeadline(connection);
    // The first beat comes up to one interval after HELLO (jittered); allow half an interval, at least 5 s.
    const interval = this.options.heartbeatIntervalMs;
    const deadline = interval + Math.max(interval / 2, 5000);
    connection.heartbeatDeadline = setTimeout(() => {
      this.log('warn', { connection: connection.id, shardId: connection.shardId }, 'no heartbeat: closing');
      this.close(connection, GatewayCloseCodes.SessionTimedOut);
    }, deadline).unref();
  }

  private clearHeartbeatDeadline(connection: Connection): void {
    if (connection.heartbeatDeadline) clearTimeout(connection.heartbeatDeadline);
    connection.heartbeatDeadline = null;
  }

  /** Closes with a code (and Discord's reason for it); a code that ends sessions ends the one on this socket. */
  close(connection: Connection, code: number, reason = CLOSE_REASONS[code] ?? ''): void {
    if (connection.closing) return;
    const session = connection.session;
    if (session && session.connection === connection) {
      this.detach(session);
      if (SESSION_ENDING_CODES.has(code)) this.endSession(session);
    }
    connection.session = null;
    connection.closing = true;
    this.clearHeartbeatDeadline(connection);
    this.log('debug', { connection: connection.id, code, reason }, 'closing gateway connection');
    // A close frame's reason is at most 123 bytes.
    connection.close(code, Buffer.from(reason).subarray(0, 123).toString());
  }

  private detach(session: Session): void {
    if (session.connection) {
      session.connection.session = null;
      session.detachedAt = Date.now();
    }
    session.connection = null;
    session.ready = false;
  }

  private endSession(session: Session): void {
    session.ended = true;
    session.replay.length = 0;
    this.sessions.delete(session.id);
  }

  // ---- identify and resume --------------------------------------------------------------------------

  /**
   * An identify's or resume's data when the connection may send it: not yet in a session, an object, the
   * right token; otherwise the connection is closed with Discord's code for what is wrong.
   */
  private authenticated<T extends { token: string }>(
    connection: Connection,
    data: unknown,
  ): Partial<T> | null {
    if (connection.session) {
      this.close(connection, GatewayCloseCodes.AlreadyAuthenticated);
      return null;
    }
    if (!isRecord(data)) {
      this.close(connection, GatewayCloseCodes.DecodeError);
      return null;
    }
    const given = data as Partial<T>;
    if (given.token !== this.options.token) {
      this.close(connection, GatewayCloseCodes.AuthenticationFailed);
      return null;
    }
    return given;
  }

  private identify(connection: Connection, data: unknown): void {
    this.identifyCount++;
    const identify = this.authenticated<GatewayIdentifyData>(connection, data);
    if (!identify) return;
    const [shardId, shardCount] = identify.shard ?? [0, 1];
    if (
      !Number.isInteger(shardId) ||
      !Number.isInteger(shardCount) ||
      shardCount < 1 ||
      shardId < 0 ||
      shardId >= shardCount
    ) {
      this.close(connection, GatewayCloseCodes.InvalidShard);
      return;
    }
    const intents = identify.intents;
    if (
      typeof intents !== 'number' ||
      !Number.isInteger(intents) ||
      intents < 0 ||
      (intents & ~ALL_INTENTS) !== 0
    ) {
      this.close(connection, GatewayCloseCodes.InvalidIntents);
      return;
    }
    if ((intents & PRIVILEGED_INTENTS & ~this.options.allowedIntents) !== 0) {
      this.close(connection, GatewayCloseCodes.DisallowedIntents);
      return;
    }
    const largeThreshold = Math.min(
      MAX_LARGE_THRESHOLD,
      Math.max(DEFAULT_LARGE_THRESHOLD, identify.large_threshold ?? DEFAULT_LARGE_THRESHOLD),
    );

    if (this.options.startSession && !this.options.startSession()) {
      this.close(connection, GatewayCloseCodes.AuthenticationFailed);
      return;
    }

    // A client that identifies again for a shard has given up on the sessions it left behind there.
    for (const old of this.sessions.values()) {
      if (old.shardId === shardId && old.shardCount === shardCount && old.connection === null)
        this.endSession(old);
    }

    const session = new Session(
      randomBytes(16).toString('hex'),
      shardId,
      shardCount,
      intents,
      largeThreshold,
    );
    this.sessions.set(session.id, session);
    this.attach(connection, session);

    const { state } = this.options;
    const guilds = [...state.guilds.values()].filter((guild) => session.owns(guild.id));
    const ready: GatewayReadyDispatchData = {
      v: 10,
      user: state.botUser,
      guilds: guilds.map((guild) => ({ id: guild.id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.options.resumeUrl(),
      shard: [shardId, shardCount],
      application: {
        id: this.options.applicationId,
        flags: this.options.applicationFlags,
        flags_new: String(this.options.applicationFlags),
      },
    };
    this.deliver(session, { op: GatewayOpcodes.Dispatch, t: GatewayDispatchEvents.Ready, d: ready }, false);
    for (const guild of guilds) {
      if (!guild.unavailable) this.deliverFiltered(session, this.guildCreate(guild, session));
    }
    this.log('debug', { shardId, session: session.id, guilds: guilds.length }, 'session identified');
    this.markReady(session);
  }

  private resume(connection: Connection, data: unknown): void {
    const resume = this.authenticated<GatewayResumeData>(connection, data);
    if (!resume) return;
    const session = typeof resume.session_id === 'string' ? this.sessions.get(resume.session_id) : undefined;
    const seq = typeof resume.seq === 'number' ? resume.seq : 0;
    if (!session || session.ended) {
      this.refuseResume(connection);
      return;
    }
    if (this.expired(session)) {
      this.log('debug', { shardId: session.shardId, session: session.id }, 'resume after the window');
      this.endSession(session);
      this.refuseResume(connection);
      return;
    }
    if (seq > session.seq) {
      this.refusedResumeCount++;
      this.endSession(session);
      this.close(connection, GatewayCloseCodes.InvalidSeq);
      return;
    }
    const oldest = session.replay[0]?.s ?? session.seq + 1;
    if (seq < session.seq && seq + 1 < oldest) {
      // The events after seq are no longer buffered: the session cannot be restored.
      this.endSession(session);
      this.refuseResume(connection);
      return;
    }
    if (session.connection) {
      // The session moves to the new socket; the old one is dead to it.
      const previous = session.connection;
      this.detach(session);
      previous.closing = true;
      previous.ws.terminate();
    }

    this.resumeCount++;
    this.attach(connection, session);
    let replayed = 0;
    for (const event of session.replay) {
      if (event.s > seq) {
        connection.send(event.frame);
        replayed++;
      }
    }
    this.deliver(
      session,
      { op: GatewayOpcodes.Dispatch, t: GatewayDispatchEvents.Resumed, d: undefined },
      false,
    );
    this.log('debug', { shardId: session.shardId, session: session.id, seq, replayed }, 'session resumed');
    this.markReady(session);
  }

  private refuseResume(connection: Connection): void {
    this.refusedResumeCount++;
    connection.send(frame(GatewayOpcodes.InvalidSession, false));
  }

  /** Without a connection for longer than the resume window; one with a connection never expires. */
  private expired(session: Session): boolean {
    return (
      session.connection === null &&
      session.detachedAt !== null &&
      Date.now() - session.detachedAt > this.options.sessionResumeWindowMs
    );
  }

  private attach(connection: Connection, session: Session): void {
    connection.session = session;
    connection.shardId = session.shardId;
    session.connection = connection;
    session.detachedAt = null;
  }

  private markReady(session: Session): void {
    session.ready = true;
    const waiting = this.readyWaiters;
    this.readyWaiters = [];
    for (const waiter of waiting) {
      if (waiter.shardId === session.shardId) waiter.resolve();
      else this.readyWaiters.push(waiter);
    }
  }

  // ---- guild members --------------------------------------------------------------------------------

  private requestMembers(session: Session, data: unknown): void {
    if (!isRecord(data) || typeof data.guild_id !== 'string') {
      this.close(session.connection as Connection, GatewayCloseCodes.DecodeError);
      return;
    }
    const request = data as unknown as GatewayRequestGuildMembersData;
    this.memberRequests.push({ ...request, shardId: session.shardId });
    const userIds = 'user_ids' in request ? request.user_ids : undefined;
    if (Array.isArray(userIds) && userIds.length > MAX_QUERIED_MEMBERS) {
      // Discord answers at most 100 members by id: more ids is a payload it does not take (4002).
      this.close(session.connection as Connection, GatewayCloseCodes.DecodeError);
      return;
    }

    const { state } = this.options;
    const guild = state.guilds.get(request.guild_id);
    if (!guild || guild.unavailable || !session.owns(guild.id)) {
      this.log(
        'debug',
        { guildId: request.guild_id, shardId: session.shardId },
        'member request for a guild elsewhere',
      );
      return;
    }
    const nonce =
      typeof request.nonce === 'string' && Buffer.byteLength(request.nonce) <= MAX_NONCE_BYTES
        ? request.nonce
        : undefined;
    const presences = request.presences === true && session.has(GatewayIntentBits.GuildPresences);

    let members: SimMember[];
    let notFound: string[] | undefined;
    if ('user_ids' in request && request.user_ids !== undefined) {
      const ids = Array.isArray(request.user_ids) ? request.user_ids : [request.user_ids];
      members = ids.flatMap((id) => guild.members.get(id) ?? []);
      notFound = ids.filter((id) => !guild.members.has(id));
    } else if ('query' in request && typeof request.query === 'string') {
      const query = request.query.toLowerCase();
      const limit = typeof request.limit === 'number' ? request.limit : 0;
      if (query === '' && limit === 0) {
        const cooldown = this.options.memberRequestCooldownMs;
        const last = this.lastMemberListing.get(guild.id);
        const now = Date.now();
        if (cooldown > 0 && last !== undefined && now - last < cooldown) {
          this.deliver(session, {
            op: GatewayOpcodes.Dispatch,
            t: GatewayDispatchEvents.RateLimited,
            d: {
              opcode: GatewayOpcodes.RequestGuildMembers,
              retry_after: (cooldown - (now - last)) / 1000,
              meta: nonce === undefined ? { guild_id: guild.id } : { guild_id: guild.id, nonce },
            },
          });
          return;
        }
        this.lastMemberListing.set(guild.id, now);
        members = [...guild.members.values()];
      } else {
        members = [...guild.members.values()]
          .filter((member) => {
            const user = state.users.get(member.userId);
            const names = [user?.username, user?.global_name, member.nick];
            return names.some((name) => typeof name === 'string' && name.toLowerCase().startsWith(query));
          })
          .slice(0, Math.min(limit === 0 ? MAX_QUERIED_MEMBERS : limit, MAX_QUERIED_MEMBERS));
      }
    } else {
      this.close(session.connection as Connection, GatewayCloseCodes.DecodeError);
      return;
    }

    const chunkCount = Math.max(1, Math.ceil(members.length / MEMBERS_PER_CHUNK));
    for (let index = 0; index < chunkCount; index++) {
      const slice = members.slice(index * MEMBERS_PER_CHUNK, (index + 1) * MEMBERS_PER_CHUNK);
      const chunk: GatewayGuildMembersChunkDispatchData = {
        guild_id: guild.id,
        members: slice.map((member) => state.memberPayload(member)),
        chunk_index: index,
        chunk_count: chunkCount,
      };
      if (presences) {
        chunk.presences = slice
          .filter((member) => state.isOnline(member.userId))
          .map((member) => state.chunkPresence(member.userId));
      }
      if (notFound !== undefined && index === 0) chunk.not_found = notFound;
      if (nonce !== undefined) chunk.nonce = nonce;
      this.deliver(session, {
        op: GatewayOpcodes.Dispatch,
        t: GatewayDispatchEvents.GuildMembersChunk,
        d: chunk,
      });
    }
  }

  // ---- dispatching ----------------------------------------------------------------------------------

  /** GUILD_CREATE for one session: its large_threshold and intents decide what is listed. */
  guildCreate(guild: SimGuild, session: Session): OutgoingDispatch {
    return {
      op: GatewayOpcodes.Dispatch,
      t: GatewayDispatchEvents.GuildCreate,
      d: this.options.state.guildCreatePayload(guild, {
        largeThreshold: session.largeThreshold,
        hugeGuildMembers: this.options.hugeGuildMembers,
        presences: session.has(GatewayIntentBits.GuildPresences),
      }),
    };
  }

  /** To the session(s) of the shard that owns the guild. `build` returns null to skip a session. */
  dispatchToGuild(guildId: string, build: (session: Session) => OutgoingDispatch | null): number {
    return this.dispatchWhere((session) => session.owns(guildId), build);
  }

  /** To the sessions of one shard (DMs go to shard 0). */
  dispatchToShard(shardId: number, build: (session: Session) => OutgoingDispatch | null): number {
    return this.dispatchWhere((session) => session.shardId === shardId, build);
  }

  /** To every session (USER_UPDATE). */
  dispatchToAll(build: (session: Session) => OutgoingDispatch | null): number {
    return this.dispatchWhere(() => true, build);
  }

  private dispatchWhere(
    matches: (session: Session) => boolean,
    build: (session: Session) => OutgoingDispatch | null,
  ): number {
    let delivered = 0;
    for (const session of [...this.sessions.values()]) {
      if (session.ended || !matches(session)) continue;
      const payload = build(session);
      if (payload && this.deliverFiltered(session, payload)) delivered++;
    }
    return delivered;
  }

  private deliverFiltered(session: Session, payload: OutgoingDispatch): boolean {
    const intent = EVENT_INTENTS[payload.t];
    if (intent !== undefined && !session.has(intent)) return false;
    this.deliver(session, payload);
    return true;
  }

  /**
   * Numbers the dispatch, keeps it for RESUME and sends it if the session has a socket. With the socket
   * down (but the session resumable) it waits in the buffer, as on Discord.
   */
  private deliver(session: Session, payload: OutgoingDispatch, replayable = true): void {
    const s = ++session.seq;
    const text = JSON.stringify({ t: payload.t, s, op: payload.op, d: payload.d ?? null });
    if (replayable) {
      session.replay.push({ s, frame: text });
      if (session.replay.length > REPLAY_BUFFER_SIZE) session.replay.shift();
    }
    session.connection?.send(text);
  }

  // ---- what the driver sees and does ----------------------------------------------------------------

  /** Shards with a live, READY (or RESUMED) session. */
  get connectedShards(): number[] {
    const shards = new Set<number>();
    for (const session of this.sessions.values()) {
      if (session.connection && session.ready) shards.add(session.shardId);
    }
    return [...shards].sort((a, b) => a - b);
  }

  waitForReady(shardId: number, timeoutMs: number): Promise<void> {
    if (this.connectedShards.includes(shardId)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: ReadyWaiter = {
        shardId,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.readyWaiters = this.readyWaiters.filter((other) => other !== waiter);
        reject(new Error(`simulated Discord: shard ${shardId} was not READY within ${timeoutMs} ms`));
      }, timeoutMs);
      this.readyWaiters.push(waiter);
    });
  }

  /** The socket currently carrying shard `shardId`'s session (the newest, if several). */
  /** The sequence number of the last dispatch of the shard's connected session. */
  sequenceOf(shardId: number): number {
    return (this.connectionOf(shardId).session as Session).seq;
  }

  connectionOf(shardId: number): Connection {
    let found: Connection | null = null;
    for (const session of this.sessions.values()) {
      if (session.shardId === shardId && session.connection && !session.connection.closing) {
        if (!found || session.connection.id > found.id) found = session.connection;
      }
    }
    if (!found) throw new Error(`simulated Discord: shard ${shardId} has no connected session`);
    return found;
  }

  /**
   * The connection is lost to its session, as when the network drops it: the session stays resumable and
   * keeps collecting dispatches, and nothing more is sent on the socket. The caller ends the socket.
   */
  /**
   * Discord's gateway goes away for the clients (`true`): every socket is cut without a close frame, their
   * sessions kept for a RESUME within the window, and each new connection is refused until it is back.
   */
  setUnreachable(unreachable: boolean): void {
    this.unreachable = unreachable;
    if (!unreachable) return;
    for (const connection of this.connections) {
      this.abandon(connection);
      connection.ws.terminate();
    }
  }

  abandon(connection: Connection): void {
    if (connection.session) this.detach(connection.session);
    connection.closing = true;
    this.clearHeartbeatDeadline(connection);
  }

  /**
   * op 9. The socket stays open but no longer carries the session: a resumable session can be resumed on
   * it (or another), otherwise the session is gone and the client must identify.
   */
  invalidateSession(connection: Connection, resumable: boolean): void {
    const session = connection.session as Session;
    this.detach(session);
    if (!resumable) this.endSession(session);
    connection.send(frame(GatewayOpcodes.InvalidSession, resumable));
  }

  /** Ends every session without a connection, as if its resume window had passed; returns how many. */
  expireDetachedSessions(): number {
    let expired = 0;
    for (const session of [...this.sessions.values()]) {
      if (session.connection !== null) continue;
      this.endSession(session);
      expired++;
    }
    if (expired > 0) this.log('debug', { expired }, 'detached sessions expired');
    return expired;
  }

  /** op 7: the client should reconnect and resume. */
  requestReconnect(connection: Connection): void {
    connection.send(frame(GatewayOpcodes.Reconnect, null));
  }

  /** Terminates every socket and forgets every session. */
  shutdown(): void {
    for (const connection of this.connections) {
      this.clearHeartbeatDeadline(connection);
      connection.closing = true;
      connection.ws.terminate();
      connection.dispose();
    }
    this.connections.clear();
    this.sessions.clear();
    for (const waiter of this.readyWaiters.splice(0)) waiter.reject(new Error('simulated Discord: stopped'));
    this.wss.close();
  }

  private log(level: keyof SimulatorLogger, obj: object, msg: string): void {
    this.options.logger?.[level](obj, msg);
  }
}

/** A non-dispatch payload as Discord frames it. */
function frame(op: GatewayOpcodes, d: unknown): string {
  return JSON.stringify({ t: null, s: null, op, d });
}

function rawToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
