import type { FastifyPluginAsync } from 'fastify';
import {
  DEFAULT_LAYOUT,
  DEFAULT_THEME,
  type EmbedOptions,
  fieldsOf,
  LAYOUTS,
  layoutOf,
  MAX_FIELDS,
  SCRIPT_NAME,
  THEMES,
  themeOf,
} from '../../embed/options.js';
import { lastQueryValue } from '../../query-value.js';
import { embedBundle } from '../embed/bundle.js';
import { embedPagePolicy, renderEmbedPage } from '../embed/page.js';
import { ApiError } from '../errors.js';
import { bodyEtag, noneMatch } from '../etag.js';
import { TAGS } from '../openapi.js';
import { emptyResponse, errorResponses } from '../schemas/envelope.js';
import { userIdFrom, userIdParams } from './users.js';

const EMBED_SCRIPT_PATH = `/${SCRIPT_NAME}`;

/**
 * embed.js and the iframe page keep one address whatever their version: browsers and proxies keep them an
 * hour, then use the copy they hold for up to a day while they check it again (the ETag makes that check a
 * 304).
 */
export const EMBED_CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400';

/** Pages of any origin load the script, and frame the page, however strict their own isolation. */
const CROSS_ORIGIN = { 'cross-origin-resource-policy': 'cross-origin' } as const;

export interface EmbedRouteDeps {
  /** `DISCORD_CDN_URL`: the avatars the element shows come from there. */
  cdnUrl: string;
}

/** The page's options from its query, as the element reads its attributes; one it would not take is a 400. */
function pageOptions(query: unknown): EmbedOptions {
  const problems: string[] = [];
  const theme = themeOf(lastQueryValue(query, 'theme'));
  if (theme === null) problems.push(`theme is one of ${THEMES.join(', ')}`);
  const layout = layoutOf(lastQueryValue(query, 'layout'));
  if (layout === null) problems.push(`layout is one of ${LAYOUTS.join(', ')}`);
  const { fields, invalid, extra } = fieldsOf(lastQueryValue(query, 'fields'));
  if (extra > 0) problems.push(`at most ${MAX_FIELDS} fields`);
  if (invalid.length > 0) {
    problems.push(
      `fields are KV keys (letters, digits, underscores), comma-separated: ${JSON.stringify(invalid[0]?.slice(0, 40))} is not one`,
    );
  }
  if (problems.length > 0) throw new ApiError('invalid_query', problems.join('; '));
  return { theme: theme ?? DEFAULT_THEME, layout: layout ?? DEFAULT_LAYOUT, fields };
}

const pageQuery = {
  type: 'object',
  properties: {
    theme: {
      type: 'string',
      enum: [...THEMES],
      description: `the colours; \`auto\` (the default) follows the reader’s system setting`,
    },
    layout: {
      type: 'string',
      enum: [...LAYOUTS],
      description: 'a card with everything (`full`, the default), one row (`compact`), or a pill (`badge`)',
    },
    fields: {
      type: 'string',
      description: 'KV keys to show, comma-separated, in that order (`full` layout)',
      examples: ['mood,location'],
    },
  },
} as const;

/**
 * `GET /embed.js`: the `<presently-presence>` element (src/embed/), for any site's pages. `GET
 * /v1/users/:id/embed`: the element alone on a page, for an `<iframe>`. Both are reads of the read budget.
 */
export const embedRoutes =
  (deps: EmbedRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const policy = embedPagePolicy(deps.cdnUrl);

    app.get(
      EMBED_SCRIPT_PATH,
      {
        schema: {
          tags: [TAGS.embed],
          summary: 'The live presence element’s script',
          description:
            'A script without dependencies that defines `<presently-presence user="…">`: the presence, live over Server-Sent Events (polling where a stream cannot be had), in a shadow root, under any page’s Content-Security-Policy. Its attributes are `user`, `theme`, `layout`, `fields` and `base`. Any origin may load it (`Access-Control-Allow-Origin: *`, `Cross-Origin-Resource-Policy: cross-origin`); it carries an `ETag` and is kept an hour.',
          response: {
            200: {
              description: 'the script, minified',
              content: { 'text/javascript': { schema: { type: 'string' } } },
            },
            304: emptyResponse('the script has not changed since the `If-None-Match` ETag'),
            ...errorResponses([]),
          },
        },
      },
      async (request, reply) => {
        const { body, etag } = await embedBundle();
        reply.headers(CROSS_ORIGIN).header('cache-control', EMBED_CACHE_CONTROL).header('etag', etag);
        if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
        return reply.type('text/javascript; charset=utf-8').send(body);
      },
    );

    app.get(
      '/v1/users/:id/embed',
      {
        schema: {
          tags: [TAGS.embed],
          summary: 'The live presence element as a page, for an iframe',
          description:
            'An HTML page holding `<presently-presence>` alone, transparent and without margins, for sites that allow no script but frames. Any site may frame it (`Content-Security-Policy: … frame-ancestors *`); the page loads nothing but embed.js, the reads of this service and the presence’s images. A user not monitored, or private, is a page that says there is no presence to show.',
          params: userIdParams,
          documentedQuerystring: pageQuery,
          response: {
            200: {
              description: 'the page',
              content: { 'text/html': { schema: { type: 'string' } } },
            },
            304: emptyResponse('the page has not changed since the `If-None-Match` ETag'),
            ...errorResponses(['invalid_user_id', 'invalid_query']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const page = renderEmbedPage(id, pageOptions(request.query));
        const etag = bodyEtag(page);
        reply
          .headers(CROSS_ORIGIN)
          .header('content-security-policy', policy)
          .header('cache-control', EMBED_CACHE_CONTROL)
          .header('etag', etag);
        if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
        return reply.type('text/html; charset=utf-8').send(page);
      },
    );
  };
