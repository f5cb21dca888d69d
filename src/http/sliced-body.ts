import type { ServerResponse } from 'node:http';
import { drained, STREAM_HIGH_WATER_BYTES, turnWithRoom } from '../socket/outbound.js';

/**
 * Ends `response` with `body` written as views of at most STREAM_HIGH_WATER_BYTES, each once the
 * connection has taken the last and the turn has room for it (the budget sockets and event streams
 * share). Written whole, a body of megabytes is one copy into the connection that holds the event loop
 * for every other client; a reader that reads slowly gets its next slice as it reads.
 */
export async function endInSlices(response: ServerResponse, body: Buffer): Promise<void> {
  for (let from = 0; from < body.length; from += STREAM_HIGH_WATER_BYTES) {
    if (response.destroyed) return;
    if (response.writableNeedDrain) await drained(response);
    const slice = body.subarray(from, from + STREAM_HIGH_WATER_BYTES);
    await turnWithRoom(slice.length, () => response.destroyed);
    if (response.destroyed) return;
    if (from + STREAM_HIGH_WATER_BYTES >= body.length) response.end(slice);
    else response.write(slice);
  }
}
