import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import { pageContentSecurityPolicy } from '../../net/security-headers.js';
import { TAGS } from '../openapi.js';
import { errorResponses, RESPONSE_DESCRIPTION } from '../schemas/envelope.js';

export const OPENAPI_PATH = '/v1/openapi.json';
export const DOCS_PATH = '/docs';

/**
 * The docs page's scripts, styles and images all come from this service (the npm package's assets), and
 * it fetches nothing but the document and, for "Try it out", the API itself. It cannot be framed.
 */
export const DOCS_CONTENT_SECURITY_POLICY = pageContentSecurityPolicy("'none'");

/**
 * `GET /v1/openapi.json`, the OpenAPI document (openapi.ts), and `GET /docs`, Swagger UI showing it. The
 * page reads the same document from `/docs/json` (the UI plugin always points it there).
 */
export const docsRoutes: FastifyPluginAsync = async (app) => {
  // Built once, on the first request: every route is registered by then, and the document never changes.
  let document: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      schema: {
        tags: [TAGS.service],
        summary: 'This OpenAPI document',
        description: `OpenAPI 3.1, generated from the schemas the routes validate with; \`${DOCS_PATH}\` shows it.`,
        response: {
          200: {
            [RESPONSE_DESCRIPTION]: 'the OpenAPI document',
            type: 'object',
            properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' } },
            required: ['openapi', 'info', 'paths'],
          },
          ...errorResponses([]),
        },
      },
    },
    async (_request, reply) => {
      document ??= JSON.stringify(app.swagger());
      return reply.type('application/json; charset=utf-8').send(document);
    },
  );

  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    // Replaces the every-answer CSP (security-headers.ts) on the page and its assets.
    staticCSP: DOCS_CONTENT_SECURITY_POLICY,
    theme: { title: 'Presently API' },
    // BaseLayout: no top bar, whose only parts are Swagger's logo (an inline style the CSP refuses) and a box to
    // load other documents.
    uiConfig: { layout: 'BaseLayout', docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 0 },
  });
};
