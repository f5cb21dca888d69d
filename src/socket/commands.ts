import type { RawData } from 'ws';
import type { SocketBudgets } from '../limits/socket-budgets.js';
import type { Metrics } from '../ops/metrics.js';
import type { PresenceSource } from '../presence/registry/registry.js';
import type { CommandQueue } from './command-queue.js';
import type { FanOut } from './fanout.js';
import { type InitState, mapOf, monitoredAmong } from './init-state.js';
import type { OpenSocket, SocketEnding } from './open-socket.js';
import {
  type ClientCommand,
  Close,
  type CloseReason,
  nestedDeeperThan,
  parseClientFrame,
} from './protocol.js';
import type { Subscriptions } from './subscriptions.js';

/** A command naming more ids than this waits its turn in the command queue (command-queue.ts). */
const QUEUE_AT_IDS = 50;
/** A frame larger than this is no heartbeat (`{"op":3}`): it is charged as a command before it is read. */
const SMALL_FRAME_BYTES = 1024;
/** Objects and arrays within objects and arrays a command ever needs (`{"d":{"subscribe_to_ids":[…]}}`), with room. */
const MAX_FRAME_DEPTH = 8;

type SubscriptionCommand = Extract<ClientCommand, { op: 'subscribe' | 'unsubscribe' }>;

export interface SocketCommandsOptions {
  source: PresenceSource;
  subscriptions: Subscriptions<OpenSocket>;
  /** The queue the commands naming many ids wait in, in turn with every socket's. */
  queue: CommandQueue;
  budgets: SocketBudgets;
  fanOut: FanOut;
  ending: SocketEnding;
  /** Ids one socket may subscribe to. */
  maxIdsPerSocket: number;
  /** `subscribe_to_all` is allowed. */
  subscribeToAll: boolean;
  metrics?: Metrics;
}

/**
 * What sockets send: every frame charged to the frame budgets before it is read, then judged (a heartbeat,
 * a close, a bad frame); op 2 and op 4 charged to the command budgets and done, subscribing or
 * unsubscribing and answering with an INIT_STATE. A socket past a budget is closed 4009.
 */
export class SocketCommands {
  constructor(private readonly options: SocketCommandsOptions) {}

  /** Hears the socket's frames from now on: messages, and pings and pongs, which are frames too. */
  listen(socket: OpenSocket): void {
    const { ws } = socket;
    ws.on('message', (data) => this.arrived(socket, data));
    // A flood of pings or pongs ends at the frame budget as a flood of heartbeats does.
    ws.on('ping', (data) => {
      if (this.handlesFrame(socket)) ws.pong(data);
    });
    ws.on('pong', () => this.handlesFrame(socket));
  }

  /**
   * Whether a frame of the socket is to be handled: not once it is on its way out, which has said all it
   * will be heard for, nor past its frame budget. Charged before anything is done with the frame: one past
   * the budget costs a comparison, not a parse.
   */
  private handlesFrame(socket: OpenSocket): boolean {
    if (socket.closing || socket.endsAfterQueued) return false;
    if (this.options.budgets.takeFrame(socket.frames, socket.client)) return true;
    this.refuse(socket, 'socket_frames');
    return false;
  }

  private arrived(socket: OpenSocket, data: RawData): void {
    if (!this.handlesFrame(socket)) return;
    socket.lastFrameAt = Date.now();
    try {
      this.received(socket, data);
    } catch (error) {
      this.options.ending.failed(socket, error, 'a frame');
    }
  }

  /**
   * A small frame is judged at once. A large one is charged, then waits its turn in the command queue as
   * bytes and is read there, so a flood's frames are read a slice per turn and wait as bytes, not objects.
   */
  private received(socket: OpenSocket, data: RawData): void {
    const bytes = Buffer.isBuffer(data)
      ? data
      : Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.from(data as ArrayBuffer);
    // Larger than a heartbeat ever is, it can only be a command: charged before it is parsed, and refused
    // unparsed when nested deeper than a command ever is.
    if (bytes.length <= SMALL_FRAME_BYTES) {
      this.judged(socket, bytes, false);
      return;
    }
    if (!this.charged(socket)) return;
    if (nestedDeeperThan(bytes, MAX_FRAME_DEPTH)) {
      this.endInOrder(socket, Close.InvalidPayload);
      return;
    }
    // A view into ws's read would keep all of that read while it waits.
    const own = bytes.length * 2 < bytes.buffer.byteLength ? Buffer.from(bytes) : bytes;
    this.queue(socket, () => this.judged(socket, own, true));
  }

