import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import { isPrivacyRefusal, parsePrivacyPatch } from '../../presence/privacy.js';
import type { PrivacyService } from '../../privacy/service.js';
import { authenticate } from '../auth.js';
import { ApiError } from '../errors.js';
import { jsonOf, takeJsonBodies } from '../json-body.js';
import { API_KEY_SECURITY, TAGS } from '../openapi.js';
import { chargedWriter, type WriteBudgets } from '../rate-limits.js';
import { errorResponses, successResponse } from '../schemas/envelope.js';
import { privacyPatchSchema, privacySettingsSchema } from '../schemas/privacy.js';

const PRIVACY_PATH = '/v1/users/@me/privacy';

/** A change names a dozen settings at most, with up to 50 application ids. */
export const PRIVACY_BODY_LIMIT = 8 * 1024;

export interface PrivacyRouteDeps {
  keys: ApiKeyService;
  privacy: PrivacyService;
  /** Null: writes are not limited. */
  budgets?: WriteBudgets | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The owner of a keyed privacy change, settled before the body is read. */
    privacyOwner: Snowflake;
  }
}

/** `GET /v1/users/@me/privacy`: a read, in the read budget's scope. */
export const privacyReadRoutes =
  (deps: PrivacyRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      PRIVACY_PATH,
      {
        schema: {
          tags: [TAGS.privacy],
          summary: 'Your privacy settings',
          description:
            "What the API key's owner lets the world see, every setting present (see docs/privacy.md).",
          security: API_KEY_SECURITY,
          response: {
            200: successResponse('the settings', privacySettingsSchema),
            ...errorResponses(['invalid_api_key', 'try_again_later']),
          },
        },
      },
      async (request) => {
        const owner = await authenticate(deps.keys, request);
        return { success: true, data: await deps.privacy.settings(owner) };
      },
    );
  };

/**
 * `PATCH /v1/users/@me/privacy`, in the write budget's scope: as the KV writes, the key is checked and the
 * write charged when the request arrives, before the body is read.
 */
export const privacyWriteRoutes =
  (deps: PrivacyRouteDeps): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    app.decorateRequest('privacyOwner', '');
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      request.privacyOwner = await chargedWriter(deps.budgets, request, reply, () =>
        authenticate(deps.keys, request),
      );
    });
    takeJsonBodies(app);
    app.patch(
      PRIVACY_PATH,
      {
        schema: {
          tags: [TAGS.privacy],
          summary: 'Change your privacy settings',
          description:
            'A JSON object of some settings; those it names change, the others stay. The change is in every answer, socket, event stream, webhook and card within a second. An unknown field or a value a setting does not take is refused, naming it, and changes nothing.',
          security: API_KEY_SECURITY,
          requestBody: { content: { 'application/json': { schema: privacyPatchSchema } } },
          response: {
            200: successResponse('every setting, as changed', privacySettingsSchema),
            ...errorResponses([
              'invalid_api_key',
              'invalid_privacy_setting',
              'payload_too_large',
              'unsupported_media_type',
              'rate_limited',
              'try_again_later',
            ]),
          },
        },
        bodyLimit: PRIVACY_BODY_LIMIT,
      },
      async (request) => {
        const patch = parsePrivacyPatch(jsonOf(request.body));
        if (isPrivacyRefusal(patch)) {
          const field = patch.field === '' ? '' : `\`${patch.field}\` `;
          throw new ApiError('invalid_privacy_setting', `${field}${patch.message}`.trim());
        }
        return { success: true, data: await deps.privacy.change(request.privacyOwner, patch) };
      },
    );
  };
