import type { Presence, PresenceUpdate, UserId } from './types.js';

/** A server frame of Lanyard's protocol, as the client reads it. */
export type ServerFrame =
  | { op: 1; d: { heartbeat_interval: number } }
  | { op: 0; seq?: number; t: 'INIT_STATE'; d: Record<UserId, Presence> }
  | { op: 0; seq?: number; t: 'PRESENCE_UPDATE'; d: PresenceUpdate };

/**
 * A message's JSON: text as it is; a binary message (`zlib_json`) is one whole zlib stream, inflated with
 * the platform's DecompressionStream (browsers, and Node 20 and later).
 */
export async function frameText(data: unknown): Promise<string> {
  if (typeof data === 'string') return data;
  if (!(data instanceof ArrayBuffer) && !ArrayBuffer.isView(data)) {
    throw new TypeError('a socket message that is neither text nor binary');
  }
  const bytes =
    data instanceof ArrayBuffer
      ? new Uint8Array(data)
      : // A message is never in shared memory, the one kind of buffer the DOM's Response refuses.
        new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
  const inflated = new Response(bytes).body?.pipeThrough(new DecompressionStream('deflate'));
  return new Response(inflated).text();
}
