import '../../src/ops/tick-shape.js';
import { createServer } from 'node:http';
import { report, serveBenchProcess } from '../lib/child.js';

/**
 * The floor for REST reads: node:http answering precomputed bytes, nothing else. HEADERS (JSON) are the
 * service's own answer's, so both send the same bytes; node adds Date, Connection and Keep-Alive itself.
 */
const body = Buffer.from(process.env.BODY ?? '{}');
const given = JSON.parse(process.env.HEADERS ?? '{}') as Record<string, string>;
const headers: Record<string, string | number> = {
  'content-type': process.env.CONTENT_TYPE ?? 'application/json; charset=utf-8',
  ...Object.fromEntries(
    Object.entries(given).filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name)),
  ),
  'content-length': body.length,
};
const server = createServer((_request, response) => {
  response.writeHead(200, headers);
  response.end(body);
});
// The service's keep-alive timeout (Fastify's default), so both keep wrk's connections the same way.
server.keepAliveTimeout = 72_000;
serveBenchProcess(() => new Promise<void>((resolve) => server.close(() => resolve())));
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  report({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
