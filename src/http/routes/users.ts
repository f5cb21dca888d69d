import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import type { PresenceSnapshot } from '../../presence/registry/snapshot.js';
import { isSnowflake, SNOWFLAKE_PATTERN } from '../../presence/snowflake.js';
import { authenticate } from '../auth.js';
import { bulkAnswer, bulkIdsOf, MAX_BULK_IDS, streamOf } from '../bulk-read.js';
import { ApiError } from '../errors.js';
import { bulkEtag, noneMatch, snapshotEtag } from '../etag.js';
import type { NotMonitored } from '../not-monitored.js';
import { API_KEY_SECURITY, TAGS } from '../openapi.js';
import { answeredToOwner, type OwnerReads, ownerViewOf } from '../owner-reads.js';
import type { ReadCharge } from '../rate-limits.js';
import { emptyResponse, errorResponses, successResponse } from '../schemas/envelope.js';
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

/** The tag every presence read carries, as the document describes it. */
const ETAG_HEADER = {
  ETag: {
    type: 'string',
    description:
      'a strong tag of these bytes: send it back in `If-None-Match` to get `304` while nothing changed',
  },
} as const;

const presenceResponse = {
  ...successResponse('the presence', { $ref: 'presence#' }, presenceExample),
  headers: ETAG_HEADER,
};

const notModifiedResponse = emptyResponse(
  'nothing changed since the `If-None-Match` tag: no body, the same `ETag`',
);

const presencesResponse = {
  ...successResponse(
    'the presences found, by id, in the order asked; ids not monitored are left out',
    {
      type: 'object',
      propertyNames: { pattern: SNOWFLAKE_PATTERN },
      additionalProperties: { $ref: 'presence#' },
    },
    { [presenceExample.discord_user.id]: presenceExample },
  ),
  headers: ETAG_HEADER,
};

/** `?token=` as every read of a user that a read token opens documents it. */
export const readTokenQuery = {
  token: {
    type: 'string',
    description:
      'one of the user’s read tokens (`prt_…`), for a user whose `visibility` is `private`: the answer is then theirs, with `Cache-Control: private, no-store`. `Authorization: Bearer prt_…` does the same; so does their API key in `Authorization`. Any other token is answered as none is.',
  },
} as const;

/** What a private user's own reads add to a route's description. */
export const OWNER_READS =
  'A user whose `visibility` is `private` is answered as one nobody monitors, except to a request with their API key in `Authorization` or one of their read tokens (`Authorization: Bearer prt_…`, or `?token=prt_…`).';

const PRESENCE_FIELDS = `\`discord_user\` is Discord's user object as the gateway gave it (more fields than the schema names may come); \`activities\` are Discord's activity objects, snowflakes as strings; \`kv\` is the user's own key/value store. \`banner\`, \`banner_url\` and \`accent_color\` are null until Presently has fetched the profile. \`observed_at\` is when Discord last reported a change of it; \`stale\` is true while no shard that sees the user has a live session, until Discord reports them again.`;

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
  /** What `@me` reads: the key's owner even when private; absent: `view`. */
  ownView?: PresenceView;
  /** Who else reads a private user as they do; absent: nobody, `@me` aside. */
  owner?: OwnerReads;
  keys: ApiKeyService;
  notMonitored: NotMonitored;
  /** Charges a bulk read one read per id; null when reads are not limited. */
  chargeReads: ReadCharge | null;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** Tags the answer; true when the client holds it already, and the answer is then a 304. */
function notModified(request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('etag', etag);
  if (!noneMatch(request.headers['if-none-match'], etag)) return false;
  reply.code(304);
  return true;
}

/**
 * `GET /v1/users/:id`, `GET /v1/users/@me` and `GET /v1/users?ids=`: presences, answered with the bytes
 * serialized when each last changed, tagged, and 304 when the client's tag is still theirs.
 */
export const userRoutes =
  (deps: UserRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const sendPresence = (
      request: FastifyRequest,
      reply: FastifyReply,
      id: Snowflake,
      view: PresenceView = deps.view,
    ): FastifyReply => sendSnapshot(request, reply, id, view.get(id));
    const sendSnapshot = (
      request: FastifyRequest,
      reply: FastifyReply,
      id: Snowflake,
      snapshot: PresenceSnapshot | undefined,
    ): FastifyReply => {
      if (!snapshot) throw deps.notMonitored(id);
      if (notModified(request, reply, snapshotEtag(snapshot))) return reply.send();
      return reply.type(JSON_TYPE).send(snapshot.body);
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
            304: notModifiedResponse,
            ...errorResponses(['invalid_api_key', 'user_not_monitored']),
          },
        },
      },
      async (request, reply) =>
        sendPresence(request, reply, await authenticate(deps.keys, request), deps.ownView ?? deps.view),
    );
    app.get(
      '/v1/users/:id',
      {
        schema: {
          tags: [TAGS.presence],
          summary: "A user's presence",
          description: `Lanyard's presence object plus Presently's additions (\`now_playing\`, \`youtube_music\`, banner, accent colour, \`member_since\`, \`observed_at\`, \`stale\`), for any user who shares a server with the bot. ${OWNER_READS} ${PRESENCE_FIELDS}`,
          params: userIdParams,
          documentedQuerystring: { type: 'object', properties: readTokenQuery },
          response: {
            200: presenceResponse,
            304: notModifiedResponse,
            ...errorResponses(['invalid_user_id', 'user_not_monitored']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const snapshot = deps.view.get(id);
        // The fast path answered every user the public view shows but for HEAD and refusals: what comes
        // here without a snapshot is private, or not monitored.
        if (snapshot) return sendSnapshot(request, reply, id, snapshot);
        const owner = await ownerViewOf(deps.owner, request, id);
        if (owner === null) throw deps.notMonitored(id);
        return sendSnapshot(request, answeredToOwner(reply), id, owner.view.get(id));
      },
    );
    app.get(
      '/v1/users',
      {
        schema: {
          tags: [TAGS.presence],
          summary: 'Several presences at once',
          description: `The presences of up to ${MAX_BULK_IDS} users in one answer: \`data\` maps each monitored id to what \`GET /v1/users/{id}\` answers for it, in the order asked; ids not monitored are left out. An id asked twice counts once. It costs one read of the rate limit per distinct id. ${PRESENCE_FIELDS}`,
          // Read by the route, which says which item is wrong.
          documentedQuerystring: {
            type: 'object',
            properties: {
              ids: {
                type: 'string',
                description: `1–${MAX_BULK_IDS} distinct Discord user ids, comma-separated`,
                examples: ['94490510688792576,218486934151479296'],
              },
            },
            required: ['ids'],
          },
          response: {
            200: presencesResponse,
            304: notModifiedResponse,
            ...errorResponses(['invalid_query']),
          },
        },
      },
      async (request, reply) => {
        const ids = bulkIdsOf(request.query);
        deps.chargeReads?.(request, reply, ids.length);
        const found: [Snowflake, PresenceSnapshot][] = [];
        for (const id of ids) {
          const snapshot = deps.view.get(id);
          if (snapshot) found.push([id, snapshot]);
        }
        if (notModified(request, reply, bulkEtag(found))) return reply.send();
        const answer = bulkAnswer(found);
        reply.type(JSON_TYPE);
        if (typeof answer.body === 'string') return reply.send(answer.body);
        return reply.header('content-length', answer.length).send(streamOf(answer.body));
      },
    );
  };
