import type { FastifyPluginAsync } from 'fastify';
import type { VersionInfo } from '../../version.js';
import { TAGS } from '../openapi.js';
import { errorResponses, successResponse } from '../schemas/envelope.js';

const versionSchema = {
  type: 'object',
  properties: {
    version: { type: 'string', description: "the service's version" },
    changelog: {
      type: 'array',
      description: 'releases, newest first',
      items: {
        type: 'object',
        properties: {
          version: { type: 'string' },
          date: { type: 'string', description: 'YYYY-MM-DD; empty while unreleased' },
          changes: { type: 'array', items: { type: 'string' } },
        },
        required: ['version', 'date', 'changes'],
        additionalProperties: false,
      },
    },
  },
  required: ['version', 'changelog'],
  additionalProperties: false,
} as const;

/** `GET /v1/version`: package.json's version and the CHANGELOG, newest first. */
export const versionRoutes =
  (info: VersionInfo): FastifyPluginAsync =>
  async (app) => {
    const body = JSON.stringify({ success: true, data: info });
    app.get(
      '/v1/version',
      {
        schema: {
          tags: [TAGS.service],
          summary: 'Version and changelog',
          description: "The service's version (package.json's) and its changelog.",
          response: { 200: successResponse('the version', versionSchema), ...errorResponses([]) },
        },
      },
      async (_request, reply) => reply.type('application/json; charset=utf-8').send(body),
    );
  };
