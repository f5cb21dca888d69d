import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyService } from '../keys/service.js';
import type { Snowflake } from '../presence/model.js';
import { isSnowflake } from '../presence/snowflake.js';
import { ApiError } from './errors.js';

/** The path id that stands for the key's owner. */
export const ME = '@me';

/** `Authorization: <key>` or `Authorization: Bearer <key>`; an empty header is no key. */
export function presentedKey(request: { headers: IncomingHttpHeaders }): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const value = header
    .trim()
    .replace(/^bearer\s+/i, '')
    .trim();
  return value === '' ? undefined : value;
}

/** The owner of the request's API key; 401 when there is none or it is not live. */
export async function authenticate(keys: ApiKeyService, request: FastifyRequest): Promise<Snowflake> {
  const key = presentedKey(request);
  const owner = key === undefined ? undefined : await keys.ownerOf(key);
  if (owner === undefined) {
    throw new ApiError(
      'invalid_api_key',
      key === undefined
        ? 'this route needs an API key in the Authorization header; DM the bot ?apikey to get one'
        : 'the API key is not valid (it may have been replaced by a newer one)',
    );
  }
  return owner;
}

/**
 * Which user a keyed request acts on: `@me` or the owner's own id. The id is checked before the key, so
 * a malformed path is a 400 whoever asks; another user's id is a 403.
 */
export async function authorizeUser(
  keys: ApiKeyService,
  request: FastifyRequest,
  id: string,
): Promise<Snowflake> {
  if (id !== ME && !isSnowflake(id)) {
    throw new ApiError(
      'invalid_user_id',
      `${JSON.stringify(id.slice(0, 40))} is not a Discord user id or @me`,
    );
  }
  const owner = await authenticate(keys, request);
  if (id !== ME && id !== owner) {
    throw new ApiError(
      'no_permission',
      "this API key belongs to another user: it can only change its owner's KV",
    );
  }
  return owner;
}
