import { createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Metrics } from '../../ops/metrics.js';
import type { PresenceSummary } from '../../presence/model.js';
import type { PresenceView } from '../../presence/registry.js';
import type { PresenceSnapshot } from '../../presence/snapshot.js';
import { isSnowflake } from '../../presence/snowflake.js';
import { prefersJsonTo } from '../accept.js';
import { type CardContent, cardContent, invalidIdContent, unmonitoredContent } from '../card/content.js';
import { FONT_DIGEST, fontFaceFor } from '../card/font.js';
import { cardImageSources, ImageCache } from '../card/images.js';
import { cardQuerySchema, parseCardOptions } from '../card/options.js';
import { PNG_RENDERER, rasterize } from '../card/png.js';
import { type CardImages, renderCardParts } from '../card/render.js';
import { CardRenderCache, type RenderedCard } from '../card/render-cache.js';
import { ApiError } from '../errors.js';
import { noneMatch } from '../etag.js';
import { TAGS } from '../openapi.js';
import { answeredToOwner, type OwnerReads, ownerViewOf } from '../owner-reads.js';
import { emptyResponse, errorResponses } from '../schemas/envelope.js';
import { OWNER_READS, readTokenQuery, userIdFrom } from './users.js';

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

/**
 * `"<sha1>"` over what was rendered (the card's content changes with time): the format (for a PNG, what
 * draws it) and the markup, whose bytes or pixels follow from it with the font files (by their digest).
 */
function etagOf(format: Format, { before, after }: CardParts): string {
  const hash = createHash('sha1')
    .update(format === 'png' ? PNG_RENDERER : format)
    .update(FONT_DIGEST)
    .update(before)
    .update('\u0000')
    .update(after);
  return `"${hash.digest('base64url')}"`;
}

/** A card's id: any text, checked in the handler, where one that is not a snowflake still gets a card. */
const cardIdParams = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'a Discord user id (snowflake)', examples: ['94490510688792576'] },
  },
  required: ['id'],
} as const;

type CardParts = ReturnType<typeof renderCardParts>;

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

/** Begins the key of a card drawn for its private owner: no other request is answered one of those. */
const OWNERS_CARD = '\u0001';

/** Presences whose reading the card routes keep (see `summaryOf`). */
const RECENT_SUMMARIES = 256;

/** Bytes of PNG cards kept after their second, to answer with when the renderer is too busy to draw. */
const LAST_DRAWN_BYTES = 32 * 1024 * 1024;

/** The last PNG drawn for each of the most recently drawn keys, within a byte budget, oldest dropped first. */
class LastDrawn {
  private readonly cards = new Map<string, RenderedCard>();
  private bytes = 0;

  get(key: string): RenderedCard | undefined {
    return this.cards.get(key);
  }

  set(key: string, card: RenderedCard): void {
    const previous = this.cards.get(key);
    if (previous) {
      this.bytes -= previous.body.length;
      this.cards.delete(key);
    }
    this.cards.set(key, card);
    this.bytes += card.body.length;
    for (const [oldest, dropped] of this.cards) {
      if (this.bytes <= LAST_DRAWN_BYTES) break;
      this.cards.delete(oldest);
      this.bytes -= dropped.body.length;
    }
  }
}

/** The card's two formats: what each route answers and how its bytes are made from the SVG. */
const FORMATS = {
  svg: {
    path: '/v1/users/:id/card.svg',
    type: 'image/svg+xml',
    contentType: 'image/svg+xml; charset=utf-8',
    summary: 'The presence as an animated SVG card',
    description:
      'Made for README images: the avatar ringed in the status colour (with its decoration), the name and server tag, the custom status, and what the user listens to (with a progress bar) or plays. The card carries its own font; images are inlined, the animation needs no script.',
    encode: async ({ before, after }: CardParts): Promise<Buffer> =>
      Buffer.concat([Buffer.from(before), fontFaceFor(after), Buffer.from(after)]),
  },
  png: {
    path: '/v1/users/:id/card.png',
    type: 'image/png',
    contentType: 'image/png',
    summary: 'The presence as a PNG card',
    description:
      "The SVG card drawn at its own size, as it is at the moment of the request (no animation, no emoji), for places that show no SVG: Discord's and social sites' embeds, some Markdown renderers.",
    // resvg reads no @font-face: it draws with the font files themselves.
    encode: async ({ before, after }: CardParts): Promise<Buffer> => rasterize(before + after),
  },
} as const;

