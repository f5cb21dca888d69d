import { hash } from 'node:crypto';
import { DIGEST_BYTES } from '../collections/body-digest.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';

/**
 * Strong entity tags of presence reads: a hash of the bytes answered, so the same bytes have the same tag
 * whichever path or node wrote them, and changed bytes a new one.
 */

/**
 * A bulk read's tag, 128 bits as 22 base64url characters. A cryptographic hash: its parts are several users'
 * tags, one of which a member can steer (body-digest.ts), and that must not let them pin the tag of an
 * answer holding someone else's presence.
 */
function tagOf(parts: string): string {
  return `"${hash('sha256', parts, 'buffer').toString('base64url', 0, DIGEST_BYTES)}"`;
}

/** The tag of `GET /v1/users/:id` answered with this snapshot's body: its digest, made once per change. */
export function snapshotEtag(snapshot: PresenceSnapshot): string {
  return digestEtag(snapshot.digest().toString('base64url'));
}

/** The tag of a body whose digest (`PresenceSnapshot.digest`) is this base64url text. */
export function digestEtag(digest: string): string {
  return `"${digest}"`;
}

/**
 * The tag of a bulk read, from its parts: the answer's bytes follow from which ids it holds, in what
 * order, and each one's presence, which its own tag stands for.
 */
export function bulkEtag(found: readonly (readonly [Snowflake, PresenceSnapshot])[]): string {
  let parts = '';
  for (const [id, snapshot] of found) parts += `${id}${snapshotEtag(snapshot)}`;
  return tagOf(parts);
}

/** The tag of a body served as it is (a script, a page): a hash of its bytes, as a bulk read's. */
export function bodyEtag(body: string | Buffer): string {
  return `"${hash('sha256', body, 'buffer').toString('base64url', 0, DIGEST_BYTES)}"`;
}

/**
 * Whether `If-None-Match` names `etag`, or is `*`: then a GET or HEAD answers 304. It compares weakly, as
 * RFC 9110 says it must: `W/"x"` matches `"x"`. Tags made here hold no comma, so a split finds them whole.
 */
export function noneMatch(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  for (const candidate of ifNoneMatch.split(',')) {
    const tag = candidate.trim();
    if (tag === '*' || tag === etag || (tag.startsWith('W/') && tag.slice(2) === etag)) return true;
  }
  return false;
}
