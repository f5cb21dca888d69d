import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP relay a test can cut, as a server going away looks to its clients, or hang, as a server that holds
 * its connections and answers nothing looks; and restore, on the same port.
 */
export interface TcpProxy {
  readonly port: number;
  /** Drops every connection through it and refuses new ones. */
  cut(): Promise<void>;
  /** Keeps every connection, and takes new ones, but forwards nothing either way. */
  hang(): void;
  /** Takes connections again after `cut`; forwards again, what was held first, after `hang`. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs = new Set<Pair>();
  let hung = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const forward = ({ client, upstream }: Pair) => client.pipe(upstream).pipe(client);
  const hold = ({ client, upstream }: Pair) => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  let server: Server;
  const listen = async (port: number): Promise<number> => {
    server = createServer((client) => {
      const pair = { client, upstream: connect(target.port, target.host) };
      track(client);
      track(pair.upstream);
      pairs.add(pair);
      client.on('close', () => {
        pairs.delete(pair);
        pair.upstream.destroy();
      });
      pair.upstream.on('close', () => client.destroy());
      if (hung) hold(pair);
      else forward(pair);
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return (server.address() as AddressInfo).port;
  };
  const port = await listen(0);
  const cut = async (): Promise<void> => {
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    port,
    cut,
    hang: () => {
      hung = true;
      for (const pair of pairs) hold(pair);
    },
    restore: async () => {
      if (hung) {
        hung = false;
        for (const pair of pairs) forward(pair);
      } else await listen(port);
    },
    close: cut,
  };
}
