import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { endInSlices } from '../../src/http/sliced-body.js';
import { STREAM_HIGH_WATER_BYTES } from '../../src/socket/outbound.js';
import { eventually } from '../support/eventually.js';

/** A connection whose client reads a chunk only when told: what was written, and a way to read on. */
function slowConnection() {
  const chunks: Buffer[] = [];
  const pending: (() => void)[] = [];
  const connection = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      pending.push(callback);
    },
  });
  const readOne = (): void => pending.shift()?.();
  return { connection, chunks, readOne, waiting: () => pending.length };
}

/** Lets `count` turns of the event loop go by. */
async function turns(count: number): Promise<void> {
  for (let n = 0; n < count; n++) await new Promise<void>((resolve) => setImmediate(resolve));
}

const BODY = Buffer.from(Array.from({ length: 3 * STREAM_HIGH_WATER_BYTES + 1234 }, (_, n) => n % 251));

describe('endInSlices', () => {
  it('writes a large body a slice at a time, the next once the reader has taken the last, and ends with the rest', async () => {
    const { connection, chunks, readOne, waiting } = slowConnection();
    let ended = false;
    connection.on('finish', () => {
      ended = true;
    });
    const writing = endInSlices(connection as unknown as ServerResponse, BODY);
    for (let slice = 1; slice <= 4; slice++) {
      await eventually(() => expect(chunks).toHaveLength(slice));
      // The reader has not taken this slice: a few turns later nothing more has been written.
      await turns(5);
      expect(chunks).toHaveLength(slice);
      expect(waiting()).toBe(1);
      readOne();
    }
    await writing;
    await eventually(() => expect(ended).toBe(true));
    expect(chunks.map((chunk) => chunk.length)).toEqual([
      STREAM_HIGH_WATER_BYTES,
      STREAM_HIGH_WATER_BYTES,
      STREAM_HIGH_WATER_BYTES,
      1234,
    ]);
    expect(Buffer.concat(chunks).equals(BODY)).toBe(true);
  });

  it('stops writing when the reader goes away', async () => {
    const { connection, chunks } = slowConnection();
    const writing = endInSlices(connection as unknown as ServerResponse, BODY);
    await eventually(() => expect(chunks).toHaveLength(1));
    connection.destroy();
    await writing;
    expect(chunks).toHaveLength(1);
  });
});
