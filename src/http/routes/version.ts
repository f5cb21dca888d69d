import type { FastifyPluginAsync } from 'fastify';
import type { ChangelogEntry } from '../../changelog.js';

export interface VersionInfo {
  version: string;
  changelog: ChangelogEntry[];
}

/** `GET /v1/version`: package.json's version and the CHANGELOG, newest first. */
export const versionRoutes =
  (info: VersionInfo): FastifyPluginAsync =>
  async (app) => {
    const body = JSON.stringify({ success: true, data: info });
    app.get('/v1/version', async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send(body),
    );
  };
