import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import { SocketBudgets } from '../limits/socket-budgets.js';
import type { SocketSlots } from '../limits/socket-slots.js';
import type { SubscriptionCap } from '../limits/subscription-cap.js';
import type { ClientAddressOf } from '../net/client-address.js';
import type { Metrics, SubscriptionKind } from '../ops/metrics.js';
import type { PresenceSource } from '../presence/registry/registry.js';
import { Admission } from './admission.js';
import { closeInTurn } from './close-in-turn.js';
import { CommandQueue } from './command-queue.js';
import { SocketCommands } from './commands.js';
import { FanOut } from './fanout.js';
import { paceChanges } from './fanout-pace.js';
import { helloJson } from './frames.js';
import { CLOSE_GRACE_MS, closeUnheard, OpenSocket, type SocketEnding } from './open-socket.js';
import { Close, type CloseReason, HEARTBEAT_INTERVAL_MS, SEND_BUFFER_CAP_BYTES } from './protocol.js';
import { Subscriptions } from './subscriptions.js';

export const SOCKET_PATH = '/socket';

export interface SocketGatewayOptions {
  server: Server;
  source: PresenceSource;
  logger: Logger;
  /** Concurrent sockets per client IP; 0 switches the cap off. */
  socketsPerIp: number;
  /** SOCKETS_PER_IP and MAX_SOCKETS, shared with the event streams (src/sse/). */
  slots: SocketSlots;
  /** MAX_SUBSCRIPTIONS, shared with the event streams; none: no cap. */
  subscriptionCap?: SubscriptionCap;
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

/**
 * Lanyard's socket protocol at `/socket`, on the HTTP server's port: who may open a socket
 * (admission.ts), what sockets send (commands.ts), what they are sent (fanout.ts), and here the open
 * sockets themselves, from the HELLO they are greeted with until they are closed or go silent.
 */
export class SocketGateway {
  private readonly sockets = new Set<OpenSocket>();
  readonly subscriptions: Subscriptions<OpenSocket>;
  private readonly budgets: SocketBudgets;
  private readonly admission: Admission;
  /** Clients leaving, closed a slice per turn apart from the commands: a queue of those does not hold them. */
  private readonly departures = new CommandQueue();
  private readonly commands: SocketCommands;
  private readonly fanOut: FanOut;
  private readonly heartbeatIntervalMs: number;
  private readonly sweepTimer: NodeJS.Timeout;
  /** Stops the paced changes coming to the fan-out. */
  private readonly stopChanges: () => void;
  /** How the parts close a socket. */
  private readonly ending: SocketEnding = {
    end: (socket, close) => this.end(socket, close),
    failed: (socket, error, during) => this.failed(socket, error, during),
  };

  constructor(private readonly options: SocketGatewayOptions) {
    const queue = new CommandQueue();
    // Ids of closed sockets are let go in the command queue, in turn with every socket's commands.
    this.subscriptions = new Subscriptions(options.subscriptionCap, queue);
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS;
    this.budgets = new SocketBudgets(
      options.commandsPerMinute,
      this.heartbeatIntervalMs,
      options.socketsPerIp,
    );
    this.fanOut = new FanOut({
      source: options.source,
      subscriptions: this.subscriptions,
      sendBufferCap: options.sendBufferCapBytes ?? SEND_BUFFER_CAP_BYTES,
      ending: this.ending,
      ...(options.metrics ? { metrics: options.metrics } : {}),
    });
    this.commands = new SocketCommands({
      source: options.source,
      subscriptions: this.subscriptions,
      queue,
      budgets: this.budgets,
      fanOut: this.fanOut,
      ending: this.ending,
      maxIdsPerSocket: options.maxIdsPerSocket,
      subscribeToAll: options.subscribeToAll,
      ...(options.metrics ? { metrics: options.metrics } : {}),
    });
    this.admission = new Admission({
      server: options.server,
      path: SOCKET_PATH,
      logger: options.logger,
      clientAddress: options.clientAddress,
      slots: options.slots,
      budgets: this.budgets,
      ...(options.refusalDelayMs === undefined ? {} : { refusalDelayMs: options.refusalDelayMs }),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      accept: (ws, connection, client, compressed) => this.opened(ws, connection, client, compressed),
    });
    this.stopChanges = paceChanges(
      options.source,
      (userId, snapshot) => this.fanOut.changed(userId, snapshot),
      options.pacedBytesPerSecond,
    );
    this.sweepTimer = setInterval(() => this.sweep(), Math.max(this.heartbeatIntervalMs / 2, 10));
    this.sweepTimer.unref();
  }

