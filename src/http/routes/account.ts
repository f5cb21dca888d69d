import { Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountExport } from '../../account/export.js';
import type { AccountService } from '../../account/service.js';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import { authenticate } from '../auth.js';
import { API_KEY_SECURITY, TAGS } from '../openapi.js';
import { chargedWriter, type WriteBudgets } from '../rate-limits.js';
import { accountExportSchema } from '../schemas/account.js';
import { emptyResponse, errorResponses, successResponse } from '../schemas/envelope.js';

/** What the account routes do: the erasure, and the export. */
export interface AccountRoutes {
  service: Pick<AccountService, 'erase'>;
  export: Pick<AccountExport, 'pieces'>;
}

export interface AccountRouteDeps extends AccountRoutes {
  keys: ApiKeyService;
  /** Null: writes are not limited. */
  budgets?: WriteBudgets | null;
}

/** `GET /v1/users/@me/export`: a read, in the read budget's scope. */
export const accountReadRoutes =
  (deps: AccountRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/v1/users/@me/export',
      {
        schema: {
          tags: [TAGS.privacy],
          summary: 'Everything kept about you',
          description:
            "Everything Presently keeps about the API key's owner, as one JSON document to download: the presence as they read it, KV, privacy settings, profile, webhooks (never their secrets) with their recent deliveries, the whole status and track history, every play count, stats, and when the key was made (never the key or its hash). It is written as it is read, in pieces; its size is bounded by what is kept (see docs/privacy.md).",
          security: API_KEY_SECURITY,
          response: {
            200: {
              ...successResponse('the document, sent as an attachment', accountExportSchema),
              headers: {
                'Content-Disposition': {
                  type: 'string',
                  description: '`attachment; filename="presently-<id>.json"`',
                },
              },
            },
            ...errorResponses(['invalid_api_key', 'try_again_later']),
          },
        },
      },
      async (request, reply) => {
        const owner = await authenticate(deps.keys, request);
        const pieces = await deps.export.pieces(owner);
        return reply
          .header('content-disposition', `attachment; filename="presently-${owner}.json"`)
          .header('cache-control', 'no-store')
          .type('application/json; charset=utf-8')
          .send(Readable.from(pieces));
      },
    );
  };

declare module 'fastify' {
  interface FastifyRequest {
    /** The owner of a keyed erasure, settled when the request arrives. */
    accountOwner: Snowflake;
  }
}

/**
 * `DELETE /v1/users/@me`, in the write budget's scope: as the other keyed writes, the key is checked and
 * the write charged when the request arrives, to the key's owner, or to the client when the key is refused.
 */
export const accountWriteRoutes =
  (deps: AccountRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.decorateRequest('accountOwner', '');
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      request.accountOwner = await chargedWriter(deps.budgets, request, reply, () =>
        authenticate(deps.keys, request),
      );
    });
    app.delete(
      '/v1/users/@me',
      {
        schema: {
          tags: [TAGS.privacy],
          summary: 'Erase everything kept about you',
          description:
            "Erases everything Presently keeps about the API key's owner, on every node at once: KV, the key itself, webhooks with their deliveries and waiting events, privacy settings, profile, history, play counts and stats. Nothing of it comes back after a restart. While the user shares a server with the bot their presence is still shown (it is live, not kept), as a user's with no KV and default settings. The key stops working with the answer.",
          security: API_KEY_SECURITY,
          response: {
            204: emptyResponse('erased'),
            ...errorResponses(['invalid_api_key', 'try_again_later']),
          },
        },
      },
      async (request, reply) => {
        await deps.service.erase(request.accountOwner);
        return reply.code(204).send();
      },
    );
  };
