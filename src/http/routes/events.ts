import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { clientKey } from '../../net/client-address.js';
import { refuseLater } from '../../net/tarpit.js';
import { upgraded } from '../../net/upgraded.js';
import type { Snowflake } from '../../presence/model.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import type { SseHub } from '../../sse/hub.js';
import { PRESENCE_EVENT } from '../../sse/wire.js';
import { bulkIdsOf } from '../bulk-read.js';
import { ApiError } from '../errors.js';
import type { NotMonitored } from '../not-monitored.js';
import { TAGS } from '../openapi.js';
import { OWNER_CACHE_CONTROL, type OwnerReads, ownerViewOf, type ReadGrant } from '../owner-reads.js';
import type { ReadCharge } from '../rate-limits.js';
import { errorResponses } from '../schemas/envelope.js';
import { OWNER_READS, readTokenQuery, userIdFrom, userIdParams } from './users.js';

export interface EventRouteDeps {
  hub: SseHub;
  view: PresenceView;
  notMonitored: NotMonitored;
  /** Who streams a private user as they do; absent: nobody. */
  owner?: OwnerReads;
  /** Ids one stream may name: a socket's subscriptions (SUBSCRIPTIONS_PER_SOCKET). */
  maxIds: number;
  /** How long a client past SOCKETS_PER_IP waits for its 429 (net/tarpit.ts). */
  refusalDelayMs: number;
  /** A stream of several ids costs a read per id, as the bulk read does; null when reads are not limited. */
  chargeReads: ReadCharge | null;
}

/** What a refused socket upgrade says too (socket/admission.ts). */
const RETRY_AFTER_SECONDS = 60;

const STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  // nginx would hold events back to fill its buffer.
  'x-accel-buffering': 'no',
  // The connection is the stream's, counted by the socket caps: no request follows it on the connection.
  connection: 'close',
} as const;

const lastEventIdQuery = {
  last_event_id: {
    type: 'string',
    description:
      'the id of the last event the client had, for a client that cannot send `Last-Event-ID` (a new `EventSource`); the header wins',
  },
} as const;

const lastEventIdHeader = {
  type: 'object',
  properties: {
    'last-event-id': {
      type: 'string',
      description: 'sent by `EventSource` when it reconnects: what was missed since is sent again',
    },
  },
} as const;

const streamResponse = {
  200: {
    description:
      'a `text/event-stream` that stays open: `retry:`, an `event: presence` per monitored id, then one per change, each with an `id:`; a `: keep-alive` comment now and then',
    content: {
      'text/event-stream': {
        schema: {
          type: 'string',
          examples: [
            `retry: 2000\n\nevent: ${PRESENCE_EVENT}\ndata: {"user_id":"94490510688792576","discord_status":"online",…}\n\nid: 3f9a1c0b7e21-42\n\n`,
          ],
        },
      },
    },
  },
} as const;

const ABOUT = `Server-Sent Events: open it with \`new EventSource(url)\` and listen for \`${PRESENCE_EVENT}\` events. Each event's \`data\` is the presence with its \`user_id\`, as the socket's \`PRESENCE_UPDATE\` \`d\`: first the presence of every id asked for that is monitored, then one per change (KV changes included). Events carry ids; a client that reconnects with \`Last-Event-ID\` (EventSource does) is sent what it missed, or every presence afresh when that is too long ago. A stream counts as a socket against \`SOCKETS_PER_IP\` and \`MAX_SOCKETS\`, and as one read per id when it opens; a client opening streams faster than its budget of openings allows is refused \`429 rate_limited\`.`;

function lastEventIdOf(request: FastifyRequest): string | undefined {
  const header = request.headers['last-event-id'];
  if (typeof header === 'string') return header;
  const query = (request.query as { last_event_id?: unknown } | null)?.last_event_id;
  return typeof query === 'string' ? query : undefined;
}

/**
 * `GET /v1/users/:id/events` and `GET /v1/events?ids=`: a stream of presences. Everything is checked before
 * the stream starts (ids, the single user being monitored, the caps), and refused in the envelope; then
 * the answer is the hub's.
 */
