import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Requests of one connection handled in a row, in one turn of the event loop; the rest of its pipelined
 * requests wait for the next turns, this many a turn.
 */
export const PIPELINED_PER_TURN = 32;

type Handler = (request: IncomingMessage, response: ServerResponse) => void;
type Waiting = [IncomingMessage, ServerResponse];

/**
 * `handler`, with every connection served at most PIPELINED_PER_TURN requests a turn. node:http parses
 * every request a connection has sent in one go (a read is up to 64 KiB, and several reads a turn): a
 * client pipelining thousands of small requests would have them all handled before anyone else's
 * arrival is looked at. Past the bound, the connection is read no further until its waiting requests
 * have been handled, a few a turn, with every other client's served in between. Answers still go out
 * in the order asked: node:http sends a connection's answers in order whenever they are written.
 */
export function pipelinedTurns(handler: Handler): Handler {
  /** The connection whose requests are being handled in a row this turn, and how many so far. */
  let current: Socket | null = null;
  let inRow = 0;
  let forgetScheduled = false;
  const waiting = new Map<Socket, Waiting[]>();

  const forget = (): void => {
    forgetScheduled = false;
    current = null;
    inRow = 0;
  };

  const handleWaiting = (): void => {
    forget();
    for (const [socket, queue] of waiting) {
      for (const [request, response] of queue.splice(0, PIPELINED_PER_TURN)) {
        if (!socket.destroyed) handler(request, response);
      }
      if (queue.length === 0 || socket.destroyed) {
        waiting.delete(socket);
        socket.resume();
      }
    }
    if (waiting.size > 0) setImmediate(handleWaiting);
  };

  return (request, response) => {
    const socket = request.socket;
    if (waiting.size > 0) {
      const queue = waiting.get(socket);
      if (queue !== undefined) {
        queue.push([request, response]);
        return;
      }
    }
    if (socket !== current) {
      current = socket;
      inRow = 0;
      if (!forgetScheduled) {
        forgetScheduled = true;
        setImmediate(forget);
      }
    }
    if (++inRow <= PIPELINED_PER_TURN) {
      handler(request, response);
      return;
    }
    // Stops reading the connection (what node:http has parsed already still arrives here, and waits).
    socket.pause();
    waiting.set(socket, [[request, response]]);
    if (waiting.size === 1) setImmediate(handleWaiting);
  };
}
