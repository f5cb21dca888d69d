import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { RecentStatuses } from '../../history/recent-status.js';
import {
  HISTORY_LIMIT,
  statsFrom,
  statusHistoryWith,
  TOP_TRACKS_DEFAULT_LIMIT,
  TOP_TRACKS_MAX_LIMIT,
  TOP_TRACKS_MIN_PLAYS,
  topTracksLimit,
} from '../../presence/history.js';
import type { PresenceView } from '../../presence/registry.js';
import type { HistoryStore } from '../../store/ports.js';
import { TAGS } from '../openapi.js';
import { errorResponses, successResponse } from '../schemas/envelope.js';
import { historySchema, statsSchema, topTracksSchema } from '../schemas/history.js';
import { userIdFrom, userIdParams } from './users.js';

const ANY_USER =
  'Answered for any valid id, monitored or not (empty lists, `is_monitored: false`, `current_status: "offline"` and `last_seen: null` when nothing is known); `@me` is not an id here (400).';

export interface HistoryRouteDeps {
  view: PresenceView;
  history: HistoryStore;
  /** Status changes the view saw that history may not have stored yet; absent: the store alone. */
  recent?: Pick<RecentStatuses, 'get'>;
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

    app.get(
      '/v1/users/:id/history',
      {
        schema: {
          tags: [TAGS.history],
          summary: 'Status and listening history',
          description: `Status changes (an entry only when \`discord_status\` changes) and tracks played, newest first, the ${HISTORY_LIMIT} most recent of each. The status history agrees with the live presence at every moment; a track may take up to a second to show (tracks are written in batches). ${ANY_USER}`,
          params: userIdParams,
          response: {
            200: successResponse('the history', historySchema),
            ...errorResponses(['invalid_user_id']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        // A member held as listed is rendered by this, and its first status recorded as recent.
        deps.view.get(id);
        const { status, tracks } = await deps.history.history(id, HISTORY_LIMIT);
        return send(reply, {
          status_history: statusHistoryWith(status, deps.recent?.get(id)),
          track_history: tracks,
        });
      },
    );

    app.get(
      '/v1/users/:id/stats',
      {
        schema: {
          tags: [TAGS.history],
          summary: 'Listening and status stats',
          description: `Plays today (since 00:00 UTC), the size of the track history, the current status and when the user was last seen online. ${ANY_USER}`,
          params: userIdParams,
          response: {
            200: successResponse('the stats', statsSchema),
            ...errorResponses(['invalid_user_id']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const stored = await deps.history.stats(id);
        return send(reply, statsFrom(deps.view.get(id)?.status, stored, now(), deps.recent?.get(id)));
      },
    );

    app.get(
      '/v1/users/:id/top-tracks',
      {
        schema: {
          tags: [TAGS.history],
          summary: 'Most played tracks',
          description: `Tracks played at least ${TOP_TRACKS_MIN_PLAYS} times, most played first, then most recently played. A play starts when \`now_playing\` moves to another track, or when the same track starts again after its end; a seek or a pause is not a play. ${ANY_USER}`,
          params: userIdParams,
          querystring: {
            type: 'object',
            properties: {
              limit: {
                // Digits only: ajv's coercion would take "0x10" or "1e1", which no client means as a count.
                type: 'string',
                pattern: '^[+-]?[0-9]{1,15}$',
                description: `how many tracks: an integer, default ${TOP_TRACKS_DEFAULT_LIMIT}, clamped to 1–${TOP_TRACKS_MAX_LIMIT}`,
              },
            },
          },
          response: {
            200: successResponse('the top tracks', topTracksSchema),
            ...errorResponses(['invalid_user_id', 'invalid_query']),
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
