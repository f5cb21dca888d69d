import type { FastifyPluginAsync } from 'fastify';
import { cardContent, invalidIdContent, unmonitoredContent } from '../../card/content.js';
import { cardImageSources, ImageCache, statusCardImages } from '../../card/images.js';
import { cardQuerySchema, parseCardOptions } from '../../card/options.js';
import { renderCardParts } from '../../card/status-card.js';
import type { Metrics } from '../../ops/metrics.js';
import type { PresenceSummary } from '../../presence/model.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import type { PresenceSnapshot } from '../../presence/registry/snapshot.js';
import {
  CARD_TIME_GRANULARITY_MS,
  CardAnswers,
  type CardFormat,
  cardIdParams,
  cardRequestOf,
  cardResponses,
} from '../card-serving.js';
import { TAGS } from '../openapi.js';
import { type OwnerReads, ownerViewOf } from '../owner-reads.js';
import { OWNER_READS, readTokenQuery } from './users.js';

export interface CardRouteDeps {
  view: PresenceView;
  /** Who reads a private user's card as they do; absent: nobody. */
  owner?: OwnerReads;
  /** `DISCORD_CDN_URL`: avatars, emoji and app assets come from there. */
  cdnUrl: string;
  /** Counts the cards drawn; absent: not counted. */
  metrics?: Metrics;
  /** Tests inject a cache with their own fetch, timeouts and clock. */
  images?: ImageCache;
  now?: () => number;
}

/** The card's options, and `?token=` as any other of its parameters: one or several values. */
const cardQuery = {
  ...cardQuerySchema,
  properties: {
    ...cardQuerySchema.properties,
    token: {
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
      description: readTokenQuery.token.description,
    },
  },
} as const;

/** Presences whose reading the card routes keep (see `summaryOf`). */
const RECENT_SUMMARIES = 256;

/** What each format's route is, as the OpenAPI document tells it. */
const ROUTES = {
  svg: {
    path: '/v1/users/:id/card.svg',
    summary: 'The presence as an animated SVG card',
    description:
      'Made for README images: the avatar ringed in the status colour (with its decoration), the name and server tag, the custom status, and what the user listens to (with a progress bar) or plays. The card carries its own font; images are inlined, the animation needs no script.',
  },
  png: {
    path: '/v1/users/:id/card.png',
    summary: 'The presence as a PNG card',
    description:
      "The SVG card drawn at its own size, as it is at the moment of the request (no animation, no emoji), for places that show no SVG: Discord's and social sites' embeds, some Markdown renderers.",
  },
} as const satisfies Record<CardFormat, object>;

/**
 * \`GET /v1/users/:id/card.svg\` and \`card.png\`: the user's presence as a card, for README images. Answered
 * from the registry's snapshot and the image cache; a missing image is a placeholder, never a delay past
 * the image fetch timeout. A card is an image whatever is asked: an id that is not one and options that
 * break their rules give a card too (the id's card says so; options fall back), unless the client asks
 * for JSON above the image, which then gets the contract's 400.
 */
export const cardRoutes =
  (deps: CardRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const images =
      deps.images ?? new ImageCache({ allowedPrefixes: cardImageSources(deps.cdnUrl), logger: app.log });
    const now = deps.now ?? Date.now;

    // A popular user's presence is read once for the cards drawn from it, not once per card: a few
    // hundred of the latest presences, whose readings are dropped all at once past that.
    const summaries = new Map<PresenceSnapshot, PresenceSummary>();
    const summaryOf = (snapshot: PresenceSnapshot): PresenceSummary => {
      let summary = summaries.get(snapshot);
      if (!summary) {
        if (summaries.size >= RECENT_SUMMARIES) summaries.clear();
        summary = snapshot.summary();
        summaries.set(snapshot, summary);
      }
      return summary;
    };

    const route = (format: CardFormat): void => {
      const { path, summary, description } = ROUTES[format];
      const answers = new CardAnswers(format, deps.metrics);
      app.get(
        path,
        {
          schema: {
            tags: [TAGS.card],
            summary,
            description: `${description} A valid id that is not monitored gets a card saying so, and so does an id that is not one; unknown query parameters are ignored, and a value outside its rule falls back to the default. ${OWNER_READS} Errors come as JSON (400 \`invalid_user_id\` or \`invalid_query\`) only to a client that prefers \`application/json\` to the image.`,
            params: cardIdParams,
            querystring: cardQuery,
            response: {
              ...cardResponses(format),
            },
          },
        },
        async (request, reply) => {
          const { given, id, options } = cardRequestOf(request, format, parseCardOptions);

          let snapshot = id === null ? undefined : deps.view.get(id);
          const owner = id === null || snapshot ? null : await ownerViewOf(deps.owner, request, id);
          if (owner && id !== null) snapshot = owner.view.get(id);
          const at = Math.floor(now() / CARD_TIME_GRANULARITY_MS) * CARD_TIME_GRANULARITY_MS;
          return answers.answer(request, reply, {
            at,
            // The id (or what stood in its place) and the options as parsed: what a path can smuggle in
            // (`%3F`) makes no card of its own either.
            key: `${id ?? `\u0000${given}`}\u0000${JSON.stringify(options)}`,
            from: snapshot,
            owner: owner !== null,
            draw: async () => {
              const content =
                id === null
                  ? invalidIdContent(given)
                  : snapshot
                    ? cardContent(summaryOf(snapshot), options, deps.cdnUrl)
                    : unmonitoredContent(id, deps.cdnUrl);
              return renderCardParts(content, options, await statusCardImages(images, content), at);
            },
          });
        },
      );
    };
    route('svg');
    route('png');
  };
