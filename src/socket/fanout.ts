import { WebSocket } from 'ws';
import type { Metrics } from '../ops/metrics.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceSource } from '../presence/registry/registry.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import {
  FRAGMENT_AT_BYTES,
  type Fragments,
  LargePresenceEvent,
  SharedEvent,
  singleFrame,
  withUserId,
} from './frames.js';
import { type InitState, initStateJson, initStateStream } from './init-state.js';
import type { OpenSocket, SocketEnding } from './open-socket.js';
import { Close } from './protocol.js';
import type { Subscriptions } from './subscriptions.js';

/** Users a socket may have waiting for an update while a stream is under way; past it, a slow consumer. */
export const MAX_WAITING_UPDATES = 10_000;

export interface FanOutOptions {
  source: PresenceSource;
  subscriptions: Subscriptions<OpenSocket>;
  /** Unsent bytes a socket may hold when the next frame comes; past it, it is closed 4008. */
  sendBufferCap: number;
  ending: SocketEnding;
  metrics?: Metrics;
}

/**
 * What the sockets are sent: each presence change to the subscribers of its user (the event built once
 * for all of them), and any socket's own frames (HELLO, INIT_STATE), each socket within its send buffer cap.
 */
export class FanOut {
  private readonly source: PresenceSource;
  private readonly subscriptions: Subscriptions<OpenSocket>;
  private readonly sendBufferCap: number;
  private readonly ending: SocketEnding;
  private readonly metrics: Metrics | undefined;

  constructor(options: FanOutOptions) {
    this.source = options.source;
    this.subscriptions = options.subscriptions;
    this.sendBufferCap = options.sendBufferCap;
    this.ending = options.ending;
    this.metrics = options.metrics;
  }

  /** The change of `userId` to `current`, to every socket subscribed to them. */
  changed(userId: Snowflake, current: PresenceSnapshot): void {
    if (!this.subscriptions.hasSubscribers(userId)) return;
    const started = performance.now();
    let event: SharedEvent | LargePresenceEvent | undefined;
    for (const socket of this.subscriptions.subscribersOf(userId)) {
      event ??= eventOf(userId, current);
      this.sendEvent(socket, userId, event);
    }
    // A change nobody listens to is no fan-out: timing it would only pull the histogram towards zero.
    if (event) this.metrics?.fannedOut((performance.now() - started) / 1000);
  }

  /** The updates that waited for a stream, each as the presence is now: the socket's stream has ended. */
  sendWaiting(socket: OpenSocket): void {
    const waiting = socket.waitingUpdates;
    socket.waitingUpdates = null;
    if (!waiting) return;
    for (const userId of waiting) {
      const snapshot = this.source.get(userId);
      if (snapshot && this.subscriptions.isSubscribed(socket, userId)) {
        this.sendEvent(socket, userId, eventOf(userId, snapshot));
      }
    }
  }

  /** An INIT_STATE: one frame at once when it is small and nothing is under way, else a stream. */
  sendInitState(socket: OpenSocket, state: InitState): void {
    if (!socket.out.busy) {
      const json = initStateJson(socket.seq + 1, state, socket.compressed);
      if (json !== null) {
        socket.seq++;
        this.sendJson(socket, json);
        return;
      }
    }
    socket.out.stream(initStateStream(state, socket.compressed));
  }

  /** A frame of the socket's own (HELLO, a small INIT_STATE), as its compression has it. */
  sendJson(socket: OpenSocket, json: string): void {
    this.send(socket, singleFrame(json, socket.compressed));
  }

  private sendEvent(socket: OpenSocket, userId: Snowflake, event: SharedEvent | LargePresenceEvent): void {
    if (socket.closing) return;
    if (socket.out.busy) {
      if (this.tooSlow(socket)) return;
      // Nothing may come between a stream's fragments: the update goes out after it, as it is then.
      socket.waitingUpdates ??= new Set();
      socket.waitingUpdates.add(userId);
      if (socket.waitingUpdates.size > MAX_WAITING_UPDATES) this.ending.end(socket, Close.SlowConsumer);
    } else if (event instanceof SharedEvent) {
      if (!this.sendable(socket)) return;
      socket.out.sendShared(event, ++socket.seq);
      this.metrics?.frameSent();
    } else if (!this.tooSlow(socket)) {
      // Large: written as the socket drains, spread over turns with every other socket's (outbound.ts).
      socket.out.stream(socket.compressed ? event.zlib() : event.textStream());
    }
  }

  private send(socket: OpenSocket, message: Buffer | string | Fragments): void {
    if (!this.sendable(socket)) return;
    socket.out.send(message);
    this.metrics?.frameSent();
  }

  /** Open, not closing, and not over its send buffer cap (closed 4008 if it is). */
  private sendable(socket: OpenSocket): boolean {
    return !socket.closing && socket.ws.readyState === WebSocket.OPEN && !this.tooSlow(socket);
  }

  /**
   * Whether the socket has more unsent than its cap, and is closed 4008 for it. Judged on what was already
   * waiting, so one large presence never condemns a socket that reads.
   */
  private tooSlow(socket: OpenSocket): boolean {
    if (socket.ws.bufferedAmount <= this.sendBufferCap) return false;
    this.ending.end(socket, Close.SlowConsumer);
    return true;
  }
}

/** The event of a change, shared by every subscriber: small ones copied per socket, large ones not. */
function eventOf(userId: Snowflake, snapshot: PresenceSnapshot): SharedEvent | LargePresenceEvent {
  if (snapshot.body.length >= FRAGMENT_AT_BYTES) return new LargePresenceEvent(userId, snapshot);
  return new SharedEvent('PRESENCE_UPDATE', withUserId(userId, snapshot.json));
}
