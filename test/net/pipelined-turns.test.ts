import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { buildTestHttpServer } from '../support/http-server.js';
import { RawConnection } from '../support/raw-http.js';

/**
 * A few connections pipelining thousands of requests each do not hold everyone else up: another client
 * is answered while their bursts are still being worked through, and each burst is answered whole, in order.
 */
const CONNECTIONS = 4;
const PER_CONNECTION = 5_000;

let app: FastifyInstance;
let base: string;
/** Burst requests handled so far, and how many had been when the other client's request was. */
let handled = 0;
let handledBeforeProbe = -1;

beforeAll(async () => {
  app = await buildTestHttpServer();
  app.get('/burst', async (request) => {
    handled++;
    return (request.query as { n: string }).n;
  });
  app.get('/probe', async () => {
    handledBeforeProbe = handled;
    return 'probe';
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await app?.close();
});

/** The bodies of the answers received on `connection` so far, in order. */
function bodies(connection: RawConnection): string[] {
  return [...connection.text.matchAll(/\r\n\r\n(\d+)/g)].map((match) => match[1] as string);
}

describe('pipelined bursts', () => {
  it('leave another client answered before any one burst has been handled, and are answered whole, in order', async () => {
    const bursts = await Promise.all(Array.from({ length: CONNECTIONS }, () => RawConnection.open(base)));
    const requests = Array.from(
      { length: PER_CONNECTION },
      (_, n) => `GET /burst?n=${n} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ).join('');
    await Promise.all(bursts.map((connection) => connection.write(requests)));

    const probe = await fetch(`${base}/probe`);
    expect(await probe.text()).toBe('probe');
    expect(handledBeforeProbe).toBeGreaterThanOrEqual(0);
    expect(handledBeforeProbe).toBeLessThan(PER_CONNECTION);

    const expected = Array.from({ length: PER_CONNECTION }, (_, n) => String(n));
    await eventually(() => expect(handled).toBe(CONNECTIONS * PER_CONNECTION), 30_000, 50);
    for (const connection of bursts) {
      await eventually(() => expect(bodies(connection)).toEqual(expected), 30_000, 100);
      connection.socket.destroy();
    }
  });
});
