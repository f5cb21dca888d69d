import { READ_TOKEN_LABEL_MAX_CHARS, READ_TOKENS_PER_USER } from '../../keys/read-token.js';
import { KV_KEY_MAX_LENGTH, KV_MAX_KEYS, KV_VALUE_MAX_CHARS } from '../../kv/rules.js';
import { ERROR_STATUS, type ErrorCode } from '../errors.js';

/**
 * The contract's envelope (docs/api.md, "Errors") as response schemas. Routes declare the data
 * they answer with and the error codes they can answer; the OpenAPI document is built from these, and the
 * service never serializes with them (see openapi.ts).
 */

/** When each code is answered: the contract's table, in the words a client needs. */
export const ERROR_CONDITIONS: Record<ErrorCode, string> = {
  user_not_monitored:
    'the user shares no server with the bot (for `@me`: the key’s owner), or the bot has not seen them yet',
  invalid_user_id: '`id` is not a Discord user id (a snowflake: 1–20 ASCII digits, below 2^64)',
  not_found: 'no route for this method and path',
  invalid_api_key: 'no API key in `Authorization`, or one that is not live (replaced by a newer one)',
  no_permission: 'the key is valid, but `id` is another user',
  invalid_kv_key: `the key name is empty, over ${KV_KEY_MAX_LENGTH} characters, or not \`[A-Za-z0-9_]\``,
  invalid_kv_value: `a value over ${KV_VALUE_MAX_CHARS.toLocaleString('en')} characters (code points), a PATCH value that is not a string, or a PATCH body that is empty, not JSON or not an object`,
  kv_limit_exceeded: `the write would leave more than ${KV_MAX_KEYS} keys`,
  payload_too_large: 'the body is larger than the route allows',
  unsupported_media_type: 'a PATCH body whose content type is neither JSON nor text',
  invalid_query: 'a query option outside its rule',
  rate_limited: 'over the rate limit; `Retry-After` says in how many seconds to try again',
  too_many_connections:
    'the client already has as many HTTP connections open as the server allows; the connection is closed unread',
  try_again_later:
    'the server holds as many sockets and event streams as it may (`MAX_SOCKETS`), or a KV write finds the database out of reach; try again later, or another node',
  invalid_webhook:
    'the body is not a JSON object `{url, events}`, or `events` is empty or names something other than `presence`, `now_playing`, `kv`',
  invalid_webhook_url:
    'the URL is not `https://` (nor `http://` where the server allows private targets), carries credentials or is over 2048 characters, or its host does not resolve, or is or resolves to an address webhooks may not reach (private, loopback, link-local, reserved…)',
  webhook_limit_exceeded: 'the user already has as many webhooks as the server allows (`WEBHOOKS_PER_USER`)',
  webhook_not_found: 'no webhook has this id',
  invalid_privacy_setting:
    'a privacy change that is not a JSON object, names a field that is no setting, or gives a setting a value it does not take; the message names the field',
  invalid_read_token: `a read token's body that is neither empty nor a JSON object with at most \`label\`, or a label that is not plain text of 1–${READ_TOKEN_LABEL_MAX_CHARS} characters`,
  read_token_limit_exceeded: `the user already has ${READ_TOKENS_PER_USER} read tokens, as many as one may hold`,
  read_token_not_found: 'none of your read tokens has this id',
  bad_request: 'malformed HTTP that fits no other code (a broken URL encoding, say)',
  internal_error: 'something unexpected went wrong on the server (never with details)',
  invalid_metrics_token:
    '`METRICS_TOKEN` is set and the request does not carry it as `Authorization: Bearer …`',
  invalid_signature:
    '`POST /interactions` without a valid `X-Signature-Ed25519` of the application’s key over `X-Signature-Timestamp` and the body, with a timestamp more than 5 minutes from now, or an interaction already received (a replay)',
  not_ready:
    'the node is not ready (gateway session, member lists, store or replica); the message names the checks that failed',
};

/**
 * Where @fastify/swagger takes a response's description from: the response's, not its body schema's too
 * (where `description` would also land).
 */
export const RESPONSE_DESCRIPTION = 'x-response-description';

/**
 * Any request can be malformed, limited, come on a connection over the client's cap, or meet a failure
 * inside: every route may answer these.
 */
const EVERY_ROUTE: ErrorCode[] = ['bad_request', 'rate_limited', 'too_many_connections', 'internal_error'];

const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { type: 'integer', description: 'requests allowed in the window' },
  'RateLimit-Remaining': { type: 'integer', description: 'requests left in the window' },
  'RateLimit-Reset': { type: 'integer', description: 'seconds until the window resets' },
} as const;

/** The error envelope, its `code` limited to `codes`. */
export function errorEnvelope(codes: readonly ErrorCode[]) {
  return {
    type: 'object',
    properties: {
      success: { const: false },
      error: {
        type: 'object',
        properties: {
          code: { type: 'string', enum: [...codes] },
          message: { type: 'string', description: 'for people: what was wrong with the request' },
        },
        required: ['code', 'message'],
        additionalProperties: false,
      },
    },
    required: ['success', 'error'],
    additionalProperties: false,
  } as const;
}

/**
 * Response schemas, by status, for the error codes a route answers (besides those every route may):
 * each status lists its codes and when they are answered.
 */
export function errorResponses(codes: readonly ErrorCode[]): Record<number, object> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...codes, ...EVERY_ROUTE]) {
    const status = ERROR_STATUS[code];
    const listed = byStatus.get(status) ?? [];
    if (!listed.includes(code)) listed.push(code);
    byStatus.set(status, listed);
  }
  const responses: Record<number, object> = {};
  for (const [status, listed] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[status] = {
      [RESPONSE_DESCRIPTION]: listed.map((code) => `- \`${code}\`: ${ERROR_CONDITIONS[code]}`).join('\n'),
      ...errorEnvelope(listed),
      ...(status === ERROR_STATUS.rate_limited
        ? {
            headers: {
              'Retry-After': { type: 'integer', description: 'seconds to wait before trying again' },
              ...RATE_LIMIT_HEADERS,
            },
          }
        : {}),
    };
  }
  return responses;
}

/** The success envelope around `data`, as a plain schema (for a response with several content types). */
export function successEnvelope(data: object) {
  return {
    type: 'object',
    properties: { success: { const: true }, data },
    required: ['success', 'data'],
    additionalProperties: false,
  } as const;
}

/** The success envelope around `data`. */
export function successResponse(description: string, data: object, example?: unknown) {
  return {
    [RESPONSE_DESCRIPTION]: description,
    ...successEnvelope(data),
    ...(example === undefined ? {} : { examples: [{ success: true, data: example }] }),
  } as const;
}

/** An answer without a body (204, 304). */
export function emptyResponse(description: string) {
  return { [RESPONSE_DESCRIPTION]: description, type: 'null' } as const;
}

/**
 * A redirect (302) without a body: where to is in `Location`; `headers` are the other headers it
 * carries, each a schema with its description.
 */
export function redirectResponse(
  description: string,
  location: string,
  headers: Record<string, object> = {},
) {
  return {
    [RESPONSE_DESCRIPTION]: description,
    type: 'null',
    headers: { Location: { type: 'string', format: 'uri', description: location }, ...headers },
  } as const;
}
