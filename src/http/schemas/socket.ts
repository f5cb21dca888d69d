import { SOCKET_PATH } from '../../socket/gateway.js';
import { Close, HEARTBEAT_INTERVAL_MS, MAX_CLIENT_FRAME_BYTES, Op } from '../../socket/protocol.js';
import { errorResponses, RESPONSE_DESCRIPTION } from './envelope.js';

/**
 * `GET /socket` in the OpenAPI document. The socket is no Fastify route (socket/gateway.ts takes the
 * upgrade off the HTTP server), and OpenAPI cannot model a WebSocket protocol: the document describes the
 * upgrade, sums the protocol up and sends readers to the README for the rest.
 */

/** The README section on the socket protocol, as GitHub names its anchor. */
export const README_SOCKET_SECTION = 'README.md#websocket-socket';

const closes = Object.values(Close)
  .map(({ code, reason }) => `| ${code} | \`${reason}\` |`)
  .join('\n');

const description = `Upgrades to a WebSocket that speaks Lanyard's protocol, so Lanyard clients work unchanged. OpenAPI cannot describe the messages: see the README, section “WebSocket: \`/socket\`” (\`${README_SOCKET_SECTION}\`), for all of it. In short, every frame is JSON \`{op, d}\`:

| op | name | direction |
|---|---|---|
| ${Op.Event} | Event (\`t\`: \`INIT_STATE\`, \`PRESENCE_UPDATE\`) | server → client |
| ${Op.Hello} | Hello \`{heartbeat_interval: ${HEARTBEAT_INTERVAL_MS}}\` | server → client, on connect |
| ${Op.Initialize} | Initialize: \`subscribe_to_id\` · \`subscribe_to_ids\` · \`subscribe_to_all\` | client → server |
| ${Op.Heartbeat} | Heartbeat | client → server |
| ${Op.Unsubscribe} | Unsubscribe: \`unsubscribe_from_id\` · \`_ids\` · \`_all\` | client → server |

The server closes a socket with:

| close | reason |
|---|---|
${closes}
| 1009 | a client frame over ${MAX_CLIENT_FRAME_BYTES / 1024} KiB |`;

export const socketPathItem = {
  [SOCKET_PATH]: {
    get: {
      tags: ['Socket'],
      summary: 'Open the real-time socket (WebSocket upgrade)',
      description,
      parameters: [
        {
          in: 'query',
          name: 'compression',
          required: false,
          description: 'every frame, Hello included, is zlib-compressed JSON sent as a binary message',
          schema: { type: 'string', enum: ['zlib_json'] },
        },
        {
          in: 'header',
          name: 'Upgrade',
          required: true,
          description: 'with `Connection: Upgrade`, `Sec-WebSocket-Key` and `Sec-WebSocket-Version: 13`',
          schema: { type: 'string', enum: ['websocket'] },
        },
      ],
      responses: {
        101: { description: 'Switching Protocols: the socket is open and sends Hello (op 1) first' },
        ...errorResponseContents([
          'not_found',
          // A handshake ws refuses: no Sec-WebSocket-Key, another version.
          'bad_request',
          // More than SOCKETS_PER_IP sockets from one address.
          'rate_limited',
        ]),
      },
    },
  },
};

/**
 * errorResponses as OpenAPI response objects: route schemas go through @fastify/swagger, which makes
 * them into these; this path is written as OpenAPI directly.
 */
function errorResponseContents(codes: Parameters<typeof errorResponses>[0]) {
  const responses: Record<number, object> = {};
  for (const [status, schema] of Object.entries(errorResponses(codes))) {
    const {
      [RESPONSE_DESCRIPTION]: description,
      headers,
      ...body
    } = schema as {
      [RESPONSE_DESCRIPTION]: string;
      headers?: Record<string, { description: string }>;
    };
    responses[Number(status)] = {
      description,
      ...(headers
        ? {
            headers: Object.fromEntries(
              Object.entries(headers).map(([name, { description: about, ...header }]) => [
                name,
                { description: about, schema: header },
              ]),
            ),
          }
        : {}),
      content: { 'application/json': { schema: body } },
    };
  }
  return responses;
}
