import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { HistoryReads } from '../../history/reads.js';
import type { RecentStatuses } from '../../history/recent-status.js';
import type { ReadTokenService } from '../../keys/read-tokens.js';
import type { ApiKeyService } from '../../keys/service.js';
import {
  HISTORY_LIMIT,
  RECENT_DEFAULT_LIMIT,
  RECENT_MAX_LIMIT,
  recentLimit,
  TOP_TRACKS_DEFAULT_LIMIT,
  TOP_TRACKS_DEFAULT_PERIOD,
  TOP_TRACKS_MAX_LIMIT,
  TOP_TRACKS_MIN_PLAYS,
  TOP_TRACKS_PERIODS,
  type TopTracksPeriod,
  topTracksLimit,
} from '../../model/history.js';
import type { Snowflake } from '../../presence/model.js';
import type { MusicApps } from '../../presence/normalize/music-apps.js';
import type { PrivacySettings } from '../../presence/privacy.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import type { HistoryStore } from '../../store/ports.js';
import { TAGS } from '../openapi.js';
import { answeredToOwner, grantOf } from '../owner-reads.js';
import { recentFeed } from '../recent-feed.js';
import { errorResponses, successResponse } from '../schemas/envelope.js';
import { historySchema, recentSchema, statsSchema, topTracksSchema } from '../schemas/history.js';
import { readTokenQuery, userIdFrom, userIdParams } from './users.js';

const ANY_USER =
  'Answered for any valid id, monitored or not (empty lists, `is_monitored: false`, `current_status: "offline"` and `last_seen: null` when nothing is known); `@me` is not an id here (400). A user whose `visibility` is `private` is answered as an unknown id, except to a request with their own API key in `Authorization` or one of their read tokens (`Authorization: Bearer prt_…`, or `?token=prt_…`), answered with `Cache-Control: private, no-store`; what their privacy settings hide is left out for everyone.';

/** What the routes need of the users' privacy settings. */
export interface HistoryPrivacy {
  /** The user's settings; undefined for one who set none. */
  of(userId: Snowflake): PrivacySettings | undefined;
  /** Whether the user's `visibility` is `private`. */
  isPrivate(userId: Snowflake): boolean;
}

export interface HistoryRouteDeps {
  /** What anyone may read: private users are not in it. */
  view: PresenceView;
  /** What a private user reads of themselves with their key; absent: `view`. */
  ownView?: PresenceView;
  history: HistoryStore;
  /** Tells a private user's own key. */
  keys: Pick<ApiKeyService, 'ownerOf'>;
  /** Tells a private user's read tokens; absent: only their key reads them. */
  tokens?: Pick<ReadTokenService, 'ownerOf'>;
  /**
   * Status changes the view saw that history may not have stored yet; absent: the store alone. Given the
   * recorder's `records`, so that it holds nothing history does not record.
   */
  recent?: Pick<RecentStatuses, 'get'>;
  /** Absent: every user is public and hides nothing. */
  privacy?: HistoryPrivacy;
  /** Which service a hidden application plays, so its past plays are hidden too; DEFAULT_MUSIC_APPS if absent. */
  musicApps?: MusicApps;
  now?: () => number;
}

const send = (reply: FastifyReply, data: unknown): FastifyReply =>
  reply.type('application/json; charset=utf-8').send({ success: true, data });

/**
 * `/v1/users/:id/history`, `/stats`, `/recent` and `/top-tracks`: answered from the store for any valid
 * id, so they work while the user is offline or no longer monitored.
 */
