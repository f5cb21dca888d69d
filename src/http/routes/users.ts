import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import type { PresenceView } from '../../presence/registry.js';
import { isSnowflake, SNOWFLAKE_PATTERN } from '../../presence/snowflake.js';
import { authenticate } from '../auth.js';
import { ApiError } from '../errors.js';
import type { NotMonitored } from '../not-monitored.js';
import { API_KEY_SECURITY, TAGS } from '../openapi.js';
import { errorResponses, successResponse } from '../schemas/envelope.js';
import { presenceExample } from '../schemas/presence-example.js';

export const userIdParams = {
  type: 'object',
  properties: {
    id: {
      type: 'string',
      pattern: SNOWFLAKE_PATTERN,
      description: 'a Discord user id (snowflake)',
      examples: [presenceExample.discord_user.id],
    },
  },
  required: ['id'],
} as const;

const presenceResponse = successResponse('the presence', { $ref: 'presence#' }, presenceExample);

const PRESENCE_FIELDS = `\`discord_user\` is Discord's user object as the gateway gave it (more fields than the schema names may come); \`activities\` are Discord's activity objects, snowflakes as strings; \`kv\` is the user's own key/value store. \`banner\`, \`banner_url\` and \`accent_color\` are null until Presently has fetched the profile.`;

/** The id of the path, checked against the full snowflake rule (the pattern cannot bound the value). */
export function userIdFrom(params: unknown): string {
  const id = (params as { id: string }).id;
  if (!isSnowflake(id)) {
    throw new ApiError('invalid_user_id', `${JSON.stringify(id.slice(0, 40))} is not a Discord user id`);
  }
  return id;
}

export interface UserRouteDeps {
  view: PresenceView;
  keys: ApiKeyService;
  notMonitored: NotMonitored;
}

/**
 * `GET /v1/users/:id` and `GET /v1/users/@me`: the presence, answered with the bytes serialized when it
 * last changed.
 */
export const userRoutes =
  (deps: UserRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const sendPresence = (reply: FastifyReply, id: Snowflake): FastifyReply => {
      const snapshot = deps.view.get(id);
      if (!snapshot) throw deps.notMonitored(id);
      return reply.type('application/json; charset=utf-8').send(snapshot.body);
    };

    app.get(
      '/v1/users/@me',
      {
        schema: {
          tags: [TAGS.presence],
          summary: "The presence of the API key's owner",
          description: `The same presence as \`GET /v1/users/{id}\`, for the user whose key is given. ${PRESENCE_FIELDS}`,
          security: API_KEY_SECURITY,
          response: {
            200: presenceResponse,
            ...errorResponses(['invalid_api_key', 'user_not_monitored']),
          },
        },
      },
      async (request, reply) => sendPresence(reply, await authenticate(deps.keys, request)),
    );
    app.get(
      '/v1/users/:id',
      {
        schema: {
          tags: [TAGS.presence],
          summary: "A user's presence",
          description: `Lanyard's presence object plus Presently's additions (\`now_playing\`, \`youtube_music\`, banner, accent colour, \`member_since\`), for any user who shares a server with the bot. ${PRESENCE_FIELDS}`,
          params: userIdParams,
          response: {
            200: presenceResponse,
            ...errorResponses(['invalid_user_id', 'user_not_monitored']),
          },
        },
      },
      async (request, reply) => sendPresence(reply, userIdFrom(request.params)),
    );
  };
