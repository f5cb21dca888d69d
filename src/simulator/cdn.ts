import type { FastifyInstance, FastifyPluginCallback, FastifyReply } from 'fastify';
import { colourFor, type Rgb, ringPng, solidPng } from './png.js';
import { sendError } from './rest.js';
import { isSnowflake } from './state.js';

/**
 * A tiny CDN with Discord's paths (registered under `/cdn`): every well-formed image path answers with a
 * small solid-colour PNG whose colour comes from the hash, so different images look different.
 */

/** Discord's colours for the six default avatars, index = (user id >> 22) % 6. */
export const DEFAULT_AVATAR_COLOURS: readonly Rgb[] = [
  [0x58, 0x65, 0xf2],
  [0x75, 0x7e, 0x8a],
  [0x3b, 0xa5, 0x5c],
  [0xfa, 0xa6, 0x1a],
  [0xed, 0x42, 0x45],
  [0xeb, 0x45, 0x9f],
];

/** What the simulator renders when no `size` is asked for. */
export const DEFAULT_IMAGE_SIZE = 64;
/** Sizes the CDN accepts, like Discord's: powers of two from 16 to 4096. */
export const MIN_IMAGE_SIZE = 16;
export const MAX_IMAGE_SIZE = 4096;

const HASH = '[A-Za-z0-9_]+';
const AVATAR_FILE = new RegExp(`^(${HASH})\\.(png|gif|webp|jpe?g)$`);
const BANNER_FILE = new RegExp(`^(${HASH})\\.(png|gif|webp|jpe?g)$`);
const EMBED_AVATAR_FILE = /^([0-5])\.png$/;
const ASSET_FILE = /^([A-Za-z0-9_-]+)\.(png|webp|jpe?g)$/;
const EMOJI_FILE = /^(\d{1,20})\.(png|gif|webp|jpe?g)$/;
const BADGE_FILE = /^([0-9a-f]{32})\.png$/;
const DECORATION_FILE = /^((?:a_)?[0-9a-f]{32})\.png$/;

interface ImageParams {
  id?: string;
  app?: string;
  guild?: string;
  file: string;
}

export const cdnRoutes: FastifyPluginCallback = (app: FastifyInstance, _options, done) => {
  const cache = new Map<string, Buffer>();

  const image = (
    reply: FastifyReply,
    query: unknown,
    colour: Rgb,
    shape: 'solid' | 'ring' = 'solid',
  ): FastifyReply => {
    const requested = (query as { size?: string } | undefined)?.size;
    let size = DEFAULT_IMAGE_SIZE;
    if (requested !== undefined) {
      size = Number(requested);
      const powerOfTwo = Number.isInteger(size) && (size & (size - 1)) === 0;
      if (!powerOfTwo || size < MIN_IMAGE_SIZE || size > MAX_IMAGE_SIZE) {
        return sendError(reply, 400, { message: 'Invalid size', code: 0 });
      }
    }
    const key = `${colour.join(',')}:${size}:${shape}`;
    let png = cache.get(key);
    if (!png) {
      if (cache.size >= 256) cache.clear();
      png = shape === 'ring' ? ringPng(size, colour) : solidPng(size, colour);
      cache.set(key, png);
    }
    return reply
      .code(200)
      .header('content-type', 'image/png')
      .header('cache-control', 'public, max-age=86400')
      .send(png);
  };
  const notFound = (reply: FastifyReply): FastifyReply =>
    sendError(reply, 404, { message: '404: Not Found', code: 0 });

  app.get<{ Params: ImageParams }>('/avatars/:id/:file', async (request, reply) => {
    const match = AVATAR_FILE.exec(request.params.file);
    if (!match?.[1] || !isSnowflake(request.params.id ?? '')) return notFound(reply);
    return image(reply, request.query, colourFor(match[1]));
  });

  app.get<{ Params: ImageParams }>('/banners/:id/:file', async (request, reply) => {
    const match = BANNER_FILE.exec(request.params.file);
    if (!match?.[1] || !isSnowflake(request.params.id ?? '')) return notFound(reply);
    return image(reply, request.query, colourFor(match[1]));
  });

  app.get<{ Params: ImageParams }>('/embed/avatars/:file', async (request, reply) => {
    const match = EMBED_AVATAR_FILE.exec(request.params.file);
    const colour = match?.[1] === undefined ? undefined : DEFAULT_AVATAR_COLOURS[Number(match[1])];
    if (!colour) return notFound(reply);
    return image(reply, request.query, colour);
  });

  app.get<{ Params: ImageParams }>('/app-assets/:app/:file', async (request, reply) => {
    const match = ASSET_FILE.exec(request.params.file);
    if (!match?.[1] || !isSnowflake(request.params.app ?? '')) return notFound(reply);
    return image(reply, request.query, colourFor(`${request.params.app}/${match[1]}`));
  });

  app.get<{ Params: ImageParams }>('/emojis/:file', async (request, reply) => {
    const match = EMOJI_FILE.exec(request.params.file);
    if (!match?.[1]) return notFound(reply);
    return image(reply, request.query, colourFor(match[1]));
  });

  app.get<{ Params: ImageParams }>('/guild-tag-badges/:guild/:file', async (request, reply) => {
    const match = BADGE_FILE.exec(request.params.file);
    if (!match?.[1] || !isSnowflake(request.params.guild ?? '')) return notFound(reply);
    return image(reply, request.query, colourFor(match[1]));
  });

  // A decoration is a ring around the avatar, transparent where the avatar shows.
  app.get<{ Params: ImageParams }>('/avatar-decoration-presets/:file', async (request, reply) => {
    const match = DECORATION_FILE.exec(request.params.file);
    if (!match?.[1]) return notFound(reply);
    return image(reply, request.query, colourFor(match[1]), 'ring');
  });

  done();
};
