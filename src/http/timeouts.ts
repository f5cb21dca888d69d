import type { ServerOptions } from 'node:http';
import { VARIABLES } from '../config-variables.js';

/**
 * What the HTTP server allows a client before it cuts the connection. A client that sends its headers a
 * byte at a time (slowloris), or a body that never ends, would otherwise hold a socket and its buffers
 * for as long as it likes. The server is node:http's (presence reads are answered outside Fastify), so
 * these are node:http's own settings; Fastify's timeout options only apply to a server it creates.
 */
export interface HttpTimeouts {
  /** The request line and headers must have arrived this long after the request began. */
  headersMs: number;
  /** The whole request, body included (not the answer: a card may wait on an image). */
  requestMs: number;
  /** An idle keep-alive connection is closed after this long; longer than a load balancer's. */
  keepAliveMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: Readonly<HttpTimeouts> = {
  headersMs: VARIABLES.HTTP_HEADERS_TIMEOUT_MS.default,
  requestMs: VARIABLES.HTTP_REQUEST_TIMEOUT_MS.default,
  keepAliveMs: VARIABLES.HTTP_KEEP_ALIVE_TIMEOUT_MS.default,
};

/**
 * A connection on which nothing moves this long while a request is under way (an answer its client does not
 * read, say) is cut: what it holds (a large presence's bytes among them) is let go.
 */
export const STALLED_CONNECTION_MS = 60_000;

/** Request line plus headers, in bytes (node:http's default, named here); over it: 431. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** How often node:http looks for requests past their time; by default it looks every 30 s. */
const MAX_CHECK_INTERVAL_MS = 1_000;

/** Options for node:http's createServer. Node refuses a headers timeout longer than the request timeout. */
export function serverOptions(timeouts: HttpTimeouts): ServerOptions {
  return {
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.ceil(timeouts.headersMs / 4)),
    maxHeaderSize: MAX_HEADER_BYTES,
  };
}
