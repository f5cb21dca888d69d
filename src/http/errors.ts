import { type OutgoingHttpHeaders, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { SECURITY_HEADER_LINES, SECURITY_HEADERS } from '../net/security-headers.js';
import { StoreUnavailableError } from '../store/unavailable.js';

/** Every error code of the API contract, with its HTTP status. */
export const ERROR_STATUS = {
  user_not_monitored: 404,
  invalid_user_id: 400,
  not_found: 404,
  invalid_api_key: 401,
  no_permission: 403,
  invalid_kv_key: 400,
  invalid_kv_value: 400,
  kv_limit_exceeded: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_query: 400,
  rate_limited: 429,
  /** A new connection from a client that has as many open as `CONNECTIONS_PER_IP` allows. */
  too_many_connections: 503,
  /**
   * A new event stream while the process holds `MAX_SOCKETS` sockets and streams; a request that needs the
   * store while it cannot be reached.
   */
  try_again_later: 503,
  /** `/metrics` with METRICS_TOKEN set, without that token. */
  invalid_metrics_token: 401,
  /** `POST /interactions` not signed by the application's key, or signed too long ago, or seen before (a replay). */
  invalid_signature: 401,
  /** `/v1/ready` while the node cannot serve what it is for; the message names the failed checks. */
  not_ready: 503,
  /** A webhook's body that is not `{url, events}` with known events. */
  invalid_webhook: 400,
  /** A webhook URL that is not https (or http where allowed), or whose host is not a public address. */
  invalid_webhook_url: 400,
  /** A webhook past WEBHOOKS_PER_USER. */
  webhook_limit_exceeded: 409,
  /** No webhook has this id. */
  webhook_not_found: 404,
  /** A privacy settings change naming a field that is no setting, or a value the setting does not take. */
  invalid_privacy_setting: 400,
  /** A read token's body that is neither empty nor `{label}` with a label of plain text. */
  invalid_read_token: 400,
  /** A read token past READ_TOKENS_PER_USER. */
  read_token_limit_exceeded: 409,
  /** None of the user's read tokens has this id. */
  read_token_not_found: 404,
  /** Malformed HTTP that fits no row of the contract (a bad Content-Length, say). */
  bad_request: 400,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * An error the client is told about, in the contract's envelope. It is an answer, not a fault: it takes
 * no stack trace, which would cost more than the refusal it carries (a flood is refused by the thousand).
 */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    const { stackTraceLimit } = Error;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send({ success: false, error: { code: error.code, message: error.message } });
}

/**
 * A schema-validated field that failed names the code to answer with: path and query fields each have
 * one meaning in the contract.
 */
const VALIDATION_CODES: Record<string, ErrorCode> = {
  id: 'invalid_user_id',
  key: 'invalid_kv_key',
  limit: 'invalid_query',
};

/** Fastify's own 4xx errors, in the contract's terms. */
function fromFastifyError(error: FastifyError): ApiError | undefined {
  if (error.validation) {
    const first = error.validation[0];
    const field = first?.instancePath.replace(/^\//, '') ?? '';
    const code = VALIDATION_CODES[field] ?? 'invalid_query';
    return new ApiError(
      code,
      `${field || error.validationContext || 'request'} ${first?.message ?? 'is invalid'}`,
    );
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'the request body is larger than this route allows');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'this route does not accept that content type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_kv_value', 'the body is not valid JSON');
    default:
      return undefined;
  }
}

const MAX_ECHOED_PATH = 200;

/** Errors and unknown routes answer in the contract's JSON envelope, never as HTML or plain text. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return sendError(reply, error);
    if (error instanceof StoreUnavailableError) {
      return sendError(
        reply,
        new ApiError('try_again_later', 'the store cannot be reached; try again shortly'),
      );
    }
    const known = fromFastifyError(error);
    if (known) return sendError(reply, known);
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Fastify's own errors describe the request; any other error's message is whatever the code
      // underneath put there (a stream's, a driver's), which the client has no business reading.
      const message = error.code?.startsWith('FST_') ? error.message : 'the request could not be read';
      return sendError(reply, new ApiError('bad_request', message));
    }
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, new ApiError('internal_error', 'something went wrong on our side'));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = (request.url.split('?')[0] ?? '').slice(0, MAX_ECHOED_PATH);
    return sendError(reply, new ApiError('not_found', `no route for ${request.method} ${path}`));
  });
}

/** node:http's own bookkeeping on a server socket; read only, to tell whether a request has had its answer. */
type InternalSocket = Socket & {
  _httpMessage?: { headersSent: boolean } | null;
  parser?: { incoming?: { _dumped?: boolean } | null } | null;
};

/**
 * Whether the request in progress has been answered already: its answer is on its way, or was sent before
 * its body ended (a read carrying an endless body, whose body node:http then reads and drops until the
 * request timeout). Another status line then would read as the answer to a request never sent.
 */
function answered(socket: InternalSocket): boolean {
  return socket._httpMessage?.headersSent === true || socket.parser?.incoming?._dumped === true;
}

/**
 * Requests Node's HTTP parser refuses (a request line or header that is not HTTP, a bad Content-Length,
 * headers over the size limit, a request too slow to arrive) reach neither a route nor the error handler.
 * Fastify's own answer to them is JSON but not the envelope; this one is.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'the request headers are larger than allowed']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'the request did not arrive in time']
        : [400, 'the request is not valid HTTP'];
  if (socket.writable && !answered(socket as InternalSocket)) {
    socket.write(rawErrorAnswer(status, 'bad_request', message));
  }
  // Without the error: destroyed with it, the socket would have its stack formatted, for nobody to read.
  socket.destroy();
}

/**
 * A whole HTTP answer in the envelope, for a connection no framework answers (node:http refused the
 * request, or it is refused before one is read); the connection closes after it.
 */
export function rawErrorAnswer(status: number, code: ErrorCode, message: string): string {
  const body = JSON.stringify({ success: false, error: { code, message } });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Access-Control-Allow-Origin: *\r\n' +
    SECURITY_HEADER_LINES +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * Answers a request no route sees (refused on its way in) in the envelope, with `headers` besides; its
 * connection closes after.
 */
export function answerOutsideRoutes(
  response: ServerResponse,
  status: number,
  code: ErrorCode,
  message: string,
  headers: OutgoingHttpHeaders = {},
): void {
  const body = JSON.stringify({ success: false, error: { code, message } });
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'access-control-allow-origin': '*',
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...headers,
    connection: 'close',
  });
  response.end(body);
}
