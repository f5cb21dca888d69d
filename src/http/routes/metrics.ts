import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Metrics } from '../../ops/metrics.js';
import { ApiError, sendError } from '../errors.js';
import { METRICS_SECURITY, TAGS } from '../openapi.js';
import { errorResponses } from '../schemas/envelope.js';

export interface MetricsRouteDeps {
  metrics: Metrics;
  /** `METRICS_TOKEN`: when set, a scrape must send `Authorization: Bearer <token>`. */
  token: string | null;
}

/** `GET /metrics`: the Prometheus text format, open unless a token is configured. */
export const metricsRoutes =
  (deps: MetricsRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const expected = deps.token === null ? null : digest(deps.token);
    const errors = errorResponses(['invalid_metrics_token']);
    app.get(
      '/metrics',
      {
        schema: {
          tags: [TAGS.operations],
          summary: 'Prometheus metrics',
          description:
            'What this node counts — presences, sockets, the Discord gateway, HTTP requests, the store, bot commands, rate limits — and the process’s own metrics, in Prometheus’s text format: docs/operations.md, section “Metrics”, lists them. Open unless the operator set `METRICS_TOKEN`; then the scrape sends it as `Authorization: Bearer <token>`. Rate limited per client with the probes, apart from reads (`RATE_LIMIT_READ` a minute), far above what a scraper asks.',
          security: METRICS_SECURITY,
          response: {
            200: {
              description: 'the metrics, in the text exposition format (`text/plain; version=0.0.4`)',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
            ...errors,
            401: {
              ...errors[401],
              headers: {
                'WWW-Authenticate': { type: 'string', description: '`Bearer realm="metrics"`' },
              },
            },
          },
        },
      },
      async (request, reply) => {
        if (expected !== null && !presents(request.headers.authorization, expected)) {
          return sendError(
            reply.header('www-authenticate', 'Bearer realm="metrics"'),
            new ApiError(
              'invalid_metrics_token',
              'send the METRICS_TOKEN as `Authorization: Bearer <token>`',
            ),
          );
        }
        const { text, contentType } = await deps.metrics.scrape();
        return reply.type(contentType).send(text);
      },
    );
  };

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Whether the header carries the token. The digests are compared, in constant time: equal lengths
 * whatever was sent, so neither the token's length nor its content leaks through timing.
 */
function presents(header: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return match !== null && timingSafeEqual(digest(match[1] as string), expected);
}
