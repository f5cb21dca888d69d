import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type WebSocket, WebSocketServer } from 'ws';
import type { SocketBudgets } from '../limits/socket-budgets.js';
import type { SocketSlots } from '../limits/socket-slots.js';
import { type ClientAddressOf, clientKey } from '../net/client-address.js';
import { SECURITY_HEADER_LINES } from '../net/security-headers.js';
import { ABUSE_REFUSAL_DELAY_MS, refuseLater } from '../net/tarpit.js';
import { upgraded } from '../net/upgraded.js';
import type { Metrics } from '../ops/metrics.js';
import { closeUnheard } from './open-socket.js';
import { Close, MAX_CLIENT_FRAME_BYTES } from './protocol.js';

export interface AdmissionOptions {
  server: Server;
  /** Where sockets open: an upgrade to any other path is refused 404. */
  path: string;
  logger: Logger;
  /** Where an upgrade comes from, as the HTTP routes see it (trusted proxies looked past). */
  clientAddress: ClientAddressOf;
  /** SOCKETS_PER_IP and MAX_SOCKETS, shared with the event streams (src/sse/). */
  slots: SocketSlots;
  /** Whose sockets spent a budget, and are refused new ones for a while. */
  budgets: SocketBudgets;
  /** How long an abusive client waits for a refused upgrade; ABUSE_REFUSAL_DELAY_MS unless told. */
  refusalDelayMs?: number;
  metrics?: Metrics;
  /** A socket admitted, its slots taken: `client` is its clientKey. */
  accept(ws: WebSocket, connection: Duplex, client: string, compressed: boolean): void;
}

/**
 * Who may open a socket: a WebSocket handshake on the socket's path, from a client whose sockets have
 * not spent a budget lately, within SOCKETS_PER_IP and MAX_SOCKETS. Every refusal is answered in the
 * contract's envelope, or with a close code once the socket is open (MAX_SOCKETS: a socket client
 * understands a close code; an HTTP refusal most of them only see as a failure).
 */
export class Admission {
  private readonly wss: WebSocketServer;
  /** Upgrades whose refusal is being held (`refuseAbuse`): let go at once when the gateway closes. */
  private readonly heldRefusals = new Set<Duplex>();
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

  constructor(private readonly options: AdmissionOptions) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_CLIENT_FRAME_BYTES,
      perMessageDeflate: false,
      clientTracking: false,
      // A ping is answered once charged to the frame budget (commands.ts), not before.
      autoPong: false,
    });
    // A handshake ws refuses (no Sec-WebSocket-Key, another version…) is answered in the envelope too,
    // not with ws's own text/html page.
    this.wss.on('wsClientError', (error: Error, socket: Duplex, request: IncomingMessage) => {
      if (request.method !== 'GET') {
        refuseUpgrade(socket, 404, 'not_found', `no route for ${request.method} ${options.path}`);
      } else {
        refuseUpgrade(socket, 400, 'bad_request', `not a WebSocket handshake: ${error.message}`, {
          'Sec-WebSocket-Version': '13',
        });
      }
    });
    options.server.on('upgrade', this.upgradeListener);
  }

  /** Takes no more upgrades, and lets go of those whose refusal is held. */
  stop(): void {
    this.options.server.off('upgrade', this.upgradeListener);
    for (const socket of this.heldRefusals) socket.destroy();
  }

  close(): void {
    this.wss.close();
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    // The request target as sent, not resolved as a URL: `//` is no URL at all, and `//host/socket` would
    // resolve to /socket.
    const target = request.url ?? '/';
    const queryAt = target.indexOf('?');
    if ((queryAt < 0 ? target : target.slice(0, queryAt)) !== this.options.path) {
      refuseUpgrade(socket, 404, 'not_found', 'no socket at this path');
      return;
    }
    const query = new URLSearchParams(queryAt < 0 ? '' : target.slice(queryAt + 1));
    const { slots, metrics } = this.options;
    const client = clientKey(this.options.clientAddress(request));
    const refusedFor = this.options.budgets.refusedFor(client);
    if (refusedFor > 0) {
      metrics?.rateLimited('socket_commands');
      const seconds = Math.ceil(refusedFor / 1000);
      this.refuseAbuse(
        socket,
        `a socket from this address sent more commands than allowed; try again in ${seconds} s`,
        {
          'Retry-After': String(seconds),
        },
      );
      return;
    }
    if (slots.clientFull(client)) {
      metrics?.rateLimited('sockets_per_ip');
      this.refuseAbuse(socket, `at most ${slots.perClient} sockets and event streams per IP`);
      return;
    }

    // The slots are taken now, so concurrent upgrades cannot pass the caps; an upgrade ws refuses gives them
    // back. One refused for MAX_SOCKETS holds only its client's, until its connection ends.
    const full = slots.full;
    if (full) slots.takeClient(client);
    else slots.take(client);
    let accepted = false;
    socket.once('close', () => {
      if (accepted) return;
      if (full) slots.releaseClient(client);
      else slots.release(client);
    });
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      // From the start, refused sockets too: ws reports a client's protocol error as an error event, which
      // with nobody listening would be thrown out of its reader and end the process.
      ws.on('error', (error) => this.options.logger.debug({ err: error }, 'socket error'));
      if (full) {
        metrics?.rateLimited('max_sockets');
        closeUnheard(ws, socket, Close.TryAgainLater);
        return;
      }
      accepted = true;
      upgraded(socket);
      this.options.accept(ws, socket, client, query.get('compression') === 'zlib_json');
    });
  }

  /** A 429 to a client that keeps asking past its limit, after ABUSE_REFUSAL_DELAY_MS (net/tarpit.ts). */
  private refuseAbuse(socket: Duplex, message: string, headers: Record<string, string> = {}): void {
    this.heldRefusals.add(socket);
    socket.once('close', () => this.heldRefusals.delete(socket));
    refuseLater(this.options.refusalDelayMs ?? ABUSE_REFUSAL_DELAY_MS, () => {
      this.heldRefusals.delete(socket);
      if (!socket.destroyed) refuseUpgrade(socket, 429, 'rate_limited', message, headers);
    });
  }
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
