import { createServer } from 'node:http';
import { report, serveBenchProcess } from './child.js';
import { benchUserId } from './workload.js';

/**
 * What the bare read servers (bare-map-http, bare-arena-http) hold: USERS bench users' REST bodies, ASCII
 * JSON of BODY_BYTES each, as the registry holds presences.
 */
export const BARE_USERS = Number(process.env.USERS ?? 1_000);
const BODY_BYTES = Number(process.env.BODY_BYTES ?? 912);

/** Bench user n's body: their id and name, padded to BODY_BYTES. */
export function bareBody(n: number): string {
  const head = `{"success":true,"data":{"discord_user":{"id":"${benchUserId(n)}","username":"bench_user_${n}"},"kv":{"pad":"`;
  const tail = '"}}}';
  return `${head}${'x'.repeat(Math.max(BODY_BYTES - head.length - tail.length, 0))}${tail}`;
}

const PREFIX = '/v1/users/';

/** node:http answering GET /v1/users/<id> with `bodyOf(id)`, 404 when it has none; nothing else. */
export function serveBodies(bodyOf: (id: string) => string | Buffer | undefined): void {
  const server = createServer((request, response) => {
    const body = request.url?.startsWith(PREFIX) ? bodyOf(request.url.slice(PREFIX.length)) : undefined;
    if (body === undefined) {
      response.writeHead(404, { 'content-length': 0 });
      response.end();
      return;
    }
    response.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': body.length,
    });
    if (typeof body === 'string') response.end(body, 'latin1');
    else response.end(body);
  });
  // The service's keep-alive timeout (Fastify's default), so both keep wrk's connections the same way.
  server.keepAliveTimeout = 72_000;
  serveBenchProcess(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    report({ type: 'ready', url: `http://127.0.0.1:${port}` });
  });
}
