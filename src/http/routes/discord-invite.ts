import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../errors.js';

/**
 * `GET /discord`: Lanyard's link to its community server, here to whatever `DISCORD_INVITE_URL` names.
 * Unset, the route answers 404: a self-hosted instance has no community of its own to send people to,
 * and sending them to someone else's would be wrong.
 */
export const discordInviteRoutes =
  (inviteUrl: string | null): FastifyPluginAsync =>
  async (app) => {
    app.get('/discord', async (_request, reply) => {
      if (inviteUrl === null) {
        throw new ApiError('not_found', 'this instance has no Discord invite (DISCORD_INVITE_URL is unset)');
      }
      return reply.redirect(inviteUrl, 302);
    });
  };
