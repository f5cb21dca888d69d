import type { FastifyInstance } from 'fastify';

/** A JSON content type; parameters such as `; charset=utf-8` (what browsers and fetch add) are allowed. */
export const JSON_CONTENT_TYPE = /^application\/(?:[\w.-]+\+)?json(?:\s*;.*)?$/i;

/**
 * The routes of `app` take JSON bodies only, kept as bytes: each route parses its body itself (`jsonOf`),
 * once its key has been checked, and says what is wrong with it in its own error.
 */
export function takeJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_CONTENT_TYPE, { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );
}

/** The body as JSON; undefined when it is none: empty, not UTF-8, or not JSON. */
export function jsonOf(body: unknown): unknown {
  if (!(body instanceof Buffer)) return undefined;
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    return undefined;
  }
}
