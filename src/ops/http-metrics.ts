import type { FastifyInstance } from 'fastify';
import { type Metrics, UNMATCHED_ROUTE } from './metrics.js';

/**
 * Counts every request Fastify answers, by the route's pattern (`/v1/users/:id`, never the URL sent, so
 * label values stay few) and status, and times it. The fast path counts its own (fast-read.ts).
 */
export function countRequests(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
