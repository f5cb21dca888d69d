import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { type ClientAddressOf, clientKey } from '../net/client-address.js';
import type { PushSlots } from '../net/push-slots.js';
import { SECURITY_HEADER_LINES } from '../net/security-headers.js';
import { ABUSE_REFUSAL_DELAY_MS, refuseLater } from '../net/tarpit.js';
import { upgraded } from '../net/upgraded.js';
import type { Metrics, SubscriptionKind } from '../ops/metrics.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceSource } from '../presence/registry/registry.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import { CommandBudget, refillMs, SOCKET_COMMAND_BURST } from './command-budget.js';
import { CommandQueue } from './command-queue.js';
import { paceChanges } from './fanout-pace.js';
import { type FramePace, framePace } from './frame-budget.js';
import {
  FRAGMENT_AT_BYTES,
  type Fragments,
  helloJson,
  LargePresenceEvent,
  SharedEvent,
  singleFrame,
  withUserId,
} from './frames.js';
import { type InitState, initStateJson, initStateStream, mapOf, monitoredAmong } from './init-state.js';
import { Outbound, type OutboundHooks } from './outbound.js';
import {
  type ClientCommand,
  Close,
  type CloseReason,
  HEARTBEAT_INTERVAL_MS,
  MAX_CLIENT_FRAME_BYTES,
  nestedDeeperThan,
  parseClientFrame,
  SEND_BUFFER_CAP_BYTES,
} from './protocol.js';
import type { SubscriptionBudget } from './subscription-budget.js';
import { Subscriptions } from './subscriptions.js';

export const SOCKET_PATH = '/socket';
/** A closing socket that does not finish its close handshake in this long is cut. */
export const CLOSE_GRACE_MS = 5_000;
/** A command naming more ids than this waits its turn in the command queue (command-queue.ts). */
const QUEUE_AT_IDS = 50;
/** A frame larger than this is no heartbeat (`{"op":3}`): it is charged as a command before it is read. */
const SMALL_FRAME_BYTES = 1024;
/** Objects and arrays within objects and arrays a command ever needs (`{"d":{"subscribe_to_ids":[…]}}`), with room. */
const MAX_FRAME_DEPTH = 8;
/** Users a socket may have waiting for an update while a stream is under way; past it, a slow consumer. */
export const MAX_WAITING_UPDATES = 10_000;

export interface SocketGatewayOptions {
  server: Server;
  source: PresenceSource;
  logger: Logger;
  /** Concurrent sockets per client IP; 0 switches the cap off. */
  socketsPerIp: number;
  /** SOCKETS_PER_IP and MAX_SOCKETS, shared with the event streams (src/sse/). */
  slots: PushSlots;
  /** MAX_SUBSCRIPTIONS, shared with the event streams; none: no cap. */
  budget?: SubscriptionBudget;
  /** Where an upgrade comes from, as the HTTP routes see it (trusted proxies looked past). */
  clientAddress: ClientAddressOf;
  /** Ids one socket may subscribe to. */
  maxIdsPerSocket: number;
  /** Op 2 and op 4 frames per socket per minute (after a burst), and the frame budget's share of them; 0: neither. */
  commandsPerMinute: number;
  /** `subscribe_to_all` is allowed. */
  subscribeToAll: boolean;
  heartbeatIntervalMs?: number;
  sendBufferCapBytes?: number;
  /** How long an abusive client waits for a refused upgrade; ABUSE_REFUSAL_DELAY_MS unless told. */
  refusalDelayMs?: number;
  /** How fast a large presence's updates may follow each other (fanout-pace.ts); 0 holds none back. */
  pacedBytesPerSecond?: number;
  /** Counts frames, fan-out time and sockets refused over the per-IP cap. */
  metrics?: Metrics;
}

class Client {
  seq = 0;
  lastFrameAt = Date.now();
  closing = false;
  /** Users whose update came while a stream was under way: sent after it, as they are then. */
  waiting: Set<Snowflake> | null = null;
  budget: CommandBudget | null = null;
  /** Frames of any op it may send (frame-budget.ts). */
  frames: CommandBudget | null = null;
  /** Commands of this socket waiting in the command queue. */
  queued = 0;
  /** Its budget is spent while commands wait: it is closed 4009 after them, and heard no more. */
  spent = false;
  /** Commands that came while its subscription to all waits for listed members to be rendered. */
  deferred: Array<() => void> | null = null;
  readonly out: Outbound;

