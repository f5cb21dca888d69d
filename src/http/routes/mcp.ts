import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { HistoryReads } from '../../history/reads.js';
import type { RecentStatuses } from '../../history/recent-status.js';
import { AGENT_PATH } from '../../mcp/endpoint.js';
import type { ChargeReads } from '../../mcp/reads.js';
import { SERVER_ERROR } from '../../mcp/resources.js';
import { agentServer } from '../../mcp/server.js';
import type { Snowflake } from '../../presence/model.js';
import type { MusicApps } from '../../presence/normalize/music-apps.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import type { HistoryStore } from '../../store/ports.js';
import { ApiError } from '../errors.js';
import type { NotMonitored } from '../not-monitored.js';
import { TAGS } from '../openapi.js';
import type { ReadCharge } from '../rate-limits.js';
import { emptyResponse, errorEnvelope, errorResponses, RESPONSE_DESCRIPTION } from '../schemas/envelope.js';
import type { HistoryPrivacy } from './history.js';

/**
 * A POST carries one JSON-RPC message: a call names a few ids at most (50 for `get_presences`, about
 * 1 KiB), and a client's `initialize` is a few KiB. Past this it is refused unread.
 */
export const MCP_BODY_LIMIT = 64 * 1024;

/** The SDK takes `application/json` alone (parameters allowed), as the transport's specification says. */
const MCP_CONTENT_TYPE = /^application\/json\s*(?:;.*)?$/i;

const JSON_TYPE = 'application/json; charset=utf-8';

export interface McpRouteDeps {
  /** What anyone may read: private users are not in it. */
  view: PresenceView;
  history: HistoryStore;
  /** Status changes history may not have stored yet, as the history routes take them (history.ts). */
  recent?: Pick<RecentStatuses, 'get'>;
  /** The users' privacy settings; absent: nobody set any, so nobody allowed agents. */
  privacy?: Pick<HistoryPrivacy, 'of'>;
  musicApps?: MusicApps;
  notMonitored: NotMonitored;
  /** Charges reads past the request's own one (a bulk read's); null when reads are not limited. */
  chargeReads: ReadCharge | null;
  /** Ids one `get_presences` call may name: the bulk read's limit. */
  maxIds: number;
  /** The service's version, which the MCP server gives as its own. */
  version: string;
}

/** A JSON-RPC error answer, as the SDK writes one. */
const jsonRpcError = {
  type: 'object',
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer', 'null'] },
    error: {
      type: 'object',
      properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} },
      required: ['code', 'message'],
    },
  },
  required: ['jsonrpc', 'id', 'error'],
} as const;

const jsonRpcErrorResponse = (description: string) =>
  ({ [RESPONSE_DESCRIPTION]: description, ...jsonRpcError }) as const;

/** A JSON-RPC message of MCP, loosely: the SDK checks each against the protocol's own schemas. */
const jsonRpcMessage = {
  type: 'object',
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer'] },
    method: { type: 'string' },
    params: { type: 'object' },
    result: { type: 'object' },
    error: { type: 'object' },
  },
  required: ['jsonrpc'],
} as const;

const jsonRpcBody = { anyOf: [jsonRpcMessage, { type: 'array', items: jsonRpcMessage, minItems: 1 }] };

const NO_STREAM =
  'This server is stateless: it keeps no session and opens no stream, so `GET` and `DELETE` answer `405` with `Allow: POST`, as the transport specification has it.';

/** The answer to GET and DELETE, in the protocol's terms (no stream to open, no session to end). */
const METHOD_NOT_ALLOWED = JSON.stringify({
  jsonrpc: '2.0',
  error: { code: SERVER_ERROR, message: `Method not allowed: POST JSON-RPC messages to ${AGENT_PATH}` },
  id: null,
});

const notAllowedSchema = (method: string) => ({
  tags: [TAGS.agents],
  summary: `${method}: not offered`,
  description: NO_STREAM,
  response: {
    405: {
      ...jsonRpcErrorResponse('no stream, no session: POST instead'),
      headers: { Allow: { type: 'string', const: 'POST' } },
    },
    ...errorResponses([]),
  },
});

/** Copies the headers set on the reply so far (security, CORS, rate limit) to the response the SDK writes. */
function carryHeaders(reply: FastifyReply): void {
  if (reply.raw.headersSent) return;
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) reply.raw.setHeader(name, value);
  }
}

/**
 * The request's charge for the call it carries, as the matching REST route charges: one read a call, one
 * per distinct id for `get_presences`. The read every request costs (limitReads) pays the call's first
 * read, as it pays a REST request's.
 */
function chargeOf(deps: McpRouteDeps, request: FastifyRequest, reply: FastifyReply): ChargeReads {
  let first = true;
  return (reads) => {
    const { chargeReads } = deps;
    if (chargeReads === null) return null;
    // chargeReads counts its first read as paid by the request.
    const counted = first ? reads : reads + 1;
    first = false;
    try {
      chargeReads(request, reply, counted);
      return null;
    } catch (error) {
      if (error instanceof ApiError) return error.message;
      throw error;
    } finally {
      carryHeaders(reply);
    }
  };
}