  get socketCount(): number {
    return this.sockets.size;
  }

  /** What the sockets hold written but not yet taken by their connections: bounded per socket by streams. */
  bufferedBytes(): number {
    let bytes = 0;
    for (const socket of this.sockets) bytes += socket.out.bufferedAmount;
    return bytes;
  }

  /** Open sockets by what they listen to: everyone, several ids, or one (sockets holding nothing aside). */
  subscribedSockets(): Record<SubscriptionKind, number> {
    const counts = { id: 0, ids: 0, all: 0 };
    for (const socket of this.sockets) {
      if (this.subscriptions.subscribedToAll(socket)) counts.all++;
      else {
        const held = this.subscriptions.holds(socket);
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
    this.admission.stop();
    const closed = [...this.sockets].map(
      (socket) =>
        new Promise<void>((resolve) => {
          socket.ws.once('close', () => resolve());
          this.end(socket, Close.GoingAway);
        }),
    );
    await Promise.all(closed);
    this.admission.close();
  }

  private end(socket: OpenSocket, close: CloseReason): void {
    if (socket.closing) return;
    // It hears nothing more: its ids go back to MAX_SUBSCRIPTIONS now, not once its client lets go.
    this.hearsNoMore(socket);
    if (close === Close.GoingAway) {
      // Shutting down: the client's side of the close handshake is awaited, as it comes.
      socket.ws.close(close.code, close.reason);
      setTimeout(() => socket.ws.terminate(), CLOSE_GRACE_MS).unref();
    } else {
      closeUnheard(socket.ws, socket.connection, close);
    }
  }

  private failed(socket: OpenSocket, error: unknown, during: string): void {
    if (socket.closing) return;
    this.options.logger.error(
      { err: error, ip: socket.client },
      `socket failed while handling ${during}; closed it`,
    );
    this.end(socket, Close.InternalError);
  }

  /** A socket admitted: greeted with HELLO, and heard from now on. */
  private opened(ws: WebSocket, connection: Duplex, client: string, compressed: boolean): void {
    const budgets = { commands: this.budgets.commandBucket(), frames: this.budgets.frameBucket() };
    const socket = new OpenSocket(ws, connection, client, compressed, budgets, (self) => ({
      nextSeq: () => ++self.seq,
      idle: () => this.fanOut.sendWaiting(self),
      closed: () => self.closing || self.ws.readyState !== WebSocket.OPEN,
      failed: (error) => this.failed(self, error, 'sending'),
    }));
    this.sockets.add(socket);
    this.commands.listen(socket);
    ws.on('close', () => this.released(socket));
    // Its client has left, and its close waits its turn; its slot is held until the connection is closed.
    closeInTurn(ws, connection, this.departures, () => this.hearsNoMore(socket));
    this.fanOut.sendJson(socket, helloJson(this.heartbeatIntervalMs));
  }

  /** Nothing more is sent to the socket or done for it, and its ids go back to MAX_SUBSCRIPTIONS. */
  private hearsNoMore(socket: OpenSocket): void {
    socket.closing = true;
    socket.waitingUpdates = null;
    this.subscriptions.release(socket);
  }

  private released(socket: OpenSocket): void {
    // Gone: what it had waiting in the command queue is dropped with it.
    socket.closing = true;
    if (!this.sockets.delete(socket)) return;
    this.subscriptions.release(socket);
    this.options.slots.release(socket.client);
  }

  /**
   * Forgets the budgets whole again, and closes the sockets gone silent (4007) or holding a stream their
   * client has not read for as long (4008).
   */
  private sweep(): void {
    this.budgets.sweep();
    const silentSince = Date.now() - 2 * this.heartbeatIntervalMs;
    for (const socket of this.sockets) {
      if (socket.lastFrameAt < silentSince) this.end(socket, Close.HeartbeatTimeout);
      // A stream the socket has not read for as long is held for a client that is not reading.
      else if (socket.out.waitingSince !== null && socket.out.waitingSince < silentSince) {
        this.end(socket, Close.SlowConsumer);
      }
    }
  }
}
