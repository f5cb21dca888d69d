import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyService } from '../../keys/service.js';
import {
  DEFAULT_KV_MAX_BYTES,
  KV_KEY_PATTERN,
  KV_MAX_KEYS,
  KV_VALUE_MAX_CHARS,
  keyCountRejection,
} from '../../kv/rules.js';
import type { KvService, KvWriteOutcome } from '../../kv/service.js';
import type { Snowflake } from '../../presence/model.js';
import { SNOWFLAKE_PATTERN } from '../../presence/snowflake.js';
import { authorizeUser, ME } from '../auth.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { JSON_CONTENT_TYPE } from '../json-body.js';
import { API_KEY_SECURITY, TAGS } from '../openapi.js';
import { chargedWriter, type WriteBudgets } from '../rate-limits.js';
import { emptyResponse, errorResponses } from '../schemas/envelope.js';

/** Body caps: a value is at most 30,000 characters (≤ 120 KB of UTF-8); a PATCH may carry many. */
export const PUT_BODY_LIMIT = 128 * 1024;
export const PATCH_BODY_LIMIT = 1024 * 1024;

const kvUserParams = {
  type: 'object',
  properties: {
    id: {
      type: 'string',
      anyOf: [{ const: ME }, { pattern: SNOWFLAKE_PATTERN }],
      description: "`@me`, or the key owner's own Discord user id",
      examples: [ME],
    },
  },
  required: ['id'],
} as const;

const kvKeyParams = {
  type: 'object',
  properties: {
    ...kvUserParams.properties,
    key: { type: 'string', pattern: KV_KEY_PATTERN, description: 'the key name', examples: ['location'] },
  },
  required: ['id', 'key'],
} as const;

const kvValue = { type: 'string', maxLength: KV_VALUE_MAX_CHARS } as const;

/** What one user may keep, said by every write that can add to it. */
const KEEPS = `A user keeps at most ${KV_MAX_KEYS} keys, and at most KV_MAX_BYTES (${DEFAULT_KV_MAX_BYTES / 1024 / 1024} MiB unless configured) of keys and values together, counted in UTF-8 bytes; a user already past it may only shrink their KV.`;

/** What every KV write may be refused for, before and after its body is read. */
const KV_WRITE_ERRORS: ErrorCode[] = [
  'invalid_user_id',
  'invalid_api_key',
  'no_permission',
  'invalid_kv_key',
  'try_again_later',
];

/** The documentation every KV write shares. */
const kvWriteSchema = (codes: ErrorCode[]) =>
  ({
    tags: [TAGS.kv],
    security: API_KEY_SECURITY,
    response: {
      204: emptyResponse(
        'written: the presence shows it (sockets get a PRESENCE_UPDATE if anything changed)',
      ),
      ...errorResponses([...KV_WRITE_ERRORS, ...codes]),
    },
  }) as const;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeUtf8(body: Buffer): string {
  try {
    return utf8.decode(body);
  } catch {
    throw new ApiError('invalid_kv_value', 'the body is not valid UTF-8');
  }
}

function answer(outcome: KvWriteOutcome): void {
  if (!outcome.ok) throw new ApiError(outcome.rejection.code, outcome.rejection.message);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The user a keyed KV request acts on, settled before the body is read. */
    kvUser: Snowflake;
  }
}

export interface KvRouteDeps {
  keys: ApiKeyService;
  kv: KvService;
  /** Null: writes are not limited. */
  budgets: WriteBudgets | null;
}

/**
 * `PUT /v1/users/:id/kv/:key`, `PATCH /v1/users/:id/kv`, `DELETE /v1/users/:id/kv/:key`. The key is
 * checked and the write charged to a budget when the request arrives, before its body is read: nobody
 * without a key makes us parse a body, nor past their budget.
 */
