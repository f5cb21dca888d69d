import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import type { PresenceView } from '../../presence/registry.js';
import { isSnowflake, SNOWFLAKE_PATTERN } from '../../presence/snowflake.js';
import { authenticate } from '../auth.js';
import { ApiError } from '../errors.js';

export const userIdParams = {
  type: 'object',
  properties: { id: { type: 'string', pattern: SNOWFLAKE_PATTERN } },
  required: ['id'],
} as const;

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
      if (!snapshot) {
        throw new ApiError(
          'user_not_monitored',
          `user ${id} is not monitored: they must share a server with the bot (or it has not seen them yet)`,
        );
      }
      return reply.type('application/json; charset=utf-8').send(snapshot.body);
    };

    app.get('/v1/users/@me', async (request, reply) =>
      sendPresence(reply, await authenticate(deps.keys, request)),
    );
    app.get('/v1/users/:id', { schema: { params: userIdParams } }, async (request, reply) =>
      sendPresence(reply, userIdFrom(request.params)),
    );
  };
