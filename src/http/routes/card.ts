import { createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { PresenceView } from '../../presence/registry.js';
import { type CardContent, cardContent, unmonitoredContent } from '../card/content.js';
import { cardImageSources, ImageCache } from '../card/images.js';
import { cardQuerySchema, parseCardOptions } from '../card/options.js';
import { type CardImages, renderCard } from '../card/render.js';
import { CardRenderCache } from '../card/render-cache.js';
import { TAGS } from '../openapi.js';
import { emptyResponse, errorResponses } from '../schemas/envelope.js';
import { userIdFrom, userIdParams } from './users.js';

/**
 * Cards are rendered for whole seconds: the progress bar and clocks need no finer time, and requests in
 * the same second get the same bytes, so the same ETag.
 */
export const CARD_TIME_GRANULARITY_MS = 1_000;

/**
 * Only `data:` images and fonts and the card's own inline styles; no scripts, no fetches. The card is an image, but
 * opened directly it is a document, and this keeps it inert there too.
 */
export const CARD_CONTENT_SECURITY_POLICY =
  "default-src 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'";

export interface CardRouteDeps {
  view: PresenceView;
  /** `DISCORD_CDN_URL`: avatars, emoji and app assets come from there. */
  cdnUrl: string;
  /** Tests inject a cache with their own fetch, timeouts and clock. */
  images?: ImageCache;
  now?: () => number;
}

/** `"<sha1 of the bytes>"`: the card's content changes with time, so the tag is over what was rendered. */
function etagOf(body: Buffer): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`;
}

/** If-None-Match is a list of tags, weak or strong, or `*`; a weak match is enough for a GET. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((candidate) => {
    const tag = candidate.trim().replace(/^W\//, '');
    return tag === '*' || tag === etag;
  });
}

/**
 * `GET /v1/users/:id/card.svg`: the user's presence as an animated SVG card, for README images. Answered
 * from the registry's snapshot and the image cache; a missing image is a placeholder, never a delay past
 * the image fetch timeout.
 */
export const cardRoutes =
  (deps: CardRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const images =
      deps.images ?? new ImageCache({ allowedPrefixes: cardImageSources(deps.cdnUrl), logger: app.log });
    const now = deps.now ?? Date.now;
    const rendered = new CardRenderCache();

    const imagesFor = async (content: CardContent): Promise<CardImages> => {
      const main = content.main;
      const artUrl = main.kind === 'music' ? main.artUrl : main.kind === 'activity' ? main.imageUrl : null;
      const emojiUrl = content.customStatus?.emoji?.url ?? null;
      // The user's avatar and the default one are asked for together: the default is one of six images
      // cached for an hour, and waiting for the first to fail before asking would double the wait.
      const [avatars, emoji, art] = await Promise.all([
        Promise.all(content.avatarUrls.map((url) => images.get(url))),
        emojiUrl === null ? null : images.get(emojiUrl),
        artUrl === null ? null : images.get(artUrl),
      ]);
      return { avatar: avatars.find((uri) => uri !== null) ?? null, emoji, art };
    };

    app.get(
      '/v1/users/:id/card.svg',
      {
        schema: {
          tags: [TAGS.card],
          summary: 'The presence as an animated SVG card',
          description:
            'Made for README images: the avatar ringed in the status colour, the name, the custom status, and what the user listens to (with a progress bar) or plays. Images are inlined, the animation needs no script. A valid id that is not monitored gets a card saying so; unknown query parameters are ignored.',
          params: userIdParams,
          querystring: cardQuerySchema,
          response: {
            200: {
              description: 'the card, with an `ETag`; `Cache-Control: no-cache`',
              content: { 'image/svg+xml': { schema: { type: 'string' } } },
            },
            304: emptyResponse('the card has not changed since the `If-None-Match` ETag'),
            ...errorResponses(['invalid_user_id', 'invalid_query']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const options = parseCardOptions(request.query);
        const snapshot = deps.view.get(id);
        const at = Math.floor(now() / CARD_TIME_GRANULARITY_MS) * CARD_TIME_GRANULARITY_MS;
        // The options as the client spelled them: the same URL is the same card.
        const query = request.url.indexOf('?');
        const key = query < 0 ? id : `${id}${request.url.slice(query)}`;
        let card = rendered.get(at, key, snapshot);
        if (!card) {
          const content = snapshot
            ? cardContent(snapshot.summary(), options, deps.cdnUrl)
            : unmonitoredContent(id, deps.cdnUrl);
          const resolved = await imagesFor(content);
          const body = Buffer.from(renderCard(content, options, resolved, at));
          card = { body, etag: etagOf(body), from: snapshot };
          rendered.set(at, key, card);
        }
        const { body, etag } = card;

        reply
          .header('cache-control', 'no-cache')
          .header('etag', etag)
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', CARD_CONTENT_SECURITY_POLICY);
        if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send();
        return reply.type('image/svg+xml; charset=utf-8').send(body);
      },
    );
  };
