import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import { MAX_FAILED_EVENTS } from '../../webhooks/retry-policy.js';
import { WEBHOOK_BODY_LIMIT } from '../../webhooks/rules.js';
import { DELIVERY_TIMEOUT_MS } from '../../webhooks/sender.js';
import type { WebhookService } from '../../webhooks/service.js';
import { authenticate } from '../auth.js';
import { ApiError } from '../errors.js';
import { jsonOf, takeJsonBodies } from '../json-body.js';
import { API_KEY_SECURITY, TAGS } from '../openapi.js';
import { chargedWriter, type WriteBudgets } from '../rate-limits.js';
import { emptyResponse, errorResponses, successResponse } from '../schemas/envelope.js';
import { createdWebhookSchema, webhookListSchema, webhookRequestSchema } from '../schemas/webhooks.js';

const WEBHOOKS_PATH = '/v1/users/@me/webhooks';

/** How deliveries are made, said once for the document. */
const DELIVERY = `Each event is POSTed as JSON \`{type, user_id, timestamp, data}\` with \`Presently-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the secret>\` and \`Presently-Delivery\` (the same id on every attempt). An answer other than 2xx within ${DELIVERY_TIMEOUT_MS / 1000} s fails the attempt: 5xx, 408, 429 and no answer are retried with exponential backoff for an hour; other answers (redirects are not followed) fail the event at once. A webhook is disabled, and its owner told by DM, when an event fails for an hour or ${MAX_FAILED_EVENTS} in a row are refused. Each webhook gets its events in order; a backlog of \`presence\` (or \`kv\`) events collapses to the newest. See docs/webhooks.md.`;

export interface WebhookRouteDeps {
  keys: ApiKeyService;
  webhooks: WebhookService;
  /** Null: writes are not limited. */
  budgets?: WriteBudgets | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The owner of a keyed webhook write, settled before the body is read. */
    webhookOwner: Snowflake;
  }
}

/** `GET /v1/users/@me/webhooks`: a read, in the read budget's scope. */
export const webhookReadRoutes =
  (deps: WebhookRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      WEBHOOKS_PATH,
      {
        schema: {
          tags: [TAGS.webhooks],
          summary: 'Your webhooks',
          description:
            "The webhooks of the API key's owner, oldest first, each with its latest deliveries (status, when, attempts, the receiver's answer or the error). Secrets are never shown again.",
          security: API_KEY_SECURITY,
          response: {
            200: successResponse('the webhooks', webhookListSchema),
            ...errorResponses(['invalid_api_key']),
          },
        },
      },
      async (request) => {
        const owner = await authenticate(deps.keys, request);
        return {
          success: true,
          data: { webhooks: await deps.webhooks.list(owner), limit: deps.webhooks.maxPerUser },
        };
      },
    );
  };

/**
 * `POST /v1/users/@me/webhooks` and `DELETE /v1/users/@me/webhooks/:id`, in the write budget's scope. As
 * the KV writes: the key is checked and the write charged when the request arrives, before any body is
 * read; a request refused for its key is charged to its client.
 */
export const webhookWriteRoutes =
  (deps: WebhookRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.decorateRequest('webhookOwner', '');
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      request.webhookOwner = await chargedWriter(deps.budgets, request, reply, () =>
        authenticate(deps.keys, request),
      );
    });

    await app.register(createRoute(deps));

    app.delete(
      `${WEBHOOKS_PATH}/:id`,
      {
        schema: {
          tags: [TAGS.webhooks],
          summary: 'Remove a webhook',
          description: 'Removes one of your webhooks; events waiting for it are dropped.',
          security: API_KEY_SECURITY,
          params: {
            type: 'object',
            properties: { id: { type: 'string', description: 'the webhook id (`wh_…`)' } },
            required: ['id'],
          },
          response: {
            204: emptyResponse('removed'),
            ...errorResponses(['invalid_api_key', 'no_permission', 'webhook_not_found']),
          },
        },
      },
      async (request, reply) => {
        const { id } = request.params as { id: string };
        const outcome = await deps.webhooks.remove(request.webhookOwner, id);
        if (outcome === 'not_found') throw new ApiError('webhook_not_found', 'no webhook has this id');
        if (outcome === 'not_yours') {
          throw new ApiError(
            'no_permission',
            'this webhook belongs to another user: only its owner removes it',
          );
        }
        return reply.code(204).send();
      },
    );
  };

/** POST reads a JSON body, of its own parser. */
const createRoute =
  (deps: WebhookRouteDeps): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    takeJsonBodies(app);
    app.post(
      WEBHOOKS_PATH,
      {
        schema: {
          tags: [TAGS.webhooks],
          summary: 'Add a webhook',
          description: `Registers an \`https://\` URL to be told of the key owner's \`presence\`, \`now_playing\` and \`kv\` events (one or more). The host must resolve to public addresses only, now and at every delivery. The answer carries the secret that signs deliveries, once. At most \`WEBHOOKS_PER_USER\` (5 unless configured) per user. ${DELIVERY}`,
          security: API_KEY_SECURITY,
          requestBody: { content: { 'application/json': { schema: webhookRequestSchema } } },
          response: {
            201: successResponse('added: the secret is shown this once', createdWebhookSchema),
            ...errorResponses([
              'invalid_api_key',
              'invalid_webhook',
              'invalid_webhook_url',
              'webhook_limit_exceeded',
              'payload_too_large',
              'unsupported_media_type',
            ]),
          },
        },
        bodyLimit: WEBHOOK_BODY_LIMIT,
      },
      async (request, reply) => {
        const outcome = await deps.webhooks.create(request.webhookOwner, jsonOf(request.body));
        if (!outcome.ok) throw new ApiError(outcome.rejection.code, outcome.rejection.message);
        return reply.code(201).send({ success: true, data: outcome.webhook });
      },
    );
  };
