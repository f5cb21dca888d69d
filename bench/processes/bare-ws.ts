import '../../src/ops/tick-shape.js';
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { onMessage, report, serveBenchProcess } from '../lib/child.js';
import { markerText, nowMicros } from '../lib/fanout-marker.js';

/**
 * The floor for socket fan-out: a bare `ws` server sending one buffer to every client. The buffer is
 * the frame the service sends for the same update (its `d` is the service's, with the marker changed
 * the same way), built once per update.
 */
const d = process.env.PRESENCE_JSON ?? '{}';
const template = markerText(0, 0);
if (!d.includes(template)) throw new Error('bare-ws: PRESENCE_JSON carries no fan-out marker');

const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false });
onMessage<{ type: string; seq: number }>('update', ({ seq }) => {
  const presence = d.replaceAll(template, markerText(seq, nowMicros()));
  const frame = Buffer.from(`{"op":0,"seq":${seq},"t":"PRESENCE_UPDATE","d":${presence}}`);
  // A text frame, as the service sends (clients check text frames are UTF-8).
  for (const client of wss.clients) client.send(frame, { binary: false });
});
serveBenchProcess(() => {
  for (const client of wss.clients) client.terminate();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  report({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