export const eventRoutes =
  (deps: EventRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const stream = async (
      request: FastifyRequest,
      reply: FastifyReply,
      ids: Snowflake[],
      tentative?: Snowflake,
      grant?: ReadGrant,
    ): Promise<void> => {
      const client = clientKey(request.ip);
      const refused = deps.hub.refusal(client, ids.length);
      if (refused) {
        if (refused.code === 'rate_limited') {
          // A client past its cap or its budget of openings is answered as slowly as a socket upgrade past
          // its cap (net/tarpit.ts).
          await new Promise<void>((resolve) => refuseLater(deps.refusalDelayMs, resolve));
          reply.header('retry-after', String(refused.retryAfterSeconds ?? RETRY_AFTER_SECONDS));
        }
        throw new ApiError(refused.code, refused.message);
      }
      reply.hijack();
      const response = reply.raw;
      try {
        // No chunked framing: the body ends with the connection (`Connection: close`), so an event is one
        // write of its bytes, with nothing around them.
        response.removeHeader('content-length');
        response.removeHeader('transfer-encoding');
        // What the hooks set (CORS, security, rate-limit headers) goes out with the stream's own.
        response.writeHead(200, {
          ...(reply.getHeaders() as OutgoingHttpHeaders),
          ...STREAM_HEADERS,
          ...(grant ? { 'cache-control': OWNER_CACHE_CONTROL } : {}),
        });
        // A stream counts as a socket from now on: it leaves the HTTP connection cap, as a WebSocket does.
        upgraded(request.raw.socket);
        if (grant) deps.hub.openOwn(response, client, grant);
        else deps.hub.open(response, client, ids, lastEventIdOf(request), tentative);
      } catch (error) {
        request.log.error({ err: error }, 'event stream failed to open');
        response.destroy();
      }
    };

    app.get(
      '/v1/users/:id/events',
      {
        exposeHeadRoute: false,
        schema: {
          tags: [TAGS.presence],
          summary: "A user's presence, live, as Server-Sent Events",
          description: `${ABOUT} A user who is not monitored is answered 404 \`user_not_monitored\`, as a presence read is; \`/v1/events?ids=\` waits for them instead. While the service starts, before every guild's members are listed, the stream of a user not monitored yet opens and waits for them; it ends once every member is known if they still are not, and the reconnect is answered 404. ${OWNER_READS} Such a stream carries no event ids: a reconnect is sent the presence as it is then. It ends when its token is removed or its key replaced.`,
          params: userIdParams,
          headers: lastEventIdHeader,
          documentedQuerystring: { type: 'object', properties: { ...lastEventIdQuery, ...readTokenQuery } },
          response: {
            ...streamResponse,
            ...errorResponses(['invalid_user_id', 'user_not_monitored', 'try_again_later']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const monitored = deps.view.get(id) !== undefined;
        if (!monitored) {
          const owner = await ownerViewOf(deps.owner, request, id);
          if (owner && owner.view.get(id) !== undefined) {
            await stream(request, reply, [id], undefined, owner.grant);
            return;
          }
        }
        // EventSource gives up for good on a 404: while the service starts, a member whose guild is not
        // listed yet is waited for, as /v1/events does, and refused only once every member is known.
        if (!monitored && deps.hub.knowsEveryMember) throw deps.notMonitored(id);
        await stream(request, reply, [id], monitored ? undefined : id);
      },
    );
    app.get(
      '/v1/events',
      {
        exposeHeadRoute: false,
        schema: {
          tags: [TAGS.presence],
          summary: 'Several presences, live, as Server-Sent Events',
          description: `${ABOUT} Up to ${deps.maxIds.toLocaleString('en')} ids (\`SUBSCRIPTIONS_PER_SOCKET\`, as many as a socket may subscribe to); an id not monitored is left out until it is, then its events come.`,
          headers: lastEventIdHeader,
          // Read by the route, which says which item is wrong.
          documentedQuerystring: {
            type: 'object',
            properties: {
              ids: {
                type: 'string',
                description: `1–${deps.maxIds} distinct Discord user ids, comma-separated`,
                examples: ['94490510688792576,218486934151479296'],
              },
              ...lastEventIdQuery,
            },
            required: ['ids'],
          },
          response: { ...streamResponse, ...errorResponses(['invalid_query', 'try_again_later']) },
        },
      },
      async (request, reply) => {
        const ids = bulkIdsOf(request.query, deps.maxIds);
        deps.chargeReads?.(request, reply, ids.length);
        await stream(request, reply, ids);
      },
    );
  };
