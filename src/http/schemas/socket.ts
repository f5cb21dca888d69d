import { SOCKET_PATH } from '../../socket/gateway.js';
import { Close, HEARTBEAT_INTERVAL_MS, MAX_CLIENT_FRAME_BYTES, Op } from '../../socket/protocol.js';
import type { ErrorCode } from '../errors.js';
import { ERROR_CONDITIONS, errorEnvelope } from './envelope.js';

/**
 * `GET /socket` in the OpenAPI document. The socket is no Fastify route (socket/admission.ts takes the
 * upgrade off the HTTP server), and OpenAPI cannot model a WebSocket protocol: the document describes the
 * upgrade, sums the protocol up and sends readers to the API reference for the rest.
 */

/** The API reference's section on the socket protocol, as GitHub names its anchor. */
const SOCKET_SECTION = 'docs/api.md#websocket-socket';

const closes = Object.values(Close)
  .map(({ code, reason }) => `| ${code} | \`${reason}\` |`)
  .join('\n');

const description = `Upgrades to a WebSocket that speaks Lanyard's protocol, so Lanyard clients work unchanged. OpenAPI cannot describe the messages: see the API reference, section “WebSocket: \`/socket\`” (\`${SOCKET_SECTION}\`), for all of it. In short, every frame is JSON \`{op, d}\`:

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

/** An upgrade refused: answered in the envelope (socket/admission.ts), then the connection closes. */
function refusal(code: ErrorCode, when: string) {
  return {
    description: `\`${code}\`: ${when}`,
    content: { 'application/json': { schema: errorEnvelope([code]) } },
  };
}

const responses: Record<number, object> = {
  101: { description: 'Switching Protocols: the socket is open and sends Hello (op 1) first' },
  400: refusal('bad_request', 'not a WebSocket handshake (no `Sec-WebSocket-Key`, a version other than 13)'),
  404: refusal('not_found', 'a GET without the upgrade (there is no HTTP route here), or another method'),
  429: {
    ...refusal('rate_limited', 'as many sockets open from this IP as `SOCKETS_PER_IP` allows'),
    headers: {
      'Retry-After': {
        description: 'seconds to wait before trying again',
        schema: { type: 'integer' },
      },
    },
  },
  500: refusal('internal_error', ERROR_CONDITIONS.internal_error),
};

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
      responses,
    },
  },
};
