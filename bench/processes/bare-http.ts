import { createServer } from 'node:http';
import { report } from '../lib/child.js';

/** The floor to compare REST reads with: node:http answering precomputed bytes, nothing else. */
const body = Buffer.from(process.env.BODY ?? '{}');
const server = createServer((_request, response) => {
  response.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': body.length,
    'access-control-allow-origin': '*',
  });
  response.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  report({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
