import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A delivery as the receiver got it. */
export interface Received {
  headers: IncomingHttpHeaders;
  /** The raw body, as signed. */
  raw: string;
  body: { type: string; user_id: string; timestamp: number; data: unknown };
  deliveryId: string;
  /** The sender's port: which connection, so which process, it came over. */
  remotePort: number;
}

/** What the receiver does with the nth request (from 0): answer with a status, or never answer. */
export type Respond = (received: Received, index: number) => number | 'hang';

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` (WEBHOOKS_ALLOW_PRIVATE lets webhooks reach it). */
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  /** TCP connections made to it, whatever came over them. */
  readonly connections: number;
  respond: Respond;
  /** Resolves with the nth request (from 0) once it has arrived. */
  nth(index: number): Promise<Received>;
  /** Requests held unanswered ('hang') now. */
  readonly held: number;
  /** Answers every request held so far with `status`. */
  release(status?: number): void;
  close(): Promise<void>;
}

/** A loopback HTTP server taking deliveries, the way a user's receiver would. */
export async function startWebhookReceiver(respond: Respond = () => 200): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const waiting = new Map<number, (received: Received) => void>();
  const hanging = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const entry: Received = {
        headers: request.headers,
        raw,
        body: JSON.parse(raw) as Received['body'],
        deliveryId: String(request.headers['presently-delivery']),
        remotePort: request.socket.remotePort ?? 0,
      };
      const index = received.push(entry) - 1;
      const answer = receiver.respond(entry, index);
      if (answer === 'hang') hanging.add(response);
      else response.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
      waiting.get(index)?.(entry);
    });
  });
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    get connections() {
      return connections;
    },
    get held() {
      return hanging.size;
    },
    release: (status = 200) => {
      for (const response of hanging) response.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
      hanging.clear();
    },
    respond,
    nth: (index) => {
      const arrived = received[index];
      if (arrived) return Promise.resolve(arrived);
      return new Promise((resolve) => waiting.set(index, resolve));
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      hanging.clear();
      server.close();
      await once(server, 'close');
    },
  };
  return receiver;
}

/** Whether `Presently-Signature` signs the raw body with `secret`, as a receiver checks it. */
export function signedWith(secret: string, received: Received): boolean {
  const header = String(received.headers['presently-signature']);
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!match) return false;
  const [, t, v1] = match as unknown as [string, string, string];
  const expected = createHmac('sha256', secret).update(`${t}.${received.raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(v1, 'hex'));
}