export const kvRoutes =
  (deps: KvRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.decorateRequest('kvUser', '');
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      request.kvUser = await chargedWriter(deps.budgets, request, reply, () =>
        authorizeUser(deps.keys, request, (request.params as { id: string }).id),
      );
    });

    await app.register(putRoute(deps));
    await app.register(patchRoute(deps));

    app.delete(
      '/v1/users/:id/kv/:key',
      {
        schema: {
          ...kvWriteSchema([]),
          summary: 'Delete a key',
          description: '204 also when the key did not exist.',
          params: kvKeyParams,
        },
      },
      async (request, reply) => {
        answer(await deps.kv.delete(request.kvUser, (request.params as { key: string }).key));
        return reply.code(204).send();
      },
    );
  };

/** PUT takes the body as the value, whatever its content type. */
const putRoute =
  (deps: KvRouteDeps): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    app.put(
      '/v1/users/:id/kv/:key',
      {
        schema: {
          ...kvWriteSchema(['invalid_kv_value', 'kv_limit_exceeded', 'payload_too_large']),
          summary: 'Set a key',
          description: `The body, as UTF-8 text whatever its content type, is the value: at most ${KV_VALUE_MAX_CHARS.toLocaleString('en')} characters, and a body of at most ${PUT_BODY_LIMIT / 1024} KiB. ${KEEPS}`,
          params: kvKeyParams,
          requestBody: { content: { 'text/plain': { schema: { ...kvValue, description: 'the value' } } } },
        },
        bodyLimit: PUT_BODY_LIMIT,
      },
      async (request, reply) => {
        const body = request.body instanceof Buffer ? request.body : Buffer.alloc(0);
        const { key } = request.params as { key: string };
        answer(await deps.kv.set(request.kvUser, key, decodeUtf8(body)));
        return reply.code(204).send();
      },
    );
  };

/** PATCH takes a JSON object of string values, sent as JSON or as text. */
const patchRoute =
  (deps: KvRouteDeps): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    // Parameters such as `; charset=utf-8` (what browsers and fetch add) are allowed after the type.
    for (const type of [JSON_CONTENT_TYPE, /^text\/[\w.+-]+(?:\s*;.*)?$/i]) {
      app.addContentTypeParser(type, { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    }
    app.patch(
      '/v1/users/:id/kv',
      {
        schema: {
          ...kvWriteSchema([
            'invalid_kv_value',
            'kv_limit_exceeded',
            'payload_too_large',
            'unsupported_media_type',
          ]),
          summary: 'Set several keys',
          description: `A JSON object of string values, merged into the store: all of it is written or, if any key or value is refused, none. Sent as JSON or as text (\`text/*\`), in a body of at most ${PATCH_BODY_LIMIT / 1024 / 1024} MiB. ${KEEPS}`,
          params: kvUserParams,
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  propertyNames: { pattern: KV_KEY_PATTERN },
                  additionalProperties: kvValue,
                  examples: [{ location: 'Lisbon', mood: 'shipping' }],
                },
              },
            },
          },
        },
        bodyLimit: PATCH_BODY_LIMIT,
      },
      async (request, reply) => {
        const set = patchEntries(request.body);
        answer(await deps.kv.write(request.kvUser, { set, delete: [] }));
        return reply.code(204).send();
      },
    );
  };

/**
 * The body as entries to set, checked only as far as is cheap: a body naming more keys than a user may
 * keep is refused before any key or value is looked at. The service checks the rest.
 */
function patchEntries(body: unknown): Map<string, unknown> {
  const text = body instanceof Buffer ? decodeUtf8(body) : '';
  if (text.trim() === '') throw new ApiError('invalid_kv_value', 'the body must be a JSON object of strings');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError('invalid_kv_value', 'the body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ApiError('invalid_kv_value', 'the body must be a JSON object of strings');
  }
  const tooMany = keyCountRejection(Object.keys(parsed).length);
  if (tooMany) throw new ApiError(tooMany.code, tooMany.message);
  // Object.entries keeps a "__proto__" key as data; the Map never touches a prototype.
  return new Map(Object.entries(parsed));
}