  constructor(
    readonly ws: WebSocket,
    /** The connection under `ws`. */
    readonly socket: Duplex,
    readonly ip: string,
    readonly compressed: boolean,
    hooks: (client: Client) => OutboundHooks,
  ) {
    this.out = new Outbound(ws, socket, compressed, hooks(this));
  }
}

/** Lanyard's socket protocol at `/socket`, on the HTTP server's port. */
export class SocketGateway {
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<Client>();
  /**
   * Clients whose socket was closed 4009, until when their new sockets are refused: a socket's budget
   * starts full, and reconnecting must not refill it.
   */
  private readonly cooling = new Map<string, number>();
  /**
   * Each client's commands over all its sockets: what SOCKETS_PER_IP sockets may send together, and no
   * more, so that closing a socket and opening another is no way to a fresh budget.
   */
  private readonly clientBudgets = new Map<string, CommandBudget>();
  /** Each client's frames over all its sockets, as `clientBudgets` counts its commands. */
  private readonly clientFrameBudgets = new Map<string, CommandBudget>();
  private readonly framePace: FramePace;
  /** Upgrades whose refusal is being held (refuseAbuse): let go at once when the gateway closes. */
  private readonly held = new Set<Duplex>();
  readonly subscriptions: Subscriptions<Client>;
  private readonly commands = new CommandQueue();
  private readonly heartbeatIntervalMs: number;
  private readonly sendBufferCap: number;
  private readonly sweepTimer: NodeJS.Timeout;
  /** Stops the paced changes coming to the fan-out. */
  private readonly stopChanges: () => void;
  private readonly upgradeListener = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // node:http hands the connection over with nobody listening for its errors: a client resetting it
    // (while its refusal is held, say) would otherwise be an uncaught exception.
    socket.on('error', () => socket.destroy());
    // A throw here would escape node:http as an uncaught exception and end the process: one request
    // must never be able to do that, whatever it holds.
    try {
      this.upgrade(request, socket, head);
    } catch (error) {
      this.options.logger.error(
        { err: error, clientAddress: this.options.clientAddress(request) },
        'socket upgrade failed',
      );
      if (!socket.destroyed) refuseUpgrade(socket, 500, 'internal_error', 'something went wrong on our side');
    }
  };

  constructor(private readonly options: SocketGatewayOptions) {
    // Ids of closed sockets are let go in the command queue, in turn with every socket's commands.
    this.subscriptions = new Subscriptions(options.budget, this.commands);
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS;
    this.sendBufferCap = options.sendBufferCapBytes ?? SEND_BUFFER_CAP_BYTES;
    this.framePace = framePace(options.commandsPerMinute, this.heartbeatIntervalMs);
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_CLIENT_FRAME_BYTES,
      perMessageDeflate: false,
      clientTracking: false,
      // A ping is answered once charged to the frame budget (`connected`), not before.
      autoPong: false,
    });
    // A handshake ws refuses (no Sec-WebSocket-Key, another version…) is answered in the envelope too,
    // not with ws's own text/html page.
    this.wss.on('wsClientError', (error: Error, socket: Duplex, request: IncomingMessage) => {
      if (request.method !== 'GET') {
        refuseUpgrade(socket, 404, 'not_found', `no route for ${request.method} ${SOCKET_PATH}`);
      } else {
        refuseUpgrade(socket, 400, 'bad_request', `not a WebSocket handshake: ${error.message}`, {
          'Sec-WebSocket-Version': '13',
        });
      }
    });
    options.server.on('upgrade', this.upgradeListener);
    this.stopChanges = paceChanges(
      options.source,
      (userId, snapshot) => this.fanOut(userId, snapshot),
      options.pacedBytesPerSecond,
    );
    this.sweepTimer = setInterval(() => this.sweep(), Math.max(this.heartbeatIntervalMs / 2, 10));
    this.sweepTimer.unref();
  }

  get socketCount(): number {
    return this.clients.size;
  }

  /** What the sockets hold written but not yet taken by their connections: bounded per socket by streams. */
  bufferedBytes(): number {
    let bytes = 0;
    for (const client of this.clients) bytes += client.out.bufferedAmount;
    return bytes;
  }

  /** Open sockets by what they listen to: everyone, several ids, or one (sockets holding nothing aside). */
  subscribedSockets(): Record<SubscriptionKind, number> {
    const counts = { id: 0, ids: 0, all: 0 };
    for (const client of this.clients) {
      if (this.subscriptions.subscribedToAll(client)) counts.all++;
      else {
        const held = this.subscriptions.holds(client);
        if (held === 1) counts.id++;
        else if (held > 1) counts.ids++;
      }
    }
    return counts;
  }

  /** Closes every socket with 1001 so clients reconnect elsewhere. */
  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.stopChanges();
    this.options.server.off('upgrade', this.upgradeListener);
    for (const socket of this.held) socket.destroy();
    const closed = [...this.clients].map(
      (client) =>
        new Promise<void>((resolve) => {
          client.ws.once('close', () => resolve());
          this.end(client, Close.GoingAway);
        }),
    );
    await Promise.all(closed);
    this.wss.close();
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    // The request target as sent, not resolved as a URL: `//` is no URL at all, and `//host/socket` would
    // resolve to /socket.
    const target = request.url ?? '/';
    const queryAt = target.indexOf('?');
    if ((queryAt < 0 ? target : target.slice(0, queryAt)) !== SOCKET_PATH) {
      refuseUpgrade(socket, 404, 'not_found', 'no socket at this path');
      return;
    }
    const query = new URLSearchParams(queryAt < 0 ? '' : target.slice(queryAt + 1));
    const ip = clientKey(this.options.clientAddress(request));
    const coolingFor = (this.cooling.get(ip) ?? 0) - Date.now();
    if (coolingFor > 0) {
      this.options.metrics?.rateLimited('socket_commands');
      const seconds = Math.ceil(coolingFor / 1000);
      this.refuseAbuse(
        socket,
        `a socket from this address sent more commands than allowed; try again in ${seconds} s`,
        {
          'Retry-After': String(seconds),
        },
      );
      return;
    }
    const { slots } = this.options;
    if (slots.clientFull(ip)) {
      this.options.metrics?.rateLimited('sockets_per_ip');
      this.refuseAbuse(socket, `at most ${slots.perClient} sockets and event streams per IP`);
      return;
    }

    // The slots are taken now, so concurrent upgrades cannot pass the caps; an upgrade ws refuses gives them
    // back. One refused for MAX_SOCKETS holds only its client's, until its connection ends.
    const full = slots.full;
    if (full) slots.takeClient(ip);
    else slots.take(ip);
    let accepted = false;
    socket.once('close', () => {
      if (accepted) return;
      if (full) slots.releaseClient(ip);
      else slots.release(ip);
    });
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      // From the start, refused sockets too: ws reports a client's protocol error as an error event, which
      // with nobody listening would be thrown out of its reader and end the process.
      ws.on('error', (error) => this.options.logger.debug({ err: error }, 'socket error'));
      if (full) {
        // A socket client understands a close code; an HTTP refusal most of them only see as a failure.
        this.options.metrics?.rateLimited('max_sockets');
        closeUnheard(ws, socket, Close.TryAgainLater);
        return;
      }
      accepted = true;
      upgraded(socket);
      this.connected(ws, socket, ip, query.get('compression') === 'zlib_json');
    });
  }

  /** A 429 to a client that keeps asking past its limit, after ABUSE_REFUSAL_DELAY_MS (net/tarpit.ts). */
  private refuseAbuse(socket: Duplex, message: string, headers: Record<string, string> = {}): void {
    this.held.add(socket);
    socket.once('close', () => this.held.delete(socket));
    refuseLater(this.options.refusalDelayMs ?? ABUSE_REFUSAL_DELAY_MS, () => {
      this.held.delete(socket);
      if (!socket.destroyed) refuseUpgrade(socket, 429, 'rate_limited', message, headers);
    });
  }

  private connected(ws: WebSocket, socket: Duplex, ip: string, compressed: boolean): void {
    const client = new Client(ws, socket, ip, compressed, (self) => ({
      nextSeq: () => ++self.seq,
      idle: () => this.sendWaiting(self),
      closed: () => self.closing || self.ws.readyState !== WebSocket.OPEN,
      failed: (error) => this.failed(self, error, 'sending'),
    }));
    this.clients.add(client);
    ws.on('message', (data) => this.arrived(client, data));
    // Pings and pongs are frames too: a flood of them ends at the frame budget as a flood of heartbeats does.
    ws.on('ping', (data) => {
      if (this.heard(client)) ws.pong(data);
    });
    ws.on('pong', () => this.heard(client));
    ws.on('close', () => this.released(client));
    this.sendSingle(client, helloJson(this.heartbeatIntervalMs));
  }

  /** One socket's failure is that socket's: logged once, closed with 1011, and everyone else goes on. */
  private failed(client: Client, error: unknown, during: string): void {
    if (client.closing) return;
    this.options.logger.error(
      { err: error, ip: client.ip },
      `socket failed while handling ${during}; closed it`,
    );
    this.end(client, Close.InternalError);
  }

  private released(client: Client): void {
    // Gone: what it had waiting in the command queue is dropped with it.
    client.closing = true;
    if (!this.clients.delete(client)) return;
    this.subscriptions.release(client);
    this.options.slots.release(client.ip);
  }

  /**
   * Whether a frame of the socket is to be handled: not once it is on its way out, which has said all it
   * will be heard for, nor past its frame budget. Charged before anything is done with the frame: one past
   * the budget costs a comparison, not a parse.
   */
  private heard(client: Client): boolean {
    return !client.closing && !client.spent && this.frameCharged(client);
  }

  private arrived(client: Client, data: RawData): void {
    if (!this.heard(client)) return;
    client.lastFrameAt = Date.now();
    try {
      this.received(client, data);
    } catch (error) {
      this.failed(client, error, 'a frame');
    }
  }

  /**
   * A frame is read and judged at once (a heartbeat, a bad frame, a command past the budget end there);
   * a command's work is done at once too, unless it names many ids or others of its socket are waiting:
   * then it waits its turn in the command queue, in order with the socket's others.
   */
  private received(client: Client, data: RawData): void {
    const bytes = Buffer.isBuffer(data)
      ? data
      : Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.from(data as ArrayBuffer);
    // Larger than a heartbeat ever is, it can only be a command: charged before it is parsed, and refused
    // unparsed when nested deeper than a command ever is.
    const large = bytes.length > SMALL_FRAME_BYTES;
    if (large) {
      if (!this.charged(client)) return;
      if (nestedDeeperThan(bytes, MAX_FRAME_DEPTH)) {
        this.end(client, Close.InvalidPayload);
        return;
      }
    }
    const command = parseClientFrame(bytes.toString(), {
      maxIds: this.options.maxIdsPerSocket,
      subscribeToAll: this.options.subscribeToAll,
    });
    if (command.op === 'heartbeat') return;
    if (command.op === 'close') {
      this.end(client, command.close);
      return;
    }
    if (!large && !this.charged(client)) return;
    if (client.deferred) {
      client.deferred.push(() => this.run(client, command));
      return;
    }
    if (client.queued === 0 && command.ids.length <= QUEUE_AT_IDS) {
      this.run(client, command);
      return;
    }
    this.queue(client, () => this.run(client, command));
  }

  /**
   * Takes a command's worth of the socket's budget; false when it is spent, and the socket is closed 4009
   * (after the commands it has waiting, if any; it is read no further meanwhile).
   */
  private charged(client: Client): boolean {
    const perMinute = this.options.commandsPerMinute;
    client.budget ??= new CommandBudget(perMinute);
    const pool = this.clientBudget(this.clientBudgets, client.ip, perMinute, SOCKET_COMMAND_BURST);
    if (client.budget.take() && pool.take()) return true;
    this.limited(client, 'socket_commands', refillMs(perMinute));
    return false;
  }

  /** Takes a frame's worth of the socket's frame budget; false when it is spent, as `charged`. */
  private frameCharged(client: Client): boolean {
    const { perMinute, burst } = this.framePace;
    client.frames ??= new CommandBudget(perMinute, burst);
    const pool = this.clientBudget(this.clientFrameBudgets, client.ip, perMinute, burst);
    if (client.frames.take() && pool.take()) return true;
    this.limited(client, 'socket_frames', refillMs(perMinute, burst));
    return false;
  }

  /**
   * Closes a socket past one of its budgets 4009 (after the commands it has waiting, if any; it is read no
   * further meanwhile), and refuses its client new sockets until such a budget would have filled again.
   */
  private limited(client: Client, limit: 'socket_commands' | 'socket_frames', coolingMs: number): void {
    this.options.metrics?.rateLimited(limit);
    this.cooling.set(client.ip, Math.max(this.cooling.get(client.ip) ?? 0, Date.now() + coolingMs));
    if (client.queued === 0) {
      this.end(client, Close.RateLimited);
    } else {
      client.spent = true;
      client.socket.pause();
      this.queue(client, () => this.end(client, Close.RateLimited));
    }
  }

  /**
   * The client's budget over all its sockets, in `budgets`: what SOCKETS_PER_IP sockets of `perMinute`
   * after `burst` may spend together; unlimited when SOCKETS_PER_IP is off.
   */
  private clientBudget(
    budgets: Map<string, CommandBudget>,
    ip: string,
    perMinute: number,
    burst: number,
  ): CommandBudget {
    let budget = budgets.get(ip);
    if (!budget) {
      const sockets = this.options.socketsPerIp;
      budget = new CommandBudget(sockets === 0 ? 0 : perMinute * sockets, burst * sockets);
      budgets.set(ip, budget);
    }
    return budget;
  }

  /** `work` for the socket, after what it has waiting in the command queue. */
  private queue(client: Client, work: () => void): void {
    client.queued++;
    this.commands.push(() => {
      client.queued--;
      if (client.closing) return;
      try {
        work();
      } catch (error) {
        this.failed(client, error, 'a frame');
      }
    });
  }

  private run(client: Client, command: Extract<ClientCommand, { op: 'subscribe' | 'unsubscribe' }>): void {
    if (command.op === 'unsubscribe') {
      this.subscriptions.unsubscribe(client, command.ids, command.all);
      return;
    }
    if (command.all && (this.options.source.unsettled ?? 0) > 0) {
      this.afterSettled(client, command);
      return;
    }
    // Refused before anything is read: the subscriptions of every other socket and stream go on.
    if (!this.subscriptions.fits(client, command.ids)) {
      this.options.metrics?.rateLimited('max_subscriptions');
      this.end(client, Close.SubscriptionsFull);
      return;
    }
    // Read before the client subscribes: a user first rendered by this read (a member held as listed) is
    // announced to the others, and reaches this client in its INIT_STATE only, not again as an update.
    const state = this.initState(command, client.compressed);
    const held = this.subscriptions.subscribe(client, command.ids, command.all);
    if (held > this.options.maxIdsPerSocket) {
      this.end(client, Close.InvalidPayload);
      return;
    }
    this.sendInitState(client, state);
  }

  /**
   * A subscription to all while listed members wait to be rendered: an INIT_STATE streamed meanwhile would
   * be followed by an update for each of them as it is rendered. It runs once none waits, and the socket's
   * commands that came meanwhile after it, in order.
   */
  private afterSettled(client: Client, command: Extract<ClientCommand, { op: 'subscribe' }>): void {
    const waiting: Array<() => void> = [];
    client.deferred = waiting;
    void this.options.source.settled?.().then(() => {
      client.deferred = null;
      if (client.closing) return;
      this.queue(client, () => {
        this.run(client, command);
        // Deferred again (a listing came meanwhile): the rest wait behind it once more.
        for (const work of waiting) {
          if (client.deferred) client.deferred.push(work);
          else work();
        }
      });
    });
  }

  /** One presence for `subscribe_to_id` (`{}` if unmonitored); otherwise a map of the monitored ones. */
  private initState(
    command: { ids: string[]; all: boolean; single: string | undefined },
    compressed: boolean,
  ): InitState {
    const { source } = this.options;
    if (command.single !== undefined) return { kind: 'single', snapshot: source.get(command.single) };
    if (command.all) return mapOf(() => source.snapshots(), compressed);
    const ids = [...new Set(command.ids)];
    return mapOf(() => monitoredAmong(ids, (id) => source.get(id)), compressed);
  }

  private sendInitState(client: Client, state: InitState): void {
    if (!client.out.busy) {
      const json = initStateJson(client.seq + 1, state, client.compressed);
      if (json !== null) {
        client.seq++;
        this.sendSingle(client, json);
        return;
      }
    }
    client.out.stream(initStateStream(state, client.compressed));
  }

  private fanOut(userId: Snowflake, current: PresenceSnapshot): void {
    if (!this.subscriptions.heard(userId)) return;
    const started = performance.now();
    let event: SharedEvent | LargePresenceEvent | undefined;
    for (const client of this.subscriptions.subscribersOf(userId)) {
      event ??= eventOf(userId, current);
      this.sendEvent(client, userId, event);
    }
    // A change nobody listens to is no fan-out: timing it would only pull the histogram towards zero.
    if (event) this.options.metrics?.fannedOut((performance.now() - started) / 1000);
  }

  private sendEvent(client: Client, userId: Snowflake, event: SharedEvent | LargePresenceEvent): void {
    if (client.closing) return;
    if (client.out.busy) {
      if (this.tooSlow(client)) return;
      // Nothing may come between a stream's fragments: the update goes out after it, as it is then.
      client.waiting ??= new Set();
      client.waiting.add(userId);
      if (client.waiting.size > MAX_WAITING_UPDATES) this.end(client, Close.SlowConsumer);
    } else if (event instanceof SharedEvent) {
      if (!this.sendable(client)) return;
      client.out.sendShared(event, ++client.seq);
      this.options.metrics?.frameSent();
    } else if (!this.tooSlow(client)) {
      // Large: written as the socket drains, spread over turns with every other socket's (outbound.ts).
      client.out.stream(client.compressed ? event.zlib() : event.textStream());
    }
  }

  /** The updates that waited for a stream, each as the presence is now. */
  private sendWaiting(client: Client): void {
    const waiting = client.waiting;
    client.waiting = null;
    if (!waiting) return;
    for (const userId of waiting) {
      const snapshot = this.options.source.get(userId);
      if (snapshot && this.subscriptions.isSubscribed(client, userId)) {
        this.sendEvent(client, userId, eventOf(userId, snapshot));
      }
    }
  }

  private sendSingle(client: Client, json: string): void {
    this.send(client, singleFrame(json, client.compressed));
  }

  private send(client: Client, message: Buffer | string | Fragments): void {
    if (!this.sendable(client)) return;
    client.out.send(message);
    this.options.metrics?.frameSent();
  }

  /** Open, not closing, and not over its send buffer cap (closed 4008 if it is). */
  private sendable(client: Client): boolean {
    return !client.closing && client.ws.readyState === WebSocket.OPEN && !this.tooSlow(client);
  }

  /**
   * Whether the socket has more unsent than its cap, and is closed 4008 for it. Judged on what was already
   * waiting, so one large presence never condemns a socket that reads.
   */
  private tooSlow(client: Client): boolean {
    if (client.ws.bufferedAmount <= this.sendBufferCap) return false;
    this.end(client, Close.SlowConsumer);
    return true;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [ip, until] of this.cooling) if (until <= now) this.cooling.delete(ip);
    for (const budgets of [this.clientBudgets, this.clientFrameBudgets]) {
      for (const [ip, budget] of budgets) if (budget.spent() === 0) budgets.delete(ip);
    }
    const silentSince = now - 2 * this.heartbeatIntervalMs;
    for (const client of this.clients) {
      if (client.lastFrameAt < silentSince) this.end(client, Close.HeartbeatTimeout);
      // A stream the socket has not read for as long is held for a client that is not reading.
      else if (client.out.waitingSince !== null && client.out.waitingSince < silentSince) {
        this.end(client, Close.SlowConsumer);
      }
    }
  }

  private end(client: Client, close: CloseReason): void {
    if (client.closing) return;
    client.closing = true;
    client.waiting = null;
    // It hears nothing more: its ids go back to MAX_SUBSCRIPTIONS now, not once its client lets go.
    this.subscriptions.release(client);
    if (close === Close.GoingAway) {
      // Shutting down: the client's side of the close handshake is awaited, as it comes.
      client.ws.close(close.code, close.reason);
      setTimeout(() => client.ws.terminate(), CLOSE_GRACE_MS).unref();
    } else {
      closeUnheard(client.ws, client.socket, close);
    }
  }
}