export const historyRoutes =
  (deps: HistoryRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const privacy = deps.privacy;
    const reads = new HistoryReads({
      history: deps.history,
      ...(deps.recent ? { recent: deps.recent } : {}),
      ...(privacy ? { settingsOf: (userId: Snowflake) => privacy.of(userId) } : {}),
      ...(deps.musicApps ? { musicApps: deps.musicApps } : {}),
      ...(deps.now ? { now: deps.now } : {}),
    });

    /**
     * The view a request reads the user from, or null when it must be answered as for an unknown id: the
     * user is private and the request is not theirs. The key or token is looked at only for a private
     * user, so other reads cost nothing more; one that is wrong, or cannot be checked, is answered the same
     * as none (a 401 would tell that the user exists and is private). An answer to the owner's grant is
     * kept by no cache.
     */
    const readerView = async (
      request: FastifyRequest,
      reply: FastifyReply,
      id: Snowflake,
    ): Promise<PresenceView | null> => {
      const { privacy } = deps;
      if (privacy === undefined) return deps.view;
      const ownView = deps.ownView ?? deps.view;
      const owner = {
        ownView,
        isPrivate: (userId: Snowflake) => privacy.isPrivate(userId),
        keys: deps.keys,
        ...(deps.tokens ? { tokens: deps.tokens } : {}),
      };
      if (!privacy.isPrivate(id)) {
        // An id nobody monitors is checked as a private one is: the time an answer takes must not tell
        // the two apart where the answer does not.
        if (deps.view.get(id) === undefined) await grantOf(owner, request, id);
        return deps.view;
      }
      if ((await grantOf(owner, request, id)) === null) return null;
      answeredToOwner(reply);
      return ownView;
    };

    app.get(
      '/v1/users/:id/history',
      {
        schema: {
          tags: [TAGS.history],
          summary: 'Status and listening history',
          description: `Status changes (an entry only when \`discord_status\` changes) and tracks played, newest first, the ${HISTORY_LIMIT} most recent of each. The status history agrees with the live presence at every moment; a track may take up to a second to show (tracks are written in batches). ${ANY_USER}`,
          params: userIdParams,
          documentedQuerystring: { type: 'object', properties: readTokenQuery },
          response: {
            200: successResponse('the history', historySchema),
            ...errorResponses(['invalid_user_id']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        return send(reply, await reads.history(id, await readerView(request, reply, id)));
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
          documentedQuerystring: { type: 'object', properties: readTokenQuery },
          response: {
            200: successResponse('the stats', statsSchema),
            ...errorResponses(['invalid_user_id']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        return send(reply, await reads.stats(id, await readerView(request, reply, id)));
      },
    );

    app.get(
      '/v1/users/:id/recent',
      {
        schema: {
          tags: [TAGS.history],
          summary: 'Recently played',
          description: `The latest plays, newest first: what a "recently played" card or a script needs, the first being the track playing now, if any. \`format=rss\` answers an RSS 2.0 feed of the same (\`application/rss+xml\`). ${ANY_USER}`,
          params: userIdParams,
          querystring: {
            type: 'object',
            properties: {
              limit: limitQuery('plays', RECENT_DEFAULT_LIMIT, RECENT_MAX_LIMIT),
              format: { type: 'string', enum: ['json', 'rss'], description: 'json (the default) or rss' },
              ...readTokenQuery,
            },
          },
          response: {
            200: successResponse('the latest plays', recentSchema),
            ...errorResponses(['invalid_user_id', 'invalid_query']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const { limit: requested, format } = request.query as { limit?: string; format?: 'json' | 'rss' };
        const limit = recentLimit(requested === undefined ? undefined : Number(requested));
        const view = await readerView(request, reply, id);
        const recent = await reads.recent(id, view, limit);
        if (format !== 'rss') return send(reply, { recent_tracks: recent });
        const user = view?.get(id)?.summary().discord_user;
        const name = user ? (user.global_name ?? user.username ?? null) : null;
        const link = `${request.protocol}://${request.host}/?id=${id}`;
        return reply
          .type('application/rss+xml; charset=utf-8')
          .send(recentFeed(id, typeof name === 'string' ? name : null, recent, link));
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
              limit: limitQuery('tracks', TOP_TRACKS_DEFAULT_LIMIT, TOP_TRACKS_MAX_LIMIT),
              period: {
                type: 'string',
                enum: Object.keys(TOP_TRACKS_PERIODS),
                description: `the plays counted: those of the last 7 or 30 UTC days, or all (default ${TOP_TRACKS_DEFAULT_PERIOD}); plays from before per-day counting count only in all`,
              },
              ...readTokenQuery,
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
        const { limit: requested, period } = request.query as { limit?: string; period?: TopTracksPeriod };
        const limit = topTracksLimit(requested === undefined ? undefined : Number(requested));
        const view = await readerView(request, reply, id);
        return send(reply, { top_tracks: await reads.topTracks(id, view, limit, period) });
      },
    );
  };

/** A `limit` of how many `things`, an integer, clamped to 1–`max`. */
function limitQuery(things: string, byDefault: number, max: number) {
  return {
    // Digits only: ajv's coercion would take "0x10" or "1e1", which no client means as a count.
    type: 'string',
    pattern: '^[+-]?[0-9]{1,15}$',
    description: `how many ${things}: an integer, default ${byDefault}, clamped to 1–${max}`,
  } as const;
}
