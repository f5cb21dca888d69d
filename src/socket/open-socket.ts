import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { TokenBucket } from '../limits/token-bucket.js';
import type { Snowflake } from '../presence/model.js';
import { Outbound, type OutboundHooks } from './outbound.js';
import type { CloseReason } from './protocol.js';

/** A closing socket that does not finish its close handshake in this long is cut. */
export const CLOSE_GRACE_MS = 5_000;

/** One accepted socket: who it is from, where its frames stand, and what it waits for. */
export class OpenSocket {
  seq = 0;
  lastFrameAt = Date.now();
  closing = false;
  /** Users whose update came while a stream was under way: sent after it, as they are then. */
  waitingUpdates: Set<Snowflake> | null = null;
  /** Its own budgets of commands and of frames (limits/socket-budgets.ts). */
  readonly commands: TokenBucket;
  readonly frames: TokenBucket;
  /** Commands of this socket waiting in the command queue. */
  queued = 0;
  /** Closed once the commands it has waiting are done (a budget spent, a bad frame): heard no more. */
  endsAfterQueued = false;
  /** Commands that came while its subscription to all waits for the pending members to be rendered. */
  afterPending: Array<() => void> | null = null;
  readonly out: Outbound;

  constructor(
    readonly ws: WebSocket,
    /** The connection under `ws`. */
    readonly connection: Duplex,
    /** Its client (a clientKey), whose budgets and slots it counts in. */
    readonly client: string,
    readonly compressed: boolean,
    budgets: { commands: TokenBucket; frames: TokenBucket },
    hooks: (socket: OpenSocket) => OutboundHooks,
  ) {
    this.commands = budgets.commands;
    this.frames = budgets.frames;
    this.out = new Outbound(ws, connection, compressed, hooks(this));
  }
}

/** How a socket is ended, by the gateway that holds it. */
export interface SocketEnding {
  /** Closes the socket with `close` (once); it hears nothing more from then on. */
  end(socket: OpenSocket, close: CloseReason): void;
  /** One socket's failure is that socket's: logged once, closed with 1011, and everyone else goes on. */
  failed(socket: OpenSocket, error: unknown, during: string): void;
}

/**
 * Closes a socket whose client has said all it will be heard for. What it sends from now on is dropped
 * as it arrives, never decoded (a client flooding frames costs nothing once refused, and its leaving is
 * still noticed at once); the connection ends once the close frame has gone out, so the client learns
 * the code at once; and it is cut after a grace.
 */
export function closeUnheard(ws: WebSocket, connection: Duplex, close: CloseReason): void {
  ws.close(close.code, close.reason);
  dropUnparsed(ws);
  connection.removeAllListeners('data');
  connection.on('data', () => {});
  connection.end();
  setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
}

/** The parts of ws's frame reader that hold what it has read and not parsed yet. */
interface FrameReader {
  _loop?: boolean;
  _buffers?: Buffer[];
  _bufferedBytes?: number;
}

/**
 * Drops what ws has read from the connection and not parsed yet, and stops it parsing: one read from a
 * flood holds thousands of small frames, which ws would otherwise parse and hand over, all in this turn,
 * for a socket already refused. Where ws's reader has other names, it parses them as it does.
 */
function dropUnparsed(ws: WebSocket): void {
  const reader = (ws as unknown as { _receiver?: FrameReader | null })._receiver;
  if (!reader || !Array.isArray(reader._buffers) || typeof reader._bufferedBytes !== 'number') return;
  reader._loop = false;
  reader._buffers = [];
  reader._bufferedBytes = 0;
}