/**
 * Closes a socket whose client has said all it will be heard for. What it sends from now on is dropped
 * as it arrives, never decoded (a client flooding frames costs nothing once refused, and its leaving is
 * still noticed at once); the connection ends once the close frame has gone out, so the client learns
 * the code at once; and it is cut after a grace.
 */
function closeUnheard(ws: WebSocket, socket: Duplex, close: CloseReason): void {
  ws.close(close.code, close.reason);
  socket.removeAllListeners('data');
  socket.on('data', () => {});
  socket.end();
  setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
}

/** The event of a change, shared by every subscriber: small ones copied per socket, large ones not. */
function eventOf(userId: Snowflake, snapshot: PresenceSnapshot): SharedEvent | LargePresenceEvent {
  if (snapshot.body.length >= FRAGMENT_AT_BYTES) return new LargePresenceEvent(userId, snapshot);
  return new SharedEvent('PRESENCE_UPDATE', withUserId(userId, snapshot.json));
}

/** An upgrade that does not become a socket: answered in the contract's envelope, then the connection ends. */
function refuseUpgrade(
  socket: Duplex,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ success: false, error: { code, message } });
  const extra = { ...(status === 429 ? { 'Retry-After': '60' } : {}), ...headers };
  // HTTP sockets are half-open: without this the connection would wait for the client to end it.
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      Object.entries(extra)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      'Access-Control-Allow-Origin: *\r\n' +
      SECURITY_HEADER_LINES +
      'Connection: close\r\n\r\n' +
      body,
  );
}
