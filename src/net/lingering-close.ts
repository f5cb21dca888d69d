import type { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

/** The most of a refused request's body read and dropped after its answer; past it the connection is cut. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** The longest a connection is kept after its answer to drop what its client is still sending. */
export const LINGER_MS = 10_000;
/** How often a lingering connection's bytes and time are looked at: the bounds hold to within this long. */
const LINGER_CHECK_MS = 100;

type Handler = (request: IncomingMessage, response: ServerResponse) => void;
/** node:http closes a connection after an answer with `Connection: close` by this method of net.Socket. */
type ClosingSocket = Socket & { destroySoon(): void };

const closeWhenWritten = (Socket.prototype as ClosingSocket).destroySoon;

/**
 * `handler`, with a lingering close for every request that announces a body: a connection that closes
 * after an answer sent before its body was read (a 413 from Content-Length, a 401, a 429, a held refusal)
 * does not close on what the client is still sending. Closed there, it would be reset, and the client,
 * still writing, would often lose the answer with its connection (EPIPE, a broken pipe) rather than read it.
 * Instead the answer goes out with the end of our side, and what arrives is read into one scratch buffer
 * and dropped until the client closes too, more than LINGER_MAX_BYTES have arrived, or LINGER_MS have
 * passed.
 */
export function lingeringClose(handler: Handler): Handler {
  return (request, response) => {
    const { headers } = request;
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) {
      lingerIfUnread(request);
    }
    handler(request, response);
  };
}

function lingerIfUnread(request: IncomingMessage): void {
  const socket = request.socket as ClosingSocket;
  socket.destroySoon = () => {
    if (request.complete) closeWhenWritten.call(socket);
    else linger(socket, request);
  };
}

function linger(socket: Socket, request: IncomingMessage): void {
  socket.end();
  const started = socket.bytesRead;
  const until = Date.now() + LINGER_MS;
  const cut = (): void => {
    socket.destroy();
  };
  // What arrives is counted by the socket (bytesRead), however it is read and dropped.
  const watch = setInterval(() => {
    if (socket.bytesRead - started > LINGER_MAX_BYTES || Date.now() >= until) cut();
  }, LINGER_CHECK_MS).unref();
  socket.once('end', cut);
  const intoScratch = readIntoScratch(socket);
  if (intoScratch) readingIntoScratch.add(socket);
  socket.once('close', () => {
    clearInterval(watch);
    readingIntoScratch.delete(socket);
    readersThisTurn.delete(socket);
  });
  // A route that began reading the body and stopped (a chunked body past its limit) left it paused.
  request.resume();
  socket.resume();
  // It waits for the next turn with the others if this one's budget is spent.
  if (intoScratch && heldUntilNextTurn) setReading(socket, false);
}

/** Where every lingering connection's bytes are read, to be dropped: one buffer for the process. */
const SCRATCH = Buffer.allocUnsafe(64 * 1024);

/**
 * What all lingering connections together read in one turn of the event loop; past it they all stop
 * reading until the next turn. Connections refused together each hold megabytes in the kernel by the time
 * they linger: read in one go, that is a turn of tens of milliseconds in which no other client is served.
 */
export const LINGER_TURN_BYTES = 256 * 1024;

/**
 * Lingering connections reading into SCRATCH, which LINGER_TURN_BYTES holds back together, the one that
 * read longest ago first: after a turn held back they start again in this order.
 */
const readingIntoScratch = new Set<Socket>();
let readThisTurn = 0;
let turnEndScheduled = false;
let heldUntilNextTurn = false;
/** The connections that read in this turn. */
const readersThisTurn = new Set<Socket>();
/**
 * Whether connections that read in a turn held back, while others waited, sit out the next one. The kernel
 * reports the connections read last first again: started again with the others, the same one or two would
 * take every turn's budget until they were done, and the rest could wait until LINGER_MS cut them.
 */
let someSitOut = false;

