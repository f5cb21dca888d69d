/**
 * Run as its own process by socket.test.ts: opens two sockets, one live and one waiting to reconnect to a
 * port nothing listens on, closes both, and then has nothing left to do. If close() left a timer or a
 * socket behind, the process would not exit.
 */
import WebSocket from 'ws';
import { PresentlyClient } from '../../src/client/index.js';

const [base, deadBase, userId] = process.argv.slice(2) as [string, string, string];

const live = new PresentlyClient({ baseUrl: base }).socket({
  WebSocket,
  subscribe: userId,
  compression: 'zlib_json',
});
await new Promise<void>((resolve) => live.on('init', () => resolve()));
await live.close();

const dead = new PresentlyClient({ baseUrl: deadBase }).socket({
  WebSocket,
  reconnectDelay: { minMs: 60_000, maxMs: 60_000 },
});
await new Promise<void>((resolve) =>
  dead.on('close', (close) => {
    if (close.reconnectInMs !== null) resolve();
  }),
);
await dead.close();
process.stdout.write('closed\n');
