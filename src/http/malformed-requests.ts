import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { answerOutsideRoutes } from './errors.js';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Options that leave to `refuseMalformed` the requests node:http would otherwise answer itself, with an
 * empty 400 outside the envelope: an HTTP/1.1 request without `Host`.
 */
export const MALFORMED_REQUEST_OPTIONS = { requireHostHeader: false } as const;

/**
 * `handler`, for requests that are well-formed HTTP. An HTTP/1.1 request must name its `Host` (RFC 9112):
 * one that does not is answered `400 bad_request` in the envelope, and its connection closes.
 */
export function refuseMalformed(handler: Handler): Handler {
  return (request, response) => {
    if (request.headers.host === undefined && request.httpVersion === '1.1') {
      answerOutsideRoutes(response, 400, 'bad_request', 'an HTTP/1.1 request must have a Host header');
      return;
    }
    handler(request, response);
  };
}

/**
 * An `Expect` other than `100-continue`, which node:http would answer with an empty 417: the same 417,
 * in the envelope.
 */
export function refuseExpectations(server: Server): void {
  server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    answerOutsideRoutes(response, 417, 'bad_request', 'the only expectation served is 100-continue');
  });
}
