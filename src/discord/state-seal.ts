import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SavedGatewaySession } from '../store/ports.js';

/** HMAC-SHA256's length. */
const MAC_BYTES = 32;

/**
 * The key that seals the saved gateway state, derived from the bot's token: only a process holding the
 * token can make a state the next one will take back. A state written by anyone else who can write the
 * store (an API node, a Redis client) could otherwise name a resume URL of theirs, and be sent the token.
 */
export function stateKey(token: string): Buffer {
  return createHmac('sha256', token).update('presently gateway state').digest();
}

/** The snapshot with a MAC over it, the node, the moment and the sessions saved with it, in front. */
export function sealState(
  key: Buffer,
  node: string,
  savedAt: number,
  sessions: readonly SavedGatewaySession[],
  snapshot: Buffer,
): Buffer {
  return Buffer.concat([mac(key, node, savedAt, sessions, snapshot), snapshot]);
}

/** The snapshot `sealState` sealed with these, or null when anything of it was made or changed elsewhere. */
export function openState(
  key: Buffer,
  node: string,
  savedAt: number,
  sessions: readonly SavedGatewaySession[],
  sealed: Buffer,
): Buffer | null {
  if (sealed.length < MAC_BYTES) return null;
  const snapshot = sealed.subarray(MAC_BYTES);
  const expected = mac(key, node, savedAt, sessions, snapshot);
  return timingSafeEqual(expected, sealed.subarray(0, MAC_BYTES)) ? snapshot : null;
}

function mac(
  key: Buffer,
  node: string,
  savedAt: number,
  sessions: readonly SavedGatewaySession[],
  snapshot: Buffer,
): Buffer {
  // Each session's fields in a fixed order: a store may give back its JSON with the keys reordered.
  const fields = sessions.map((session) => [
    session.shardId,
    session.shardCount,
    session.sessionId,
    session.resumeUrl,
    session.sequence,
  ]);
  return createHmac('sha256', key)
    .update(JSON.stringify([node, savedAt, fields]))
    .update('\n')
    .update(snapshot)
    .digest();
}
