import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { HISTORY_LIMIT, statsFrom, TOP_TRACKS_MIN_PLAYS, topTracksLimit } from '../../presence/history.js';
import type { PresenceView } from '../../presence/registry.js';
import type { HistoryStore } from '../../store/ports.js';
import { userIdFrom, userIdParams } from './users.js';

export interface HistoryRouteDeps {
  view: PresenceView;
  history: HistoryStore;
  now?: () => number;
}

const send = (reply: FastifyReply, data: unknown): FastifyReply =>
  reply.type('application/json; charset=utf-8').send({ success: true, data });

/**
 * `/v1/users/:id/history`, `/stats` and `/top-tracks`: answered from the store for any valid id, so they
 * work while the user is offline or no longer monitored.
 */
export const historyRoutes =
  (deps: HistoryRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const now = deps.now ?? Date.now;

    app.get('/v1/users/:id/history', { schema: { params: userIdParams } }, async (request, reply) => {
      const { status, tracks } = await deps.history.history(userIdFrom(request.params), HISTORY_LIMIT);
      return send(reply, { status_history: status, track_history: tracks });
    });

    app.get('/v1/users/:id/stats', { schema: { params: userIdParams } }, async (request, reply) => {
      const id = userIdFrom(request.params);
      const live = deps.view.get(id)?.presence.discord_status;
      return send(reply, statsFrom(live, await deps.history.stats(id), now()));
    });

    app.get(
      '/v1/users/:id/top-tracks',
      {
        schema: {
          params: userIdParams,
          querystring: {
            type: 'object',
            // Digits only: ajv's coercion would take "0x10" or "1e1", which no client means as a count.
            properties: { limit: { type: 'string', pattern: '^[+-]?[0-9]{1,15}$' } },
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const { limit: requested } = request.query as { limit?: string };
        const limit = topTracksLimit(requested === undefined ? undefined : Number(requested));
        return send(reply, { top_tracks: await deps.history.topTracks(id, TOP_TRACKS_MIN_PLAYS, limit) });
      },
    );
  };
