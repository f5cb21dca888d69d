import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP relay that forwards everything until told to lose one answer: the next message from a client
 * holding a marker reaches the server, and the connection is dropped as the server answers it. To the
 * client it is a server that crashed after doing the work and before saying so.
 */
export interface AnswerLosingRelay {
  readonly port: number;
  /** Resolves once the answer to the next message holding `marker` has been lost. */
  loseAnswerTo(marker: string): Promise<void>;
  close(): Promise<void>;
}

export async function startAnswerLosingRelay(target: {
  host: string;
  port: number;
}): Promise<AnswerLosingRelay> {
  const sockets = new Set<Socket>();
  let armed: { marker: Buffer; lost: () => void } | null = null;
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    let losing: (() => void) | null = null;
    client.on('data', (chunk: Buffer) => {
      if (armed && chunk.includes(armed.marker)) {
        losing = armed.lost;
        armed = null;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (losing === null) {
        client.write(chunk);
        return;
      }
      client.destroy();
      upstream.destroy();
      losing();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    loseAnswerTo: (marker) =>
      new Promise((lost) => {
        armed = { marker: Buffer.from(marker), lost };
      }),
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