  /**
   * Reads a frame and does what it says. `inTurn`: a large frame whose turn in the queue this is, charged
   * already; a small one's command is done at once unless it names many ids or others of its socket wait.
   */
  private judged(socket: OpenSocket, bytes: Buffer, inTurn: boolean): void {
    const command = parseClientFrame(bytes.toString(), {
      maxIds: this.options.maxIdsPerSocket,
      subscribeToAll: this.options.subscribeToAll,
    });
    if (command.op === 'heartbeat') return;
    if (command.op === 'close') {
      if (inTurn) this.options.ending.end(socket, command.close);
      else this.endInOrder(socket, command.close);
      return;
    }
    if (!inTurn && !this.charged(socket)) return;
    if (inTurn || (socket.queued === 0 && (socket.afterPending || command.ids.length <= QUEUE_AT_IDS))) {
      this.inOrder(socket, command);
      return;
    }
    this.queue(socket, () => this.inOrder(socket, command));
  }

  /** Runs the command now, or after a subscription to all that waits for pending members, as it came. */
  private inOrder(socket: OpenSocket, command: SubscriptionCommand): void {
    if (socket.afterPending) socket.afterPending.push(() => this.run(socket, command));
    else this.run(socket, command);
  }

  /** Takes a command's worth of the socket's budget and its client's; false when either is spent. */
  private charged(socket: OpenSocket): boolean {
    if (this.options.budgets.takeCommand(socket.commands, socket.client)) return true;
    this.refuse(socket, 'socket_commands');
    return false;
  }

  /**
   * Closes a socket past one of its budgets 4009 (after the commands it has waiting, if any; it is read no
   * further meanwhile). Its client's new sockets are refused meanwhile (limits/socket-budgets.ts).
   */
  private refuse(socket: OpenSocket, limit: 'socket_commands' | 'socket_frames'): void {
    this.options.metrics?.rateLimited(limit);
    if (socket.queued > 0) socket.connection.pause();
    this.endInOrder(socket, Close.RateLimited);
  }

  /** Closes the socket with `close`, after the commands it has waiting if any; none of its frames counts meanwhile. */
  private endInOrder(socket: OpenSocket, close: CloseReason): void {
    if (socket.queued === 0) {
      this.options.ending.end(socket, close);
      return;
    }
    socket.endsAfterQueued = true;
    this.queue(socket, () => this.options.ending.end(socket, close));
  }

  /** `work` for the socket, after what it has waiting in the command queue. */
  private queue(socket: OpenSocket, work: () => void): void {
    socket.queued++;
    this.options.queue.push(() => {
      socket.queued--;
      if (socket.closing) return;
      try {
        work();
      } catch (error) {
        this.options.ending.failed(socket, error, 'a frame');
      }
    });
  }

  private run(socket: OpenSocket, command: SubscriptionCommand): void {
    const { subscriptions, source } = this.options;
    if (command.op === 'unsubscribe') {
      subscriptions.unsubscribe(socket, command.ids, command.all);
      return;
    }
    if (command.all && (source.pendingCount ?? 0) > 0) {
      this.afterPendingRendered(socket, command);
      return;
    }
    // Refused before anything is read: the subscriptions of every other socket and stream go on.
    if (!subscriptions.fits(socket, command.ids)) {
      this.options.metrics?.rateLimited('max_subscriptions');
      this.options.ending.end(socket, Close.SubscriptionsFull);
      return;
    }
    // Read before the socket subscribes: a user first rendered by this read (a pending member) is
    // announced to the others, and reaches this socket in its INIT_STATE only, not again as an update.
    const state = this.initState(command, socket.compressed);
    const held = subscriptions.subscribe(socket, command.ids, command.all);
    if (held > this.options.maxIdsPerSocket) {
      this.options.ending.end(socket, Close.InvalidPayload);
      return;
    }
    this.options.fanOut.sendInitState(socket, state);
  }

  /**
   * A subscription to all while pending members wait to be rendered: an INIT_STATE streamed meanwhile
   * would be followed by an update for each of them as it is rendered. It runs once none waits, and the
   * socket's commands that came meanwhile after it, in order.
   */
  private afterPendingRendered(
    socket: OpenSocket,
    command: Extract<ClientCommand, { op: 'subscribe' }>,
  ): void {
    const waiting: Array<() => void> = [];
    socket.afterPending = waiting;
    void this.options.source.allRendered?.().then(() => {
      if (socket.closing) return;
      // Held until its turn: a command queued before this turn comes still goes after it.
      this.queue(socket, () => {
        socket.afterPending = null;
        this.run(socket, command);
        // Held again (a listing came meanwhile): the rest wait behind it once more.
        for (const work of waiting) {
          const heldAgain = socket.afterPending as Array<() => void> | null;
          if (heldAgain) heldAgain.push(work);
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
}
