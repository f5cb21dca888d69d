/** The contract's error codes; a proxy in front of the service may answer with something else. */
export type PresentlyErrorCode =
  | 'user_not_monitored'
  | 'invalid_user_id'
  | 'not_found'
  | 'invalid_api_key'
  | 'no_permission'
  | 'invalid_kv_key'
  | 'invalid_kv_value'
  | 'kv_limit_exceeded'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'invalid_query'
  | 'rate_limited'
  | 'try_again_later'
  | 'invalid_webhook'
  | 'invalid_webhook_url'
  | 'webhook_limit_exceeded'
  | 'webhook_not_found'
  | 'bad_request'
  | 'internal_error'
  /** The answer was not the API's JSON envelope (a proxy's error page, say). */
  | 'unexpected_response';

/** An error answer of the API: its `code`, the HTTP status and the message the service gave. */
export class PresentlyError extends Error {
  constructor(
    readonly code: PresentlyErrorCode,
    readonly status: number,
    message: string,
    /** `Retry-After` of a 429, in seconds. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = 'PresentlyError';
  }
}

/**
 * The error of an answer that is not the success asked for: the envelope's, or `unexpected_response` when
 * the body is not the API's envelope (a proxy's page, say). `what` names the request.
 */
export function answerError(
  status: number,
  body: unknown,
  retryAfter: string | null,
  what: string,
): PresentlyError {
  const envelope = body as { success?: unknown; error?: { code?: unknown; message?: unknown } } | null;
  if (envelope?.success === false && typeof envelope.error?.code === 'string') {
    return new PresentlyError(
      envelope.error.code as PresentlyErrorCode,
      status,
      String(envelope.error.message),
      retryAfter === null ? null : Number(retryAfter),
    );
  }
  return new PresentlyError(
    'unexpected_response',
    status,
    `${what} answered HTTP ${status} without the API's JSON envelope`,
  );
}
