import '../../src/ops/tick-shape.js';
import { createServer } from 'node:http';
import { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import { GatewayDispatchEvents } from 'discord-api-types/v10';
import { WebSocketServer } from 'ws';
import { INTENTS, LARGE_THRESHOLD } from '../../src/discord/intents.js';
import { report, serveBenchProcess } from '../lib/child.js';
import { MARKER, MARKER_LENGTH, markerText } from '../lib/fanout-marker.js';

/**
 * The floor for socket fan-out: a bare `ws` server sending one buffer to every client for each
 * PRESENCE_UPDATE of user USER_ID it receives from Discord (a simulated one, TOKEN and API_URL), through
 * the gateway client the service uses (@discordjs/ws, same intents). The buffer is the frame the service
 * sends for the same update: its `d` is the service's (PRESENCE_JSON) with the update's fan-out marker put
 * in, built once per update.
 */
const d = process.env.PRESENCE_JSON ?? '{}';
const userId = process.env.USER_ID ?? '';
const template = markerText(0, 0);
if (!d.includes(template)) throw new Error('bare-ws: PRESENCE_JSON carries no fan-out marker');

const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false });
let seq = 0;
const manager = new WebSocketManager({
  token: process.env.TOKEN as string,
  intents: INTENTS,
  largeThreshold: LARGE_THRESHOLD,
  rest: new REST({ api: process.env.API_URL as string, version: '10' }).setToken(process.env.TOKEN as string),
});
manager.on(WebSocketShardEvents.Dispatch, (payload) => {
  if (payload.t !== GatewayDispatchEvents.PresenceUpdate || payload.d.user.id !== userId) return;
  const marker = payload.d.activities
    ?.map((activity) => activity.state ?? '')
    .find((state) => state.startsWith(MARKER) && state.length === MARKER_LENGTH);
  if (!marker) return;
  const frame = Buffer.from(
    `{"op":0,"seq":${++seq},"t":"PRESENCE_UPDATE","d":${d.replaceAll(template, marker)}}`,
  );
  // A text frame, as the service sends (clients check text frames are UTF-8).
  for (const client of wss.clients) client.send(frame, { binary: false });
});
serveBenchProcess(async () => {
  await manager.destroy({ reason: 'bench over' });
  for (const client of wss.clients) client.terminate();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
await manager.connect();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  report({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
