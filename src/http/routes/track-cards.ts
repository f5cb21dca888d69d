import { createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { invalidIdContent, unmonitoredContent } from '../../card/content.js';
import { cardImageSources, ImageCache, trackCardImages } from '../../card/images.js';
import { recentContent, type TrackCardContent, topContent, withoutPlays } from '../../card/track-content.js';
import { renderTrackCardParts } from '../../card/track-list.js';
import {
  parseTrackCardOptions,
  type TrackCardKind,
  trackCardQueryOptions,
} from '../../card/track-options.js';
import { HistoryReads } from '../../history/reads.js';
import { TOP_TRACKS_MIN_PLAYS } from '../../model/history.js';
import type { Metrics } from '../../ops/metrics.js';
import type { Snowflake } from '../../presence/model.js';
import type { MusicApps } from '../../presence/normalize/music-apps.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import type { HistoryStore } from '../../store/ports.js';
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
import type { HistoryPrivacy } from './history.js';
import { OWNER_READS, readTokenQuery } from './users.js';

export interface TrackCardRouteDeps {
  /** What anyone may read: private users are not in it. */
  view: PresenceView;
  /** Who reads a private user's cards as they do; absent: nobody. */
  owner?: OwnerReads;
  history: HistoryStore;
  /** What the user's settings hide of their plays; absent: nothing. */
  privacy?: Pick<HistoryPrivacy, 'of'>;
  /** Which service a hidden application plays, so its past plays are hidden too. */
  musicApps?: MusicApps;
  /** `DISCORD_CDN_URL`: avatars come from there. */
  cdnUrl: string;
  metrics?: Metrics;
  /** The status card's image cache, shared: a track's art is often the status card's too. */
  images?: ImageCache;
  now?: () => number;
}

/** Each card's routes, as the OpenAPI document tells them. */
const CARDS = {
  recent: {
    summary: 'Recently played, as a card',
    description:
      'The latest plays as an image for README files: each with its album art, title, artist, where it was played and how long ago, the first marked "Now playing" while it plays. The same plays as `GET /v1/users/{id}/recent`.',
  },
  top: {
    summary: 'Most played tracks, as a card',
    description: `The most played tracks as an image for README files: each with its album art, title, artist, where it was played and its plays, of every play counted or of the last days (\`period\`). Tracks played at least ${TOP_TRACKS_MIN_PLAYS} times, as \`GET /v1/users/{id}/top-tracks\`.`,
  },
} as const satisfies Record<TrackCardKind, object>;

const FORMAT_NOTES: Record<CardFormat, string> = {
  svg: 'The card carries its own font; images are inlined.',
  png: 'The SVG card drawn at its own size (no animation, no emoji), for places that show no SVG.',
};

/** The card's options, and `?token=` as any other of its parameters: one or several values. */
function querySchema(kind: TrackCardKind) {
  const values = (description: string) => ({
    anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    description,
  });
  return {
    type: 'object',
    properties: {
      ...Object.fromEntries(
        Object.entries(trackCardQueryOptions(kind)).map(([name, description]) => [name, values(description)]),
      ),
      token: values(readTokenQuery.token.description),
    },
  } as const;
}

/** The content's digest: a card's key, so that one drawn from other plays is another card. */
function digestOf(content: TrackCardContent): string {
  return createHash('sha1').update(JSON.stringify(content)).digest('base64url');
}

/**
 * `GET /v1/users/:id/recent.svg|.png` and `top.svg|.png`: a user's latest plays and most played tracks
 * as cards, answered as the status card is (its options where they apply, its ETag, caching and
 * Content-Security-Policy, a card whatever is asked). The plays are those the history routes answer,
 * with the same privacy: what the user's settings hide is not on the card, and a private user's card is
 * the not-monitored card but to their key or read token. A user nobody monitors gets that card too, even
 * with plays kept from before: the card has no one to show them under.
 */
export const trackCardRoutes =
  (deps: TrackCardRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const images =
      deps.images ?? new ImageCache({ allowedPrefixes: cardImageSources(deps.cdnUrl), logger: app.log });
    const now = deps.now ?? Date.now;
    const { privacy } = deps;
    const reads = new HistoryReads({
      history: deps.history,
      ...(privacy ? { settingsOf: (userId: Snowflake) => privacy.of(userId) } : {}),
      ...(deps.musicApps ? { musicApps: deps.musicApps } : {}),
      now,
    });

    const route = (kind: TrackCardKind, format: CardFormat): void => {
      const answers = new CardAnswers(format, deps.metrics);
      const { summary, description } = CARDS[kind];
      app.get(
        `/v1/users/:id/${kind}.${format}`,
        {
          schema: {
            tags: [TAGS.card],
            summary: format === 'svg' ? summary : `${summary} (PNG)`,
            description: `${description} ${FORMAT_NOTES[format]} A valid id that is not monitored gets a card saying so, and so does an id that is not one; a user without plays gets a card saying that; unknown query parameters are ignored, and a value outside its rule falls back to the default. ${OWNER_READS} Errors come as JSON (400 \`invalid_user_id\` or \`invalid_query\`) only to a client that prefers \`application/json\` to the image.`,
            params: cardIdParams,
            querystring: querySchema(kind),
            response: {
              ...cardResponses(format),
            },
          },
        },
        async (request, reply) => {
          const { given, id, options } = cardRequestOf(request, format, (query) =>
            parseTrackCardOptions(kind, query),
          );

          let snapshot = id === null ? undefined : deps.view.get(id);
          let view: PresenceView | null = snapshot ? deps.view : null;
          const owner = id === null || snapshot ? null : await ownerViewOf(deps.owner, request, id);
          if (owner && id !== null) {
            view = owner.view;
            snapshot = view.get(id);
          }
          const at = Math.floor(now() / CARD_TIME_GRANULARITY_MS) * CARD_TIME_GRANULARITY_MS;

          let content: TrackCardContent;
          if (id === null) content = withoutPlays(kind, invalidIdContent(given), options.period);
          else if (view === null || !snapshot) {
            content = withoutPlays(kind, unmonitoredContent(id, deps.cdnUrl), options.period);
          } else {
            const presence = snapshot.summary();
            content =
              kind === 'recent'
                ? recentContent(presence, await reads.recent(id, view, options.limit), deps.cdnUrl)
                : topContent(
                    presence,
                    await reads.topTracks(id, view, options.limit, options.period),
                    options.period,
                    deps.cdnUrl,
                  );
          }

          return answers.answer(request, reply, {
            at,
            // What is drawn, with the id as given and the options as parsed: the plays change without the
            // presence, and a card drawn from others is never answered for these.
            key: `${id ?? `\u0000${given}`}\u0000${JSON.stringify(options)}\u0000${digestOf(content)}`,
            from: snapshot,
            owner: owner !== null,
            draw: async () =>
              renderTrackCardParts(content, options.card, await trackCardImages(images, content), at),
          });
        },
      );
    };
    for (const kind of ['recent', 'top'] as const) {
      route(kind, 'svg');
      route(kind, 'png');
    }
  };
