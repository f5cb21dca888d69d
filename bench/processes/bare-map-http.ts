import { createServer } from 'node:http';
import { report, serveBenchProcess } from '../lib/child.js';
import { benchUserId } from '../lib/workload.js';

/**
 * The runtime's own part of reading among many users: node:http answering GET /v1/users/<id> with a body
 * held in a Map of USERS bench users (ASCII JSON of BODY_BYTES, one string each, as the registry holds
 * presences), and nothing else. Against the same server holding a thousand, it shows what a heap of a
 * million held bodies costs node itself, which no code of the service's can save.
 */
const users = Number(process.env.USERS ?? 1_000);
const bodyBytes = Number(process.env.BODY_BYTES ?? 912);
const PREFIX = '/v1/users/';

const bodies = new Map<string, string>();
for (let n = 0; n < users; n++) {
  const id = benchUserId(n);
  const head = `{"success":true,"data":{"discord_user":{"id":"${id}","username":"bench_user_${n}"},"kv":{"pad":"`;
  const tail = '"}}}';
  const body = `${head}${'x'.repeat(Math.max(bodyBytes - head.length - tail.length, 0))}${tail}`;
  // Measuring flattens it: one string a user, as the service holds.
  Buffer.byteLength(body);
  bodies.set(id, body);
}

const server = createServer((request, response) => {
  const body = request.url?.startsWith(PREFIX) ? bodies.get(request.url.slice(PREFIX.length)) : undefined;
  if (body === undefined) {
    response.writeHead(404, { 'content-length': 0 });
    response.end();
    return;
  }
  response.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': body.length,
  });
  response.end(body, 'latin1');
});
server.keepAliveTimeout = 72_000;
serveBenchProcess(() => new Promise<void>((resolve) => server.close(() => resolve())));
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  report({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
