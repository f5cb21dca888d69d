import type { FastifyPluginAsync } from 'fastify';
import { avatarHash, avatarUrl, defaultAvatarUrl } from '../../presence/normalize/avatar.js';
import { ANIMATED_HASH_PREFIX } from '../../presence/normalize/profile.js';
import type { PresenceView } from '../../presence/registry/registry.js';
import type { NotMonitored } from '../not-monitored.js';
import { TAGS } from '../openapi.js';
import { errorResponses, redirectResponse } from '../schemas/envelope.js';
import { userIdFrom, userIdParams } from './users.js';

/** The formats of Lanyard's quick links; Discord's CDN serves each of them. */
export const AVATAR_FORMATS = ['png', 'jpg', 'jpeg', 'webp', 'gif'] as const;
export type AvatarFormat = (typeof AVATAR_FORMATS)[number];

/** Lanyard asks the CDN for this size; a `?size=` of Discord's own sizes replaces it. */
export const DEFAULT_AVATAR_SIZE = 1024;
/** Discord's CDN sizes: powers of two from 16 to 4096. */
export const AVATAR_SIZES = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096] as const;
/**
 * The redirect may be cached a little: the target is immutable (the hash is in it), but the user may
 * change their avatar, and a link in a profile should follow within a minute.
 */
export const AVATAR_CACHE_CONTROL = 'public, max-age=60';
/** A GIF asked for an avatar that does not move: Lanyard answers with the JPEG, and so do we. */
export const STILL_FORMAT_FOR_GIF: AvatarFormat = 'jpg';

export interface AvatarRouteDeps {
  view: PresenceView;
  /** `DISCORD_CDN_URL`. */
  cdnUrl: string;
  notMonitored: NotMonitored;
}

/** Where the avatar of `user` is, in `format`: the user's own, or Discord's default one. */
export function avatarTarget(
  cdnUrl: string,
  user: { id: string; avatar?: string | null; discriminator?: string | null },
  format: AvatarFormat,
  size: number,
): string {
  const hash = avatarHash(user);
  // Default avatars exist as PNG only, in one size.
  if (hash === null) return defaultAvatarUrl(cdnUrl, user.id, user.discriminator);
  const still = format === 'gif' && !hash.startsWith(ANIMATED_HASH_PREFIX);
  return avatarUrl(cdnUrl, user.id, hash, still ? STILL_FORMAT_FOR_GIF : format, size);
}

/**
 * `GET /:id.png` (`.jpg`, `.jpeg`, `.webp`, `.gif`): Lanyard's avatar quick links, as a redirect to
 * Discord's CDN rather than a proxy, so the image bytes never pass through this service.
 */
export const avatarRoutes =
  (deps: AvatarRouteDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      `/:id.:format(^(?:${AVATAR_FORMATS.join('|')})$)`,
      {
        schema: {
          tags: [TAGS.links],
          summary: 'The avatar as an image: a redirect to Discord’s CDN',
          description: `Lanyard’s avatar quick link, for an \`<img>\` that follows avatar changes: a 302 to the user’s current avatar on Discord’s CDN (\`DISCORD_CDN_URL\`) in the format of the extension, so the image never passes through Presently. \`.jpg\` and \`.jpeg\` are both JPEG; \`.gif\` of an avatar that does not move is its \`.jpg\`, as on Lanyard; a user without an avatar gets Discord’s default one (a PNG, whatever the extension). Unknown query parameters are ignored.`,
          // The format is the extension: the document writes one path per format (openapi.ts).
          params: {
            type: 'object',
            properties: {
              // No pattern: userIdFrom checks the id, as it always has (`invalid_user_id` either way).
              id: {
                type: 'string',
                description: userIdParams.properties.id.description,
                examples: userIdParams.properties.id.examples,
              },
              format: { type: 'string', enum: AVATAR_FORMATS },
            },
            required: ['id', 'format'],
          },
          querystring: {
            type: 'object',
            properties: {
              size: {
                type: 'integer',
                enum: AVATAR_SIZES,
                description: `image size in px, one of Discord’s sizes (default ${DEFAULT_AVATAR_SIZE})`,
              },
            },
          },
          response: {
            302: redirectResponse('the avatar', 'the image on Discord’s CDN', {
              'Cache-Control': {
                type: 'string',
                description: `\`${AVATAR_CACHE_CONTROL}\`: a new avatar is followed within a minute`,
              },
            }),
            ...errorResponses(['invalid_user_id', 'invalid_query', 'user_not_monitored']),
          },
        },
      },
      async (request, reply) => {
        const id = userIdFrom(request.params);
        const { format } = request.params as { format: AvatarFormat };
        const size = (request.query as { size?: number }).size ?? DEFAULT_AVATAR_SIZE;
        const snapshot = deps.view.get(id);
        if (!snapshot) throw deps.notMonitored(id);
        return reply
          .header('cache-control', AVATAR_CACHE_CONTROL)
          .redirect(avatarTarget(deps.cdnUrl, snapshot.summary().discord_user, format, size), 302);
      },
    );
  };
