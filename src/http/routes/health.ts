import type { FastifyPluginAsync } from 'fastify';
import { checkReadiness, type ReadinessCheck, type ShardReport, shardsAnswer } from '../../ops/readiness.js';
import { ApiError } from '../errors.js';
import { TAGS } from '../openapi.js';
import { errorResponses, successResponse } from '../schemas/envelope.js';

export interface HealthRouteDeps {
  /** What this node needs to take traffic: its role decides which (app.ts). */
  readiness: readonly ReadinessCheck[];
  /** Shutdown has begun: ready answers 503 so load balancers stop sending. */
  draining(): boolean;
  /** The gateway's shards, on a node that has one (roles `all`, `ingest`). */
  shards?(): ShardReport[];
}

const healthSchema = {
  type: 'object',
  properties: {
    status: { const: 'ok' },
    uptime_seconds: { type: 'integer', minimum: 0, description: 'whole seconds since the process started' },
  },
  required: ['status', 'uptime_seconds'],
  additionalProperties: false,
} as const;

/** The checks, by role (app.ts builds the list). */
const READINESS_CHECKS =
  'The checks: `store` (every role: SQLite or Redis answers within a second), `gateway` (roles `all` and `ingest`: every shard has a live Discord session, every member list has been loaded once, and none waits on Discord’s rate limit for listing a guild), `replica` (role `api`, and `all` with Redis: every shared presence has been read from Redis).';

const readySchema = {
  type: 'object',
  properties: {
    status: { const: 'ready' },
    checks: {
      type: 'object',
      description: 'each check of this node’s role, by name (`store`, `gateway`, `replica`)',
      additionalProperties: { const: 'ok' },
    },
    shards: {
      type: 'array',
      description:
        'each Discord gateway shard of this node (roles `all`, `ingest`): `ready` (a live session), `resuming` (disconnected, its session kept: nothing is missed) or `identifying` (no session: its users are stale until listed again); `last_event_ms`, how long ago Discord last sent it a dispatch or a heartbeat acknowledgement, null before any',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 0 },
          state: { enum: ['ready', 'resuming', 'identifying'] },
          last_event_ms: { type: ['integer', 'null'], minimum: 0 },
        },
        required: ['id', 'state', 'last_event_ms'],
        additionalProperties: false,
      },
    },
  },
  required: ['status', 'checks'],
  additionalProperties: false,
} as const;

/**
 * `GET /v1/health`: 200 while the process runs, and nothing else is looked at (a liveness probe must not
 * fail, and the process be restarted, because Discord or Redis is away). `GET /v1/ready`: 200 when the
 * node can serve what it is for, 503 `not_ready` naming the checks that failed.
 */
export const healthRoutes =
  (deps: HealthRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/v1/health',
      {
        schema: {
          tags: [TAGS.operations],
          summary: 'Liveness: the process runs',
          description:
            'For a liveness probe: 200 as long as the process runs. Nothing else is looked at, so Discord or the store being away never fails it (restarting would not bring them back). Rate limited per client apart from reads (`RATE_LIMIT_READ` a minute), far above what a probe asks.',
          response: {
            200: successResponse('the process runs', healthSchema),
            ...errorResponses([]),
          },
        },
      },
      async () => ({
        success: true,
        data: { status: 'ok', uptime_seconds: Math.floor(process.uptime()) },
      }),
    );

    app.get(
      '/v1/ready',
      {
        schema: {
          tags: [TAGS.operations],
          summary: 'Readiness: the node can serve what it is for',
          description: `For a readiness probe or a load balancer's health check: 200 when every check of this node's role passes, \`503 not_ready\` naming the failed ones otherwise, and while the node shuts down. ${READINESS_CHECKS} Rate limited per client apart from reads (\`RATE_LIMIT_READ\` a minute), far above what a probe asks.`,
          response: {
            200: successResponse('every check passes', readySchema),
            ...errorResponses(['not_ready']),
          },
        },
      },
      async () => {
        if (deps.draining()) throw new ApiError('not_ready', 'not ready: shutting down');
        const report = await checkReadiness(deps.readiness);
        if (!report.ready) throw new ApiError('not_ready', `not ready: ${report.problems.join('; ')}`);
        const shards = deps.shards?.();
        return {
          success: true,
          data: {
            status: 'ready',
            checks: report.checks,
            ...(shards ? { shards: shardsAnswer(shards, Date.now()) } : {}),
          },
        };
      },
    );
  };
