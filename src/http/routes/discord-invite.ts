import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../errors.js';
import { TAGS } from '../openapi.js';
import { errorResponses, RESPONSE_DESCRIPTION, redirectResponse } from '../schemas/envelope.js';

const errors = errorResponses(['not_found']);

/**
 * `GET /discord`: Lanyard's link to its community server, here to whatever `DISCORD_INVITE_URL` names.
 * Unset, the route answers 404: a self-hosted instance has no community of its own to send people to,
 * and sending them to someone else's would be wrong.
 */
export const discordInviteRoutes =
  (inviteUrl: string | null): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/discord',
      {
        schema: {
          tags: [TAGS.links],
          summary: 'This instance’s Discord community: a redirect to its invite',
          description:
            'Lanyard’s link to its community server; here a 302 to the invite the operator set in `DISCORD_INVITE_URL` (`discord_invite` in `GET /`’s info). Unset, there is none: `404 not_found`.',
          response: {
            302: redirectResponse('the invite', 'the invite, `DISCORD_INVITE_URL`'),
            ...errors,
            404: {
              ...errors[404],
              [RESPONSE_DESCRIPTION]:
                '- `not_found`: this instance has no invite (`DISCORD_INVITE_URL` is unset)',
            },
          },
        },
      },
      async (_request, reply) => {
        if (inviteUrl === null) {
          throw new ApiError(
            'not_found',
            'this instance has no Discord invite (DISCORD_INVITE_URL is unset)',
          );
        }
        return reply.redirect(inviteUrl, 302);
      },
    );
  };
