import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CardParts } from '../card/draw.js';
import { FONT_DIGEST, fontFaceFor } from '../card/font.js';
import { PNG_RENDERER, RendererBusyError, rasterize } from '../card/png.js';
import { CardRenderCache, type RenderedCard } from '../card/render-cache.js';
import type { Metrics } from '../ops/metrics.js';
import type { Snowflake } from '../presence/model.js';
import { isSnowflake } from '../presence/snowflake.js';
import { prefersJsonTo } from './accept.js';
import { ApiError } from './errors.js';
import { noneMatch } from './etag.js';
import { answeredToOwner } from './owner-reads.js';
import { userIdFrom } from './routes/users.js';
import { emptyResponse, errorResponses } from './schemas/envelope.js';

/**
 * How every card is answered, whatever it draws: its two formats, its headers and ETag, and the caches
 * that make a popular README's card one drawing a second. The routes decide what is drawn and give it
 * here as markup (see `CardParts`).
 */

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

export type CardFormat = 'svg' | 'png';

/** The card's two formats: their types and how their bytes are made from the SVG. */
export const CARD_FORMATS = {
  svg: {
    type: 'image/svg+xml',
    contentType: 'image/svg+xml; charset=utf-8',
    encode: async ({ before, after }: CardParts): Promise<Buffer> =>
      Buffer.concat([Buffer.from(before), fontFaceFor(after), Buffer.from(after)]),
  },
  png: {
    type: 'image/png',
    contentType: 'image/png',
    // resvg reads no @font-face: it draws with the font files themselves.
    encode: async ({ before, after }: CardParts): Promise<Buffer> => rasterize(before + after),
  },
} as const satisfies Record<CardFormat, object>;

/** A card's id: any text, checked in the handler, where one that is not a snowflake still gets a card. */
export const cardIdParams = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'a Discord user id (snowflake)', examples: ['94490510688792576'] },
  },
  required: ['id'],
} as const;

/**
 * A card route's answers in the OpenAPI document: 200 and 304, and the errors a client that prefers JSON
 * to the image is sent (a PNG may also be refused while the renderer is busy).
 */
export function cardResponses(format: CardFormat) {
  return {
    200: {
      description:
        'the card, with an `ETag`; `Cache-Control: no-cache` (`private, no-store` for a private user read with their key or token)',
      content: {
        [CARD_FORMATS[format].type]: {
          schema: { type: 'string', ...(format === 'png' ? { contentMediaType: 'image/png' } : {}) },
        },
      },
    },
    304: emptyResponse('the card has not changed since the `If-None-Match` ETag'),
    ...errorResponses(
      format === 'png'
        ? ['invalid_user_id', 'invalid_query', 'rate_limited']
        : ['invalid_user_id', 'invalid_query'],
    ),
  };
}

/**
 * The start of every card request: whether the client prefers JSON to the image, the id (null when it is
 * not one: the card says so), and the options as `parse` reads them. A client that prefers JSON is refused
 * a bad id or bad options in the envelope; anyone else gets a card with the defaults.
 */
export function cardRequestOf<Options>(
  request: FastifyRequest,
  format: CardFormat,
  parse: (query: unknown) => { options: Options; problems: string[] },
): { given: string; id: Snowflake | null; options: Options } {
  const wantsJson = prefersJsonTo(request.headers.accept, CARD_FORMATS[format].type);
  const given = (request.params as { id: string }).id;
  const id = isSnowflake(given) ? given : null;
  if (id === null && wantsJson) userIdFrom(request.params);
  const { options, problems } = parse(request.query);
  if (problems.length > 0 && wantsJson) throw new ApiError('invalid_query', problems.join('; '));
  return { given, id, options };
}

/**
 * `"<sha1>"` over what was rendered (the card's content changes with time): the format (for a PNG, what
 * draws it) and the markup, whose bytes or pixels follow from it with the font files (by their digest).
 */
function etagOf(format: CardFormat, { before, after }: CardParts): string {
  const hash = createHash('sha1')
    .update(format === 'png' ? PNG_RENDERER : format)
    .update(FONT_DIGEST)
    .update(before)
    .update('\u0000')
    .update(after);
  return `"${hash.digest('base64url')}"`;
}

/** Begins the key of a card drawn for its private owner: no other request is answered one of those. */
const OWNERS_CARD = '\u0001';

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

/** One card to answer. */
export interface CardRequest {
  /** The second it is drawn for (CARD_TIME_GRANULARITY_MS). */
  at: number;
  /**
   * What tells this card from every other of the route: everything it is drawn from but the presence and
   * the time (the id as given, the options as parsed), so spellings and unknown parameters make no card of
   * their own.
   */
  key: string;
  /** The presence snapshot it is drawn from (undefined: none): a card drawn from another is another card. */
  from: object | undefined;
  /** Drawn for the private user's own key or token: kept apart from every other request's card. */
  owner: boolean;
  draw: () => Promise<CardParts>;
}

/**
 * Answers one route's cards of one format: each card drawn at most once a second for the same presence
 * (requests that come while it is drawn wait for that drawing), and, for a PNG, when the renderer is too
 * busy, the last one drawn of the presence shown now rather than a broken image.
 */
export class CardAnswers {
  private readonly rendered = new CardRenderCache();
  private readonly drawing = new Map<string, { from: object | undefined; drawn: Promise<RenderedCard> }>();
  private readonly lastDrawn = new LastDrawn();

  constructor(
    private readonly format: CardFormat,
    private readonly metrics?: Metrics,
  ) {}

  async answer(request: FastifyRequest, reply: FastifyReply, card: CardRequest): Promise<FastifyReply> {
    const { at, from } = card;
    const key = `${card.owner ? OWNERS_CARD : ''}${card.key}`;
    let made = this.rendered.get(at, key, from);
    if (!made) {
      const flightKey = `${at}\u0000${key}`;
      let flight = this.drawing.get(flightKey);
      if (flight?.from !== from) flight = undefined;
      if (!flight) {
        const drawn = (async () => {
          const parts = await card.draw();
          const body = await CARD_FORMATS[this.format].encode(parts);
          const rendered = { body, etag: etagOf(this.format, parts), from };
          this.metrics?.cardDrawn(this.format);
          this.rendered.set(at, key, rendered);
          if (this.format === 'png') this.lastDrawn.set(key, rendered);
          return rendered;
        })();
        const started = { from, drawn };
        flight = started;
        this.drawing.set(flightKey, started);
        // A drawing from a newer presence may have taken the place meanwhile: only this one leaves.
        const forget = () => {
          if (this.drawing.get(flightKey) === started) this.drawing.delete(flightKey);
        };
        drawn.then(forget, forget);
      }
      try {
        made = await flight.drawn;
      } catch (error) {
        // Too busy to draw it: the last one drawn is better than a broken image, if it was drawn from
        // the presence shown now: an older one may show what its user has hidden since, or a user
        // gone private.
        if (!(error instanceof RendererBusyError)) throw error;
        const last = this.lastDrawn.get(key);
        if (!last || last.from !== from) {
          reply.header('retry-after', '1');
          throw new ApiError(error.code, error.message);
        }
        made = last;
      }
    }
    const { body, etag } = made;

    reply
      .header('cache-control', 'no-cache')
      .header('etag', etag)
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', CARD_CONTENT_SECURITY_POLICY);
    if (card.owner) answeredToOwner(reply);
    if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return reply.type(CARD_FORMATS[this.format].contentType).send(body);
  }
}
