import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../src/ops/metrics.js';
import { startHttpServer } from '../support/http-server.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * No route is free to flood: a path no route serves costs a read like any other, and the probes and the
 * scrape have a budget of their own, the size of the read budget, so a client that spent its reads still
 * passes a health check.
 */
const READS = 3;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  ({ app, base } = await startHttpServer({
    rateLimits: { read: READS, write: 0 },
    ops: { metrics: new Metrics(), metricsToken: null, readiness: [] },
  }));
});

afterAll(async () => {
  await app?.close();
});

async function get(path: string): Promise<{ status: number; body: unknown; limit: string | null }> {
  const answer = await fetch(`${base}${path}`);
  return { status: answer.status, body: await answer.json(), limit: answer.headers.get('ratelimit-limit') };
}

const REFUSED = { success: false, error: { code: 'rate_limited', message: expect.any(String) } };

describe('paths no route serves', () => {
  it('are reads: past the budget, 429 rate_limited in the envelope, and reads are refused too', async () => {
    await inOneReadWindow();
    for (const path of ['/nowhere', '/v1/nothing', '/v1/version']) {
      expect((await get(path)).limit).toBe(String(READS));
    }
    const refused = await get('/nowhere/again');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual(REFUSED);
    expect((await get('/v1/version')).status).toBe(429);
  });
});

describe('probes and the scrape', () => {
  it('have a budget of their own: answered while reads are spent, 429 rate_limited past it', async () => {
    await inOneReadWindow();
    for (let n = 0; n <= READS; n++) await get('/v1/version');
    expect((await get('/v1/version')).status).toBe(429);
    const answered = [await get('/v1/health'), await get('/v1/ready')];
    expect(answered.map((answer) => [answer.status, answer.limit])).toEqual([
      [200, String(READS)],
      [200, String(READS)],
    ]);
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    const refused = await get('/v1/health');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual(REFUSED);
  });
});
