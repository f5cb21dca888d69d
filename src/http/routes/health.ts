import type { FastifyPluginAsync } from 'fastify';
import { checkReadiness, type ReadinessCheck } from '../../ops/readiness.js';
import { ApiError } from '../errors.js';

export interface HealthRouteDeps {
  /** What this node needs to take traffic: its role decides which (app.ts). */
  readiness: readonly ReadinessCheck[];
  /** Shutdown has begun: ready answers 503 so load balancers stop sending. */
  draining(): boolean;
}

/**
 * `GET /v1/health`: 200 while the process runs, and nothing else is looked at (a liveness probe must not
 * fail, and the process be restarted, because Discord or Redis is away). `GET /v1/ready`: 200 when the
 * node can serve what it is for, 503 `not_ready` naming the checks that failed.
 */
export const healthRoutes =
  (deps: HealthRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.get('/v1/health', async () => ({
      success: true,
      data: { status: 'ok', uptime_seconds: Math.floor(process.uptime()) },
    }));

    app.get('/v1/ready', async () => {
      if (deps.draining()) throw new ApiError('not_ready', 'not ready: shutting down');
      const report = await checkReadiness(deps.readiness);
      if (!report.ready) throw new ApiError('not_ready', `not ready: ${report.problems.join('; ')}`);
      return { success: true, data: { status: 'ready', checks: report.checks } };
    });
  };
