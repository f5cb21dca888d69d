import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { checkedLabel } from '../../keys/read-token.js';
import type { ReadTokenService } from '../../keys/read-tokens.js';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import type { ReadTokenListing } from '../../store/ports.js';
import { authenticate } from '../auth.js';
import { ApiError } from '../errors.js';
import { jsonOf, takeJsonBodies } from '../json-body.js';
import { API_KEY_SECURITY, TAGS } from '../openapi.js';
import { chargedWriter, type WriteBudgets } from '../rate-limits.js';
import { emptyResponse, errorResponses, successResponse } from '../schemas/envelope.js';
import {
  createdReadTokenSchema,
  readTokenListSchema,
  readTokenRequestSchema,
} from '../schemas/read-tokens.js';

const READ_TOKENS_PATH = '/v1/users/@me/read-tokens';

/** A label of 64 characters, each up to 4 bytes of UTF-8 or a 12-byte JSON escape, and the braces. */
export const READ_TOKEN_BODY_LIMIT = 1024;

const WHAT_FOR =
  'A read token reads you while your `visibility` is `private`, as your key does, and does nothing else: `GET /v1/users/{id}`, the card, the event stream, history, stats and top tracks, given as `Authorization: Bearer prt_…` or as `?token=prt_…` (for an `<img>` or an `EventSource`, which send no headers). Anyone who has it reads you: hand it only where you mean to. See docs/privacy.md.';

export interface ReadTokenRouteDeps {
  keys: ApiKeyService;
  tokens: ReadTokenService;
  /** Null: writes are not limited. */
  budgets?: WriteBudgets | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The owner of a keyed read token write, settled before the body is read. */
    readTokenOwner: Snowflake;
  }
}

const listed = ({ id, label, createdAt }: ReadTokenListing) => ({ id, label, created_at: createdAt });

/** `GET /v1/users/@me/read-tokens`: a read, in the read budget's scope. */
export const readTokenReadRoutes =
  (deps: ReadTokenRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      READ_TOKENS_PATH,
      {
        schema: {
          tags: [TAGS.privacy],
          summary: 'Your read tokens',
          description: `The read tokens of the API key's owner, oldest first: their ids, labels and when each was made. The tokens themselves are never shown again. ${WHAT_FOR}`,
          security: API_KEY_SECURITY,
          response: {
            200: successResponse('the read tokens', readTokenListSchema),
            ...errorResponses(['invalid_api_key', 'try_again_later']),
          },
        },
      },
      async (request) => {
        const owner = await authenticate(deps.keys, request);
        const tokens = await deps.tokens.list(owner);
        return { success: true, data: { read_tokens: tokens.map(listed), limit: deps.tokens.maxPerUser } };
      },
    );
  };

/**
 * `POST /v1/users/@me/read-tokens` and `DELETE /v1/users/@me/read-tokens/:id`, in the write budget's scope:
 * as the KV writes, the key is checked and the write charged when the request arrives, before any body is
 * read. A read token manages no tokens: only the key does.
 */
export const readTokenWriteRoutes =
  (deps: ReadTokenRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.decorateRequest('readTokenOwner', '');
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      request.readTokenOwner = await chargedWriter(deps.budgets, request, reply, () =>
        authenticate(deps.keys, request),
      );
    });

    await app.register(createRoute(deps));

    app.delete(
      `${READ_TOKENS_PATH}/:id`,
      {
        schema: {
          tags: [TAGS.privacy],
          summary: 'Remove a read token',
          description:
            'Removes one of your read tokens: from the answer on, on every node, it reads you no more, and the event streams opened with it end.',
          security: API_KEY_SECURITY,
          params: {
            type: 'object',
            properties: { id: { type: 'string', description: 'the token id (`rt_…`)' } },
            required: ['id'],
          },
          response: {
            204: emptyResponse('removed'),
            ...errorResponses(['invalid_api_key', 'read_token_not_found', 'try_again_later']),
          },
        },
      },
      async (request, reply) => {
        const { id } = request.params as { id: string };
        if (!(await deps.tokens.revoke(request.readTokenOwner, id))) {
          throw new ApiError('read_token_not_found', 'none of your read tokens has this id');
        }
        return reply.code(204).send();
      },
    );
  };

/** POST reads a JSON body (or none), of its own parser. */
const createRoute =
  (deps: ReadTokenRouteDeps): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    takeJsonBodies(app);
    app.post(
      READ_TOKENS_PATH,
      {
        schema: {
          tags: [TAGS.privacy],
          summary: 'Make a read token',
          description: `A new read token, with an optional label saying what it is for. The answer carries the token, this once: Presently keeps only its SHA-256. At most ${deps.tokens.maxPerUser} per user. ${WHAT_FOR}`,
          security: API_KEY_SECURITY,
          requestBody: { content: { 'application/json': { schema: readTokenRequestSchema } } },
          response: {
            201: successResponse('made: the token is shown this once', createdReadTokenSchema),
            ...errorResponses([
              'invalid_api_key',
              'invalid_read_token',
              'read_token_limit_exceeded',
              'payload_too_large',
              'unsupported_media_type',
              'try_again_later',
            ]),
          },
        },
        bodyLimit: READ_TOKEN_BODY_LIMIT,
      },
      async (request, reply) => {
        const label = labelOf(request.body);
        const made = await deps.tokens.create(request.readTokenOwner, label);
        if (made === null) {
          throw new ApiError(
            'read_token_limit_exceeded',
            `you have ${deps.tokens.maxPerUser} read tokens, as many as one may hold: remove one first`,
          );
        }
        const { id, token, createdAt } = made;
        return reply
          .code(201)
          .header('cache-control', 'no-store')
          .send({ success: true, data: { id, token, label: made.label, created_at: createdAt } });
      },
    );
  };

/** The label a body asks for: none for no body; anything but `{}` or `{label}` is refused. */
function labelOf(body: unknown): string | null {
  if (!(body instanceof Buffer) || body.length === 0) return null;
  const parsed = jsonOf(body);
  if (parsed === undefined) throw new ApiError('invalid_read_token', 'the body is not JSON');
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ApiError('invalid_read_token', 'the body must be a JSON object, `{"label": "…"}`, or nothing');
  }
  const unknown = Object.keys(parsed).find((field) => field !== 'label');
  if (unknown !== undefined) {
    throw new ApiError('invalid_read_token', `\`${unknown.slice(0, 40)}\` is no field of a read token`);
  }
  const checked = checkedLabel((parsed as { label?: unknown }).label);
  if ('refused' in checked) throw new ApiError('invalid_read_token', checked.refused);
  return checked.label;
}
