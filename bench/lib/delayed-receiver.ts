import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { nowMicros, readMarker } from './fanout-marker.js';

/** A delivery as it arrived: which webhook (the URL's path), the change it carries, and when. */
export interface Arrival {
  path: string;
  seq: number;
  /** When the change was sent to the simulated Discord and when its delivery arrived (wall clock, µs). */
  sentMicros: number;
  arrivedMicros: number;
}

export interface DelayedReceiver {
  /** `http://127.0.0.1:<port>`: a webhook's URL is this and a path. */
  readonly url: string;
  /** How long each delivery is held before its 200; 0 answers at once. */
  delayMs: number;
  readonly arrivals: Arrival[];
  /** The most deliveries held at once so far. */
  readonly mostHeld: number;
  /** Answers every delivery held now, and every later one at once. */
  answerAll(): void;
  close(): Promise<void>;
}

/**
 * A user's webhook receiver on loopback, answering each delivery after `delayMs`, as a slow receiver
 * holds what is sent to it. Each delivery's body carries a fan-out marker in the user's custom status,
 * so its arrival is timed from when the change was sent to Discord.
 */
export async function startDelayedReceiver(): Promise<DelayedReceiver> {
  const held = new Map<ServerResponse, NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  const arrivals: Arrival[] = [];
  let mostHeld = 0;
  const answer = (response: ServerResponse) => {
    clearTimeout(held.get(response));
    held.delete(response);
    response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const arrivedMicros = nowMicros();
      const marker = readMarker(Buffer.concat(chunks));
      if (marker) arrivals.push({ path: request.url ?? '', ...marker, arrivedMicros });
      if (receiver.delayMs <= 0) return answer(response);
      held.set(
        response,
        setTimeout(() => answer(response), receiver.delayMs),
      );
      mostHeld = Math.max(mostHeld, held.size);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const receiver: DelayedReceiver = {
    url: `http://127.0.0.1:${port}`,
    delayMs: 0,
    arrivals,
    get mostHeld() {
      return mostHeld;
    },
    answerAll: () => {
      receiver.delayMs = 0;
      for (const response of [...held.keys()]) answer(response);
    },
    close: async () => {
      for (const timer of held.values()) clearTimeout(timer);
      held.clear();
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
  return receiver;
}