/** Counts what a lingering connection read; false (stop reading) once the turn's budget is spent. */
function chargeTurn(this: Socket, bytes: number): boolean {
  if (readingIntoScratch.delete(this)) readingIntoScratch.add(this);
  readersThisTurn.add(this);
  readThisTurn += bytes;
  endTurnSoon();
  if (readThisTurn >= LINGER_TURN_BYTES && !heldUntilNextTurn) {
    heldUntilNextTurn = true;
    for (const socket of readingIntoScratch) setReading(socket, false);
  }
  return !heldUntilNextTurn;
}

function endTurnSoon(): void {
  if (turnEndScheduled) return;
  turnEndScheduled = true;
  setImmediate(endTurn);
}

function endTurn(): void {
  turnEndScheduled = false;
  readThisTurn = 0;
  const held = heldUntilNextTurn;
  heldUntilNextTurn = false;
  if (held || someSitOut) {
    const othersWaited = held && readersThisTurn.size < readingIntoScratch.size;
    someSitOut = false;
    for (const socket of readingIntoScratch) {
      if (othersWaited && readersThisTurn.has(socket)) someSitOut = true;
      else setReading(socket, true);
    }
    if (someSitOut) endTurnSoon();
  }
  readersThisTurn.clear();
}

/**
 * Stops or restarts a lingering connection's reads at its handle, as net.Socket's pause and resume do for a
 * socket reading into its own buffer, without the stream's bookkeeping: that allocates on every call, and
 * a flood of lingering connections would have every one of them paused and resumed each turn.
 */
function setReading(socket: ServerSocket, reading: boolean): void {
  const handle = socket._handle;
  if (!handle || socket.destroyed || handle.reading === reading) return;
  handle.reading = reading;
  const failed = reading ? handle.readStart?.() : handle.readStop?.();
  if (failed) socket.destroy();
}

/** The parts of node:http's and node:net's sockets that reading into a buffer of ours needs. */
interface ReadableHandle {
  _consumed?: boolean;
  reading?: boolean;
  readStart?(): number;
  readStop?(): number;
  useUserBuffer?(buffer: Uint8Array): void;
}
interface ConsumingParser {
  _consumed?: boolean;
  unconsume?(): void;
}
type ServerSocket = Socket & { parser?: ConsumingParser | null; _handle?: ReadableHandle | null };

/**
 * Reads what the client still sends into SCRATCH instead of a new buffer for each read and a copy of each
 * body chunk: a client streaming bodies to be dropped would otherwise make the process allocate at its
 * pace, and each few megabytes would cost every other client a full garbage collection. This is what
 * net.Socket's `onread` option does (https://nodejs.org/api/net.html#new-netsocketoptions), which a
 * socket accepted by node:http cannot be given: the HTTP parser stops reading from the connection, and
 * the socket takes the buffer and its callback under Node's own names for them. Where those names are not
 * found, bytes are dropped as node:http reads them. Returns whether the socket reads into SCRATCH.
 */
function readIntoScratch(socket: ServerSocket): boolean {
  const handle = socket._handle;
  const symbols = Object.getOwnPropertySymbols(socket);
  const named = (name: string) => symbols.find((symbol) => symbol.description === name);
  const [buffer, callback, generator] = [named('kBuffer'), named('kBufferCb'), named('kBufferGen')];
  const fields = socket as unknown as Record<symbol, unknown>;
  // A generator of buffers, when set, is called on every read: only a socket without one takes ours.
  const usable = handle?.readStart && handle.readStop;
  if (!usable || !handle.useUserBuffer || !buffer || !callback || !generator || fields[generator] !== null) {
    return false;
  }
  const { parser } = socket;
  if (parser && handle._consumed) {
    parser.unconsume?.();
    parser._consumed = false;
    handle._consumed = false;
  }
  socket.removeAllListeners('data');
  fields[buffer] = SCRATCH;
  // What was read is dropped (the socket counts it in bytesRead); returning false stops the socket reading.
  // Node calls it as a method of the socket, which tells the readers of a turn apart.
  fields[callback] = chargeTurn;
  // biome-ignore lint/correctness/useHookAtTopLevel: a method of Node's TCP handle, not a React hook.
  handle.useUserBuffer(SCRATCH);
  return true;
}
