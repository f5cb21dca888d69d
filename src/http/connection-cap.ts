import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { PerClientCap } from '../limits/per-client-cap.js';
import { clientKey } from '../net/client-address.js';
import { whenUpgraded } from '../net/upgraded.js';
import { ERROR_STATUS, rawErrorAnswer } from './errors.js';

/**
 * How long a refused connection is read (and dropped) after its answer, waiting for the client to close:
 * closing on a request still arriving would reset the connection, and the client could lose the answer.
 * The most it is read for, however busy: a refused connection is no way to hold one past the cap.
 */
export const REFUSED_LINGER_MS = 2_000;
/** The most a refused connection's client may send before it is cut: a request's headers, and more. */
export const REFUSED_LINGER_BYTES = 64 * 1024;

export interface ConnectionCapOptions {
  /** Concurrent connections per client; 0: no cap. */
  perClient: number;
  /** Peers that carry many clients (trusted proxies): never capped; their clients are limited per request. */
  isTrustedProxy(address: string): boolean;
  /** Told of every connection refused. */
  onRefused?(): void;
}

/**
 * Caps the connections each TCP peer (an IPv6 peer being its /64) holds open on `server` at once. One past
 * the cap is answered `503 too_many_connections` and closed before node:http sees it, so no request on it
 * is parsed. A connection that becomes a WebSocket (accepted as one, not merely asking) leaves the count:
 * sockets have caps of their own.
 */
export function capConnections(server: Server, options: ConnectionCapOptions): void {
  if (options.perClient === 0) return;
  const refusal = Buffer.from(
    rawErrorAnswer(
      ERROR_STATUS.too_many_connections,
      'too_many_connections',
      `at most ${options.perClient} connections at once per client`,
    ),
  );
  const open = new PerClientCap(options.perClient);
  const counted = new Map<Socket, string>();
  const release = (socket: Socket): void => {
    const key = counted.get(socket);
    if (key === undefined) return;
    counted.delete(socket);
    open.release(key);
  };

  // node:http takes a connection in through its 'connection' listener: a refused one never reaches it.
  const accept = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address !== undefined && !options.isTrustedProxy(address)) {
      const key = clientKey(address);
      if (open.full(key)) {
        options.onRefused?.();
        refuse(socket, refusal);
        return;
      }
      open.take(key);
      counted.set(socket, key);
      socket.once('close', () => release(socket));
      // A WebSocket is counted by the socket caps instead, from the moment it is accepted.
      whenUpgraded(socket, () => release(socket));
    }
    for (const listener of accept) listener.call(server, socket);
  });
}

function refuse(socket: Socket, answer: Buffer): void {
  // A client that resets or vanishes before reading its answer is nothing to report.
  socket.on('error', () => socket.destroy());
  const cut = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  socket.once('close', () => clearTimeout(cut));
  socket.on('data', () => {
    if (socket.bytesRead > REFUSED_LINGER_BYTES) socket.destroy();
  });
  socket.once('end', () => socket.destroy());
  socket.end(answer);
}
