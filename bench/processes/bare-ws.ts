import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { report } from '../lib/child.js';

/**
 * The floor to compare socket fan-out with: a bare `ws` server broadcasting one buffer to every client,
 * built once per update from the same presence JSON the service sends, with the same fields changed.
 */
const json = process.env.PRESENCE_JSON ?? '{}';
const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false });
process.on('message', (message: { type: string; seq?: number }) => {
  if (message.type !== 'update') return;
  const kv = `"kv":{"seq":"${message.seq}","t":"${Date.now()}"}`;
  const presence = json.replace(/"kv":\{[^}]*\}/, kv);
  const frame = Buffer.from(`{"op":0,"seq":${message.seq},"t":"PRESENCE_UPDATE","d":${presence}}`);
  for (const client of wss.clients) client.send(frame);
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  report({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
process.once('SIGTERM', () => {
  for (const client of wss.clients) client.terminate();
  server.close(() => process.exit(0));
});
