import '../../src/ops/tick-shape.js';
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { onMessage, report, serveBenchProcess } from '../lib/child.js';
import { serveMemoryQuestions } from '../lib/memory.js';

/**
 * The floor for holding idle sockets: a bare `ws` server (node:http, no per-message deflate, as the
 * service's gateway) that accepts sockets and keeps them, reading what they send and answering nothing.
 * It answers `memory` (started with MEMORY_FLAGS) and `sockets`: how many it holds.
 */
const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false });
serveMemoryQuestions();
onMessage('sockets', () => report({ type: 'sockets', open: wss.clients.size }));
serveBenchProcess(() => {
  for (const client of wss.clients) client.terminate();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  report({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
