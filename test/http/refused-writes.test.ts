import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { RefusedWrites } from '../../src/http/refused-writes.js';
import { generateApiKey } from '../../src/keys/api-key.js';
import type { ApiKeyService } from '../../src/keys/service.js';

const LIVE = generateApiKey();
const keys = {
  ownerOf: async (key: string) => (key === LIVE ? '80351110224678912' : undefined),
} as ApiKeyService;
const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) server.close();
});

/** A server whose requests go through `refused` to a handler that counts what reached it. */
async function serve(refused: RefusedWrites): Promise<{ base: string; passed: string[] }> {
  const passed: string[] = [];
  const server = createServer(
    refused.handler(
      keys,
      () => '203.0.113.7',
      (request, response) => {
        passed.push(`${request.method} ${request.url}`);
        response.end('passed');
      },
    ),
  );
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, passed };
}

describe('keyless KV writes of a client whose budget is spent', () => {
  it('are refused before the framework sees them; a live key, reads and other paths go on', async () => {
    let now = 1_000_000;
    const refused = new RefusedWrites(120, { delayMs: 0, now: () => now });
    const { base, passed } = await serve(refused);
    const put = (authorization?: string) =>
      fetch(`${base}/v1/users/@me/kv/a`, {
        method: 'PUT',
        body: 'x',
        ...(authorization ? { headers: { authorization } } : {}),
      });

    expect((await put()).status).toBe(200);
    refused.spent('203.0.113.7', 30);
    const answer = await put(generateApiKey());
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('30');
    expect(answer.headers.get('connection')).toBe('close');
    expect(await answer.json()).toEqual({
      success: false,
      error: {
        code: 'rate_limited',
        message:
          'more than 120 KV writes a minute without a valid API key from this address; retry in 30 seconds',
      },
    });
    expect((await put('not a key')).status).toBe(429);
    expect((await put(LIVE)).status).toBe(200);
    expect((await fetch(`${base}/v1/users/80351110224678912`)).status).toBe(200);
    expect((await fetch(`${base}/nowhere`, { method: 'POST', body: 'x' })).status).toBe(200);

    now += 30_000;
    expect((await put()).status).toBe(200);
    expect(passed).toEqual([
      'PUT /v1/users/@me/kv/a',
      'PUT /v1/users/@me/kv/a',
      'GET /v1/users/80351110224678912',
      'POST /nowhere',
      'PUT /v1/users/@me/kv/a',
    ]);
  });
});

describe('the path of a keyless write', () => {
  it('is recognised percent-encoded too, as the router reads it', async () => {
    const refused = new RefusedWrites(120, { delayMs: 0 });
    const { base, passed } = await serve(refused);
    refused.spent('203.0.113.7', 30);
    for (const path of ['/v1/%75sers/@me/kv/a', '/v1/users/@me/%6Bv/a', '/v1/users/%40me/kv']) {
      expect((await fetch(`${base}${path}`, { method: 'PUT', body: 'x' })).status, path).toBe(429);
    }
    expect((await fetch(`${base}/v1/users/%E0%A4%A/kv`, { method: 'PUT', body: 'x' })).status).toBe(200);
    expect(passed).toEqual(['PUT /v1/users/%E0%A4%A/kv']);
  });
});