/**
 * `POST /mcp`: the Model Context Protocol's Streamable HTTP transport, stateless (the SDK's
 * `sessionIdGenerator: undefined`), a new server and transport for each request. Answers are JSON
 * (`enableJsonResponse`) rather than an event stream: every tool answers at once from memory or one store
 * read and sends no progress or notification, so a stream would add framing and hold the connection for
 * nothing. The body is read by Fastify, bounded, and handed to the SDK parsed; what the SDK answers is
 * written to the response it is given, with the headers the hooks set carried over.
 */
export const mcpRoutes =
  (deps: McpRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const { privacy } = deps;
    const settingsOf = (userId: Snowflake) => privacy?.of(userId);
    const history = new HistoryReads({
      history: deps.history,
      ...(deps.recent ? { recent: deps.recent } : {}),
      settingsOf,
      ...(deps.musicApps ? { musicApps: deps.musicApps } : {}),
    });
    const agents = {
      view: deps.view,
      history,
      settingsOf,
      notMonitored: (userId: Snowflake) => deps.notMonitored(userId).message,
      maxIds: deps.maxIds,
      version: deps.version,
    };

    app.removeAllContentTypeParsers();
    app.addContentTypeParser(MCP_CONTENT_TYPE, { parseAs: 'buffer' }, (_request, body, done) =>
      done(null, body),
    );

    app.post(
      AGENT_PATH,
      {
        schema: {
          tags: [TAGS.agents],
          summary: 'MCP for AI agents',
          description: `The Model Context Protocol's Streamable HTTP transport: tools and resources for presences, history, stats and tracks of the users who allowed agents (\`allow_agents\`). Send JSON-RPC messages as \`application/json\`, accepting \`application/json, text/event-stream\`; answers are JSON. A body is at most ${MCP_BODY_LIMIT / 1024} KiB. Each request counts one read of the rate limit; a tool call or resource read counts as its REST read does, \`get_presences\` one per distinct id. Refusals before the protocol (size, content type, rate limit) are in the API's envelope, the protocol's own errors in JSON-RPC. ${NO_STREAM} See docs/agents.md.`,
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  ...jsonRpcBody,
                  examples: [
                    {
                      jsonrpc: '2.0',
                      id: 1,
                      method: 'tools/call',
                      params: { name: 'get_presence', arguments: { user_id: '94490510688792576' } },
                    },
                  ],
                },
              },
            },
          },
          response: {
            200: { [RESPONSE_DESCRIPTION]: 'the JSON-RPC responses to the requests sent', ...jsonRpcBody },
            202: emptyResponse('only notifications or responses were sent: accepted, nothing to answer'),
            ...errorResponses(['payload_too_large', 'unsupported_media_type']),
            400: {
              [RESPONSE_DESCRIPTION]:
                'a body that is not JSON (the JSON-RPC error `-32700`), a batch of messages (`-32600`), or a request the HTTP parser refused (`bad_request`, in the envelope)',
              anyOf: [errorEnvelope(['bad_request']), jsonRpcError],
            },
            406: jsonRpcErrorResponse(
              '`Accept` does not list both `application/json` and `text/event-stream`',
            ),
          },
        },
        bodyLimit: MCP_BODY_LIMIT,
      },
      async (request, reply) => {
        if (!(request.body instanceof Buffer)) {
          throw new ApiError('unsupported_media_type', 'send JSON-RPC messages as application/json');
        }
        let message: unknown;
        try {
          message = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(request.body));
        } catch {
          return reply
            .code(400)
            .type(JSON_TYPE)
            .send({
              jsonrpc: '2.0',
              error: { code: ErrorCode.ParseError, message: 'Parse error: Invalid JSON' },
              id: null,
            });
        }
        // MCP dropped JSON-RPC batches (2025-06-18), and the SDK's own clients send none; a batch would
        // also carry up to a hundred unpaid list calls for the price of one read.
        if (Array.isArray(message)) {
          return reply
            .code(400)
            .type(JSON_TYPE)
            .send({
              jsonrpc: '2.0',
              error: {
                code: ErrorCode.InvalidRequest,
                message: 'Invalid Request: send one JSON-RPC message per request, not a batch',
              },
              id: null,
            });
        }
        const server = agentServer(agents, {
          charge: chargeOf(deps, request, reply),
          onError: (error) => request.log.error({ err: error }, 'an agent call failed'),
        });
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: true,
        });
        await server.connect(transport);
        reply.hijack();
        carryHeaders(reply);
        reply.raw.once('close', () => void server.close());
        await transport.handleRequest(request.raw, reply.raw, message);
      },
    );

    const methodNotAllowed = (_request: FastifyRequest, reply: FastifyReply) =>
      reply.code(405).header('allow', 'POST').type(JSON_TYPE).send(METHOD_NOT_ALLOWED);
    app.get(AGENT_PATH, { schema: notAllowedSchema('GET') }, methodNotAllowed);
    app.delete(AGENT_PATH, { schema: notAllowedSchema('DELETE') }, methodNotAllowed);
  };
