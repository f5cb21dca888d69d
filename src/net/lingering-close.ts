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
 * Instead the answer goes out with the end of our side, and what arrives is read and dropped until the
 * client closes too, more than LINGER_MAX_BYTES have arrived, or LINGER_MS have passed.
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
  // node:http drops a body it has given up on before any 'data' event: what arrived is the socket's count.
  const watch = setInterval(() => {
    if (socket.bytesRead - started > LINGER_MAX_BYTES || Date.now() >= until) cut();
  }, LINGER_CHECK_MS).unref();
  socket.once('close', () => clearInterval(watch));
  socket.once('end', cut);
  // A route that began reading the body and stopped (a chunked body past its limit) left it paused.
  request.resume();
  socket.resume();
}
