import type { FastifyPluginAsync } from 'fastify';
import type { InstallLinks } from '../../discord/install-links.js';
import { pageContentSecurityPolicy } from '../../net/security-headers.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import { isSnowflake } from '../../presence/snowflake.js';
import { prefersHtml } from '../accept.js';
import { embedImageSources } from '../embed/page.js';
import { TAGS } from '../openapi.js';
import { loadPageAssets, PAGE_ASSET_PREFIX } from '../page/assets.js';
import { type PageExample, renderPage } from '../page/render.js';
import { errorResponses, successEnvelope } from '../schemas/envelope.js';
import { userIdParams } from './users.js';

/**
 * The policy of the pages in the landing page's style (this one, `/privacy`, `/terms`), in place of the
 * API's `default-src 'none'`: its stylesheet and script from here and nothing inline, the socket and the
 * card from here (`connect-src 'self'` takes the same-origin `ws:`/`wss:` URL too), `data:` for the
 * favicon. Nothing from anywhere else.
 */
export const PAGE_CONTENT_SECURITY_POLICY = pageContentSecurityPolicy("'self'");

/**
 * The landing page's: PAGE_CONTENT_SECURITY_POLICY, and the images of its live `<presently-presence>`
 * preview (an avatar on Discord's CDN, album art), as the iframe page allows them.
 */
export function homeContentSecurityPolicy(cdnUrl: string): string {
  return pageContentSecurityPolicy("'self'", embedImageSources(cdnUrl));
}

/** Lanyard's `info` sentence, about this service. */
export const INFO =
  'Presently provides Discord presences as an API and WebSocket, Lanyard-compatible, with history, stats ' +
  'and status cards. Open this address in a browser for a live viewer; the API is described at /docs.';

/** The stylesheet and script carry their content's hash in their names: a changed file is a new URL. */
const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';

export interface HomeRouteDeps {
  view: PresenceView;
  version: string;
  /** One-click examples on the page: the demo's users in demo mode (opened on the featured one), none otherwise. */
  examples: readonly PageExample[];
  /** `DISCORD_INVITE_URL`: Lanyard's `discord_invite`, null when this instance has no community server. */
  inviteUrl: string | null;
  /** Where to add the bot; null until it has connected (or on a node without it). */
  installLinks(): InstallLinks | null;
  /** Demo mode: the page offers "try the bot". */
  tryBot: boolean;
  /** `DISCORD_CDN_URL`, where the preview's avatars come from. */
  cdnUrl: string;
}

/** Lanyard's info, in the envelope: what a program gets from `GET /`. */
const infoSchema = successEnvelope({
  type: 'object',
  properties: {
    info: { type: 'string', description: 'what this service is, in a sentence' },
    monitored_user_count: {
      type: 'integer',
      minimum: 0,
      description: 'how many users this instance monitors (share a server with its bot)',
    },
    discord_invite: {
      type: ['string', 'null'],
      description:
        'the instance’s community server (`DISCORD_INVITE_URL`, also `GET /discord`); null if none',
    },
  },
  required: ['info', 'monitored_user_count', 'discord_invite'],
  additionalProperties: false,
});

const homeSchema = {
  tags: [TAGS.service],
  summary: 'The landing page, or Lanyard’s info',
  description:
    'One URL, two answers, chosen by `Accept` (`Vary: Accept`, `Cache-Control: no-cache`): a browser, which prefers `text/html`, gets the landing page with a live viewer of any monitored user; anything else — no `Accept`, `*/*`, JSON — gets Lanyard’s info in the envelope, so Lanyard clients read it unchanged. A tie goes to JSON.',
  // Read by the route itself, never refused: a bad id is the page's to explain (see below).
  documentedQuerystring: {
    type: 'object',
    properties: {
      id: {
        type: 'string',
        description:
          'page only: the user to show in the viewer, a Discord user id (without it, a demo shows its featured user); one that is not is named on the page, never a 400',
        examples: userIdParams.properties.id.examples,
      },
    },
  },
  response: {
    200: {
      description: 'the landing page (HTML), or Lanyard’s info (JSON), as `Accept` prefers',
      content: {
        'text/html': { schema: { type: 'string', description: 'the landing page' } },
        'application/json': { schema: infoSchema },
      },
    },
    ...errorResponses([]),
  },
};

/** `?id=` as the browser sent it; a repeated one counts once. */
function requestedId(query: unknown): string | null {
  const value = (query as Record<string, unknown>).id;
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' && first.trim() !== '' ? first.trim() : null;
}

/**
 * `GET /`: a person's browser gets the landing page with the live viewer; anything else (no Accept,
 * `*\/*`, JSON) gets Lanyard's info in the envelope, `{info, monitored_user_count, discord_invite}`, so
 * Lanyard clients read it unchanged. `GET /page/<file>`: the page's stylesheet and script.
 */
export const homeRoutes =
  (deps: HomeRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const assets = loadPageAssets();
    const files = new Map([assets.stylesheet, assets.script].map((asset) => [asset.path, asset]));
    const featured = deps.examples.find((example) => example.featured);
    const policy = homeContentSecurityPolicy(deps.cdnUrl);

    app.get('/', { schema: homeSchema }, async (request, reply) => {
      // Both answers change with what is monitored; one URL, two representations.
      reply.header('vary', 'Accept').header('cache-control', 'no-cache');
      if (!prefersHtml(request.headers.accept)) {
        return reply.type('application/json; charset=utf-8').send({
          success: true,
          data: { info: INFO, monitored_user_count: deps.view.size, discord_invite: deps.inviteUrl },
        });
      }
      // A bad id is the page's to explain, not a 400 in JSON: this is a person typing into a form.
      const asked = requestedId(request.query);
      const valid = asked !== null && isSnowflake(asked);
      const page = renderPage(assets, {
        origin: `${request.protocol}://${request.host || 'localhost'}`,
        id: asked === null ? (featured?.id ?? null) : valid ? asked : null,
        rejected: valid ? null : asked,
        monitoredUserCount: deps.view.size,
        version: deps.version,
        examples: deps.examples,
        install: deps.installLinks(),
        tryBot: deps.tryBot,
      });
      return reply
        .header('content-security-policy', policy)
        .header('referrer-policy', 'no-referrer')
        .type('text/html; charset=utf-8')
        .send(page);
    });

    // The page's own files, not part of the API: not in the document.
    app.get(`${PAGE_ASSET_PREFIX}:file`, { schema: { hide: true } }, async (request, reply) => {
      const asset = files.get(request.url.split('?')[0] ?? '');
      if (!asset) return reply.callNotFound();
      return reply.header('cache-control', ASSET_CACHE_CONTROL).type(asset.contentType).send(asset.body);
    });
  };