type Format = keyof typeof FORMATS;

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

    const imagesFor = async (content: CardContent): Promise<CardImages> => {
      const main = content.main;
      const artUrl = main?.kind === 'music' ? main.artUrl : main?.kind === 'activity' ? main.imageUrl : null;
      const emojiUrl = content.customStatus?.emoji?.url ?? null;
      const fetched = (url: string | null | undefined) => (url ? images.get(url) : null);
      // The user's avatar and the default one are asked for together: the default is one of six images
      // cached for an hour, and waiting for the first to fail before asking would double the wait.
      const [avatars, emoji, art, badge, decoration, more] = await Promise.all([
        Promise.all(content.avatarUrls.map((url) => images.get(url))),
        fetched(emojiUrl),
        fetched(artUrl),
        fetched(content.tag?.badgeUrl),
        fetched(content.decorationUrl),
        Promise.all(content.more.map((activity) => fetched(activity.imageUrl))),
      ]);
      return { avatar: avatars.find((uri) => uri !== null) ?? null, emoji, art, badge, decoration, more };
    };

    const route = (format: Format): void => {
      const { path, type, contentType, summary, description, encode } = FORMATS[format];
      const rendered = new CardRenderCache();
      const drawing = new Map<string, { from: object | undefined; drawn: Promise<RenderedCard> }>();
      const lastDrawn = new LastDrawn();
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
              200: {
                description:
                  'the card, with an `ETag`; `Cache-Control: no-cache` (`private, no-store` for a private user read with their key or token)',
                content: {
                  [type]: {
                    schema: {
                      type: 'string',
                      ...(format === 'png' ? { contentMediaType: 'image/png' } : {}),
                    },
                  },
                },
              },
              304: emptyResponse('the card has not changed since the `If-None-Match` ETag'),
              ...errorResponses(
                format === 'png'
                  ? ['invalid_user_id', 'invalid_query', 'rate_limited']
                  : ['invalid_user_id', 'invalid_query'],
              ),
            },
          },
        },
        async (request, reply) => {
          const wantsJson = prefersJsonTo(request.headers.accept, type);
          const given = (request.params as { id: string }).id;
          const id = isSnowflake(given) ? given : null;
          if (id === null && wantsJson) userIdFrom(request.params);
          const { options, problems } = parseCardOptions(request.query);
          if (problems.length > 0 && wantsJson) throw new ApiError('invalid_query', problems.join('; '));

          let snapshot = id === null ? undefined : deps.view.get(id);
          const owner = id === null || snapshot ? null : await ownerViewOf(deps.owner, request, id);
          if (owner && id !== null) snapshot = owner.view.get(id);
          const at = Math.floor(now() / CARD_TIME_GRANULARITY_MS) * CARD_TIME_GRANULARITY_MS;
          // The card as drawn: the id (or what stood in its place) and the options as parsed, so spellings,
          // unknown parameters (`?v=2`) and what a path can smuggle in (`%3F`) make no card of their own.
          // An owner's card is kept apart, so that it is never the one drawn last for anyone else.
          const key = `${owner ? OWNERS_CARD : ''}${id ?? `\u0000${given}`}\u0000${JSON.stringify(options)}`;
          let card = rendered.get(at, key, snapshot);
          if (!card) {
            // Requests for one card that come while it is drawn, from the same presence, wait for that
            // drawing: a popular README's PNG is drawn once a second, not once per request of the second.
            const flightKey = `${at}\u0000${key}`;
            let flight = drawing.get(flightKey);
            if (flight?.from !== snapshot) flight = undefined;
            if (!flight) {
              const drawn = (async () => {
                const content =
                  id === null
                    ? invalidIdContent(given)
                    : snapshot
                      ? cardContent(summaryOf(snapshot), options, deps.cdnUrl)
                      : unmonitoredContent(id, deps.cdnUrl);
                const resolved = await imagesFor(content);
                const parts = renderCardParts(content, options, resolved, at);
                const made = { body: await encode(parts), etag: etagOf(format, parts), from: snapshot };
                deps.metrics?.cardDrawn(format);
                rendered.set(at, key, made);
                if (format === 'png') lastDrawn.set(key, made);
                return made;
              })();
              const started = { from: snapshot, drawn };
              flight = started;
              drawing.set(flightKey, started);
              // A drawing from a newer presence may have taken the place meanwhile: only this one leaves.
              const forget = () => {
                if (drawing.get(flightKey) === started) drawing.delete(flightKey);
              };
              drawn.then(forget, forget);
            }
            try {
              card = await flight.drawn;
            } catch (error) {
              // Too busy to draw it: the last one drawn is better than a broken image, if it was drawn from
              // the presence shown now: an older one may show what its user has hidden since, or a user
              // gone private.
              if (!(error instanceof ApiError) || error.code !== 'rate_limited') throw error;
              const last = lastDrawn.get(key);
              if (!last || last.from !== snapshot) {
                reply.header('retry-after', '1');
                throw error;
              }
              card = last;
            }
          }
          const { body, etag } = card;

          reply
            .header('cache-control', 'no-cache')
            .header('etag', etag)
            .header('x-content-type-options', 'nosniff')
            .header('content-security-policy', CARD_CONTENT_SECURITY_POLICY);
          if (owner) answeredToOwner(reply);
          if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
          return reply.type(contentType).send(body);
        },
      );
    };
    route('svg');
    route('png');
  };
