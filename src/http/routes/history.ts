import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { RecentStatuses } from '../../history/recent-status.js';
import type { ReadTokenService } from '../../keys/read-tokens.js';
import type { ApiKeyService } from '../../keys/service.js';
import {
  HISTORY_LIMIT,
  playKeyOf,
  RECENT_DEFAULT_LIMIT,
  RECENT_MAX_LIMIT,
  recentLimit,
  type Stats,
  type StoredStats,
  statsFrom,
  statusHistoryWith,
  TOP_TRACKS_DEFAULT_LIMIT,
  TOP_TRACKS_MAX_LIMIT,
  TOP_TRACKS_MIN_PLAYS,
  TRACKED_TRACKS_PER_USER,
  type TrackEntry,
  topTracksLimit,
  utcDay,
} from '../../presence/history.js';
import type { MusicSource, Snowflake } from '../../presence/model.js';
import { DEFAULT_MUSIC_APPS, type MusicApps } from '../../presence/music-apps.js';
import { hiddenMusicSources, isPaused, type PrivacySettings } from '../../presence/privacy.js';
import type { PresenceView } from '../../presence/registry.js';
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

/** What the store answers for a user it knows nothing of. */
const NOTHING_STORED: StoredStats = Object.freeze({
  lastStatus: null,
  lastSeen: null,
  trackHistoryCount: 0,
  playsDay: null,
  plays: 0,
});

const NO_SOURCES: ReadonlySet<MusicSource> = new Set();

type Hidden = 'all' | ReadonlySet<MusicSource>;

const shows = (hidden: Hidden, track: { source: MusicSource }): boolean =>
  hidden !== 'all' && !hidden.has(track.source);

/** The user's track history without what their settings hide. */
function shownTracks(tracks: TrackEntry[], hidden: Hidden): TrackEntry[] {
  if (hidden === 'all') return [];
  return hidden.size === 0 ? tracks : tracks.filter((track) => shows(hidden, track));
}

/**
 * `/v1/users/:id/history`, `/stats`, `/recent` and `/top-tracks`: answered from the store for any valid
 * id, so they work while the user is offline or no longer monitored.
 */
export const historyRoutes =
  (deps: HistoryRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const now = deps.now ?? Date.now;
    const musicApps = deps.musicApps ?? DEFAULT_MUSIC_APPS;

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
      const reads = {
        ownView,
        isPrivate: (userId: Snowflake) => privacy.isPrivate(userId),
        keys: deps.keys,
        ...(deps.tokens ? { tokens: deps.tokens } : {}),
      };
      if (!privacy.isPrivate(id)) {
        // An id nobody monitors is checked as a private one is: the time an answer takes must not tell
        // the two apart where the answer does not.
        if (deps.view.get(id) === undefined) await grantOf(reads, request, id);
        return deps.view;
      }
      if ((await grantOf(reads, request, id)) === null) return null;
      answeredToOwner(reply);
      return ownView;
    };

    const hiddenOf = (settings: PrivacySettings | undefined, at: number): Hidden =>
      settings === undefined ? NO_SOURCES : hiddenMusicSources(settings, at, musicApps);

    /**
     * Stats under the user's settings. Hidden music: neither count includes a hidden play; with every
     * source hidden both are 0, with some, both are counted in the stored track history (which holds every
     * entry `track_history_count` counts), `tracks_today` as the plays of today shown there, at most what
     * the store counted today. A pause shows the user offline, and when they were last seen is not told
     * while it lasts: the moment it began would be, and the presence itself says no more than offline.
     */
    const shownStats = async (
      id: Snowflake,
      stats: Stats,
      settings: PrivacySettings,
      at: number,
    ): Promise<Stats> => {
      const shown = { ...stats };
      const hidden = hiddenOf(settings, at);
      if (hidden === 'all') {
        shown.tracks_today = 0;
        shown.track_history_count = 0;
      } else if (hidden.size > 0) {
        const { tracks } = await deps.history.history(id, HISTORY_LIMIT);
        const visible = shownTracks(tracks, hidden);
        const today = utcDay(at);
        const playsToday = visible.filter((track) => utcDay(track.ts) === today && playKeyOf(track) !== null);
        shown.track_history_count = visible.length;
        shown.tracks_today = Math.min(stats.tracks_today, playsToday.length);
      }
      if (isPaused(settings, at)) {
        shown.current_status = 'offline';
        shown.last_seen = null;
      }
      if (!settings.show_last_seen) shown.last_seen = null;
      return shown;
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
        const view = await readerView(request, reply, id);
        if (view === null) {
          await askedAsForAnyone(deps.history.history(id, HISTORY_LIMIT));
          return send(reply, { status_history: [], track_history: [] });
        }
        // A member held as listed is rendered by this, and its first status recorded as recent.
        view.get(id);
        const at = now();
        const settings = deps.privacy?.of(id);
        const { status, tracks } = await deps.history.history(id, HISTORY_LIMIT);
        return send(reply, {
          status_history: statusHistoryWith(status, deps.recent?.get(id)),
          track_history: shownTracks(tracks, hiddenOf(settings, at)),
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
          documentedQuerystring: { type: 'object', properties: readTokenQuery },
          response: {
            200: successResponse('the stats', statsSchema),
            ...errorResponses(['invalid_user_id']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const view = await readerView(request, reply, id);
        if (view === null) {
          await askedAsForAnyone(deps.history.stats(id));
          return send(reply, statsFrom(undefined, NOTHING_STORED, now()));
        }
        const at = now();
        const settings = deps.privacy?.of(id);
        const stored = await deps.history.stats(id);
        const stats = statsFrom(view.get(id)?.status, stored, at, deps.recent?.get(id));
        return send(reply, settings === undefined ? stats : await shownStats(id, stats, settings, at));
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
        let recent: TrackEntry[] = [];
        if (view === null) {
          await askedAsForAnyone(deps.history.history(id, HISTORY_LIMIT));
        } else {
          const hidden = hiddenOf(deps.privacy?.of(id), now());
          const { tracks } = await deps.history.history(id, HISTORY_LIMIT);
          recent = shownTracks(tracks, hidden).slice(0, limit);
        }
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
        const { limit: requested } = request.query as { limit?: string };
        const limit = topTracksLimit(requested === undefined ? undefined : Number(requested));
        if ((await readerView(request, reply, id)) === null) {
          await askedAsForAnyone(deps.history.topTracks(id, TOP_TRACKS_MIN_PLAYS, limit));
          return send(reply, { top_tracks: [] });
        }
        const hidden = hiddenOf(deps.privacy?.of(id), now());
        if (hidden === 'all') return send(reply, { top_tracks: [] });
        const top = await deps.history.topTracks(id, TOP_TRACKS_MIN_PLAYS, limit);
        if (hidden.size === 0) return send(reply, { top_tracks: top });
        let shown = top.filter((track) => shows(hidden, track));
        // Hidden tracks took places: the rest of the ranking is read, once, to fill them.
        if (shown.length < limit && top.length === limit) {
          const all = await deps.history.topTracks(id, TOP_TRACKS_MIN_PLAYS, TRACKED_TRACKS_PER_USER);
          shown = all.filter((track) => shows(hidden, track)).slice(0, limit);
        }
        return send(reply, { top_tracks: shown });
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

/**
 * A read of the store made only to be thrown away: a private user is answered after the same work as an
 * unknown id, so the time an answer takes does not tell them apart either.
 */
async function askedAsForAnyone(read: Promise<unknown>): Promise<void> {
  await read.catch(() => undefined);
}
