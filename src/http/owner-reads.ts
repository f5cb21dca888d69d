import type { FastifyReply, FastifyRequest } from 'fastify';
import { isApiKeyShape } from '../keys/api-key.js';
import { isReadTokenShape } from '../keys/read-token.js';
import type { ReadTokenService } from '../keys/read-tokens.js';
import type { ApiKeyService } from '../keys/service.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceView } from '../presence/registry/registry.js';
import { presentedKey } from './auth.js';

/**
 * What reads a private user as they read themselves (docs/privacy.md): their API key in `Authorization`, or
 * one of their read tokens, as `Authorization: Bearer prt_…` or `?token=prt_…` (for an `<img>` or an
 * `EventSource`, which send no headers). Anything else, a wrong, removed or unreadable token included, reads
 * them as anyone does: as a user nobody monitors, never a 401, which would tell that they exist.
 */
export interface OwnerReads {
  /** What a user reads of themselves, private or not. */
  ownView: PresenceView;
  /** Whether the user's `visibility` is `private`. */
  isPrivate(userId: Snowflake): boolean;
  keys: Pick<ApiKeyService, 'ownerOf'>;
  /** Absent: only the owner's key reads them. */
  tokens?: Pick<ReadTokenService, 'ownerOf'>;
}

/** A request's right to read a user as they read themselves, and what gave it. */
export interface ReadGrant {
  userId: Snowflake;
  /** The read token's id; null: the user's API key. */
  tokenId: string | null;
  /** Whether that key or token still reads the user (for a stream that outlives the request). */
  holds(): Promise<boolean>;
}

/** What every answer given through a grant carries: no cache, shared or the browser's, keeps it. */
export const OWNER_CACHE_CONTROL = 'private, no-store';

/** `?token=` of the request, when it is given once. */
function queryToken(request: FastifyRequest): string | undefined {
  const token = (request.query as { token?: unknown } | null)?.token;
  return typeof token === 'string' ? token : undefined;
}

/**
 * The grant the request carries for `userId`, or null. Asked only of a request for a user whom the public
 * view does not show, so a public read costs nothing more. A key is taken from `Authorization` alone: an
 * API key in a URL would end up in logs and histories it was never meant for.
 */
export async function grantOf(
  reads: OwnerReads,
  request: FastifyRequest,
  userId: Snowflake,
): Promise<ReadGrant | null> {
  const header = presentedKey(request);
  const query = queryToken(request);
  const check = async (credential: string): Promise<string | null | undefined> => {
    if (isReadTokenShape(credential)) {
      const found = await reads.tokens?.ownerOf(credential);
      return found?.userId === userId ? found.id : undefined;
    }
    if (credential === header && isApiKeyShape(credential)) {
      return (await reads.keys.ownerOf(credential)) === userId ? null : undefined;
    }
    return undefined;
  };
  try {
    for (const credential of [header, query]) {
      if (credential === undefined) continue;
      const tokenId = await check(credential);
      if (tokenId === undefined) continue;
      return {
        userId,
        tokenId,
        holds: async () => (await check(credential)) === tokenId,
      };
    }
  } catch (error) {
    request.log.warn({ err: error }, 'could not check a key or read token; answering as to anyone');
  }
  return null;
}

/**
 * The view to read a user from whom `view` does not show: the owner's when the user is private and the
 * request carries their grant. The grant is checked for an unknown user as for a private one, so the time
 * an answer takes does not tell them apart either.
 */
export async function ownerViewOf(
  reads: OwnerReads | undefined,
  request: FastifyRequest,
  userId: Snowflake,
): Promise<{ view: PresenceView; grant: ReadGrant } | null> {
  if (reads === undefined) return null;
  const grant = await grantOf(reads, request, userId);
  return grant !== null && reads.isPrivate(userId) ? { view: reads.ownView, grant } : null;
}

/** Marks an answer given through a grant. */
export function answeredToOwner(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', OWNER_CACHE_CONTROL);
}
