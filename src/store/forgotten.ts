import type { HistoryWrite } from './ports.js';

/**
 * What of a write may still be recorded once the user's history was erased at `forgottenAt`: the parts
 * stamped later (a play counts with its track). Null when nothing is left. Every store applies it inside
 * the write, and every recorder to what it holds queued, so nothing seen before an erasure comes back.
 */
export function afterForget(write: HistoryWrite, forgottenAt: number): HistoryWrite | null {
  const status = write.status !== null && write.status.ts > forgottenAt ? write.status : null;
  const track = write.track !== null && write.track.ts > forgottenAt ? write.track : null;
  const lastSeen = write.lastSeen !== null && write.lastSeen > forgottenAt ? write.lastSeen : null;
  if (status === null && track === null && lastSeen === null) return null;
  if (status === write.status && track === write.track && lastSeen === write.lastSeen) return write;
  return { userId: write.userId, status, track, countsPlay: track !== null && write.countsPlay, lastSeen };
}
