import type { Snowflake } from '../presence/model.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import { FRAGMENT_AT_BYTES, presenceTail, withUserId } from '../socket/frames.js';

/**
 * What a stream writes, in the `text/event-stream` format: pieces written one after the other. Chunks are
 * shared: one made for a change goes to every stream, as the same buffers.
 */
export interface SseChunk {
  readonly pieces: readonly Buffer[];
  readonly bytes: number;
}

/** Every presence event's type: `addEventListener('presence', …)` in a browser. */
export const PRESENCE_EVENT = 'presence';

export const KEEP_ALIVE: SseChunk = chunkOf([Buffer.from(': keep-alive\n\n')]);

const EVENT_END = Buffer.from('\n\n');

export function chunkOf(pieces: readonly Buffer[]): SseChunk {
  let bytes = 0;
  for (const piece of pieces) bytes += piece.length;
  return { pieces, bytes };
}

/** How long a client waits before reconnecting, said once at the start of every stream. */
export function retryChunk(ms: number): SseChunk {
  return chunkOf([Buffer.from(`retry: ${ms}\n\n`)]);
}

/** Each snapshot's event body, made once for its change, the replays and the streams that open meanwhile. */
const bodies = new WeakMap<PresenceSnapshot, readonly Buffer[]>();

/**
 * A presence's event without its id: the type, and the presence with `user_id` as one `data:` line (JSON
 * as the registry writes it has no line breaks). A large presence is written from the snapshot's own
 * bytes, never copied.
 */
export function presenceBody(userId: Snowflake, snapshot: PresenceSnapshot): readonly Buffer[] {
  let body = bodies.get(snapshot);
  if (!body) {
    const head = `event: ${PRESENCE_EVENT}\ndata: `;
    // Held text is ASCII: Latin-1 writes it as it is.
    body =
      snapshot.body.length < FRAGMENT_AT_BYTES
        ? [Buffer.from(`${head}${withUserId(userId, snapshot.json)}\n\n`, 'latin1')]
        : [Buffer.from(`${head}{"user_id":${JSON.stringify(userId)},`), presenceTail(snapshot), EVENT_END];
    bodies.set(snapshot, body);
  }
  return body;
}

export function idLine(id: string): Buffer {
  return Buffer.from(`id: ${id}\n`);
}

/** A change's event, for every stream: a small one as one buffer, so each stream writes it once. */
export function changeEvent(id: string, body: readonly Buffer[]): SseChunk {
  const line = idLine(id);
  const [only] = body;
  return chunkOf(body.length === 1 && only ? [Buffer.concat([line, only])] : [line, ...body]);
}
