import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app.js';
import { installErrorHandling } from '../../src/http/errors.js';
import { limitReads, readChargeOf } from '../../src/http/rate-limits.js';
import { generateApiKey } from '../../src/keys/api-key.js';
import { ReadBudget } from '../../src/limits/read-budget.js';
import { RATE_LIMIT_WINDOW_MS } from '../../src/limits/request-budgets.js';
import { insertApiKey } from '../support/api-key.js';
import { startApiNode } from '../support/api-node.js';
import { type Harness, startHarness } from '../support/harness.js';
import { RawConnection } from '../support/raw-http.js';
import { inOneReadWindow } from '../support/read-window.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

const hasRedis = await redisAvailable('rate limits across API nodes');
const USER = '80351110224678912';
const OTHER = '80351110224678913';
const GUILD = '300000000000000001';

let harness: Harness | undefined;
const apps: App[] = [];

afterEach(async () => {
  await harness?.close();
  harness = undefined;
  for (const app of apps.splice(0)) await app.close();
});

async function start(env: Record<string, string>, abuseRefusalDelayMs = 0): Promise<Harness> {
  harness = await startHarness({
    env,
    abuseRefusalDelayMs,
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
      }),
  });
  return harness;
}

async function expectLimited(response: Response, limit: number): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(response.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(response.headers.get('ratelimit-remaining')).toBe('0');
  const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe('rate_limited');
}

describe('rate limits', () => {
  it('reads share one budget per client IP across routes, with the standard headers', async () => {
    const h = await start({ RATE_LIMIT_READ: '4' });
    await inOneReadWindow();
    const paths = [
      '/v1/version',
      `/v1/users/${USER}`,
      `/v1/users/${USER}/stats`,
      `/v1/users/${USER}/history`,
    ];
    for (const path of paths) {
      const response = await fetch(`${h.base}${path}`);
      expect(response.status, path).not.toBe(429);
      expect(response.headers.get('ratelimit-limit')).toBe('4');
    }
    await expectLimited(await fetch(`${h.base}/v1/users/${USER}/card.svg`), 4);
  });

  it('presence reads count and are refused like any read, remaining going down to the 429', async () => {
    const h = await start({ RATE_LIMIT_READ: '3' });
    await expect.poll(() => h.app.view.get(USER)).toBeDefined();
    await inOneReadWindow();
    const remaining: (string | null)[] = [];
    let etag = '';
    // The second asks with the first's tag: a 304 counts, and says so, as a 200 does.
    for (let n = 0; n < 3; n++) {
      const response = await fetch(`${h.base}/v1/users/${USER}`, {
        headers: n === 1 ? { 'if-none-match': etag } : {},
      });
      expect(response.status).toBe(n === 1 ? 304 : 200);
      etag = response.headers.get('etag') ?? '';
      remaining.push(response.headers.get('ratelimit-remaining'));
      expect(response.headers.get('ratelimit-limit')).toBe('3');
      expect(Number(response.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    await expectLimited(await fetch(`${h.base}/v1/users/${USER}`), 3);
    await expectLimited(await fetch(`${h.base}/v1/version`), 3);
  });

  it('writes are limited per API key; another key has its own budget; a refused write writes nothing', async () => {
    const h = await start({ RATE_LIMIT_WRITE: '2', RATE_LIMIT_READ: '0' });
    const key = await insertApiKey(h.app.store, USER);
    const put = (value: string, auth = key) =>
      fetch(`${h.base}/v1/users/${USER}/kv/note`, {
        method: 'PUT',
        headers: { authorization: auth },
        body: value,
      });
    expect((await put('one')).status).toBe(204);
    expect((await put('two')).status).toBe(204);
    await expectLimited(await put('three'), 2);
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({ note: 'two' });

    const other = await insertApiKey(h.app.store, '80351110224678913');
    const response = await fetch(`${h.base}/v1/users/80351110224678913/kv/note`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${other}` },
      body: 'fine',
    });
    expect(response.status).toBe(204);
    // Reads are not writes: unlimited here, and not counted against the key.
    expect((await fetch(`${h.base}/v1/users/${USER}`)).status).toBe(200);
  });

  it('writes refused for their id or key count against the client: random keys are refused 429, a live key still writes', async () => {
    const h = await start({ RATE_LIMIT_WRITE: '3', RATE_LIMIT_READ: '0' });
    const key = await insertApiKey(h.app.store, USER);
    const put = (authorization?: string, id = USER) =>
      fetch(`${h.base}/v1/users/${id}/kv/note`, {
        method: 'PUT',
        headers: authorization === undefined ? {} : { authorization },
        body: 'flood',
      });
    // 401 (a key nobody holds), 400 (not a user id), 403 (another user's id): each counts.
    expect([
      (await put(generateApiKey())).status,
      (await put(key, 'not-an-id')).status,
      (await put(key, OTHER)).status,
    ]).toEqual([401, 400, 403]);
    for (const refused of [
      await put(generateApiKey()),
      await put('guess'),
      await put(),
      await put(key, OTHER),
    ]) {
      await expectLimited(refused, 3);
    }
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({});

    expect((await put(key)).status).toBe(204);
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({ note: 'flood' });

    // Spent, a keyless write is refused before its body is read: the answer comes while the body is
    // still owed, and the connection ends with it.
    const raw = await RawConnection.open(h.base);
    await raw.write(
      `PATCH /v1/users/${USER}/kv HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"a":`,
    );
    const answer = await raw.waitFor(/"code":"rate_limited"/);
    expect(answer).toMatch(/^HTTP\/1\.1 429 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    await raw.closed;
  });

  it('a client that keeps writing without a key once refused waits for each refusal; its reads do not', async () => {
    const h = await start({ RATE_LIMIT_WRITE: '1', RATE_LIMIT_READ: '0' }, 1_000);
    const put = () => fetch(`${h.base}/v1/users/${USER}/kv/note`, { method: 'PUT', body: 'x' });
    expect((await put()).status).toBe(401);
    // The refusal that spends the budget is answered at once; the next one is held.
    await expectLimited(await put(), 1);
    const order: string[] = [];
    const held = put().then(async (response) => {
      order.push(`write ${response.status}`);
      return response;
    });
    const read = await fetch(`${h.base}/v1/users/${USER}`);
    order.push(`read ${read.status}`);
    await expectLimited(await held, 1);
    expect(order).toEqual(['read 200', 'write 429']);
  });

  it('a client still reading after a budget of refusals waits for each further one, which ends its connection; others do not wait', async () => {
    const h = await start({ RATE_LIMIT_READ: '2', TRUST_PROXY: '127.0.0.1' }, 1_000);
    await expect.poll(() => h.app.view.get(USER)).toBeDefined();
    await inOneReadWindow();
    const read = (client: string) =>
      fetch(`${h.base}/v1/users/${USER}`, { headers: { 'x-forwarded-for': client } });
    expect([(await read('198.51.100.1')).status, (await read('198.51.100.1')).status]).toEqual([200, 200]);
    // A budget's worth of refusals is answered at once.
    await expectLimited(await read('198.51.100.1'), 2);
    await expectLimited(await read('198.51.100.1'), 2);
    const raw = await RawConnection.open(h.base);
    await raw.write(`GET /v1/users/${USER} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.1\r\n\r\n`);
    const order: string[] = [];
    const held = raw.waitFor(/"code":"rate_limited"/).then((answer) => {
      order.push('held 429');
      return answer;
    });
    const other = await read('198.51.100.2');
    order.push(`other ${other.status}`);
    const answer = await held;
    expect(order).toEqual(['other 200', 'held 429']);
    expect(answer).toMatch(/^HTTP\/1\.1 429 /);
    expect(answer).toMatch(/\r\nretry-after: \d+\r\n/i);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    await raw.closed;
  });

  it('behind a trusted proxy, clients with different X-Forwarded-For have a write budget each', async () => {
    const h = await start({ RATE_LIMIT_WRITE: '2', RATE_LIMIT_READ: '0', TRUST_PROXY: '127.0.0.1' });
    const put = (client: string) =>
      fetch(`${h.base}/v1/users/@me/kv/note`, {
        method: 'PUT',
        headers: { authorization: generateApiKey(), 'x-forwarded-for': client },
        body: 'x',
      });
    expect([(await put('198.51.100.1')).status, (await put('198.51.100.1')).status]).toEqual([401, 401]);
    await expectLimited(await put('198.51.100.1'), 2);
    expect((await put('198.51.100.2')).status).toBe(401);
  });

  it('0 switches a limit off', async () => {
    const h = await start({ RATE_LIMIT_READ: '0' });
    for (let i = 0; i < 30; i++) expect((await fetch(`${h.base}/v1/version`)).status).toBe(200);
    expect((await fetch(`${h.base}/v1/version`)).headers.get('ratelimit-limit')).toBeNull();
  });

  it.skipIf(!hasRedis)(
    'with Redis, one budget holds across API nodes, each deciding from the counts of its last sync',
    async () => {
      const prefix = uniquePrefix();
      for (let i = 0; i < 2; i++) apps.push(await startApiNode(prefix, { RATE_LIMIT_READ: '10' }));
      const [a, b] = apps as [App, App];
      const { Redis } = await import('ioredis');
      const redis = new Redis(REDIS_TEST_URL);
      /** The client's reads as every node has added them to Redis so far. */
      const shared = async () => {
        const [key] = await redis.keys(`${prefix}rate-limit:read:*`);
        return key === undefined ? 0 : Number(await redis.get(key));
      };
      const read = async (node: App) => (await fetch(`${node.url}/v1/version`)).status;
      try {
        await inOneReadWindow();
        for (let n = 0; n < 10; n++) expect(await read(a)).toBe(200);
        await expectLimited(await fetch(`${a.url}/v1/version`), 10);
        await expect.poll(shared).toBe(11);
        // b has not synced since the client read on a: it answers until it does (docs/limits.md).
        expect(await read(b)).toBe(200);
        await expect.poll(shared).toBe(12);
        // Synced, b refuses: on its own count it would still have answered 9.
        let answered = 0;
        while ((await read(b)) === 200) answered++;
        expect(answered).toBeLessThanOrEqual(1);
        await expectLimited(await fetch(`${b.url}/v1/version`), 10);
      } finally {
        await dropPrefix(redis, prefix);
        redis.disconnect();
      }
    },
  );

  it.skipIf(!hasRedis)(
    'with Redis, a write budget holds across API nodes: one counter per client, whichever node it writes to',
    async () => {
      const prefix = uniquePrefix();
      for (let i = 0; i < 2; i++) apps.push(await startApiNode(prefix, { RATE_LIMIT_WRITE: '2' }));
      const [a, b] = apps as [App, App];
      const { Redis } = await import('ioredis');
      const redis = new Redis(REDIS_TEST_URL);
      const put = (node: App) =>
        fetch(`${node.url}/v1/users/${USER}/kv/note`, {
          method: 'PUT',
          headers: { authorization: generateApiKey() },
          body: 'x',
        });
      try {
        expect([(await put(a)).status, (await put(b)).status]).toEqual([401, 401]);
        await expectLimited(await put(a), 2);
        await expectLimited(await put(b), 2);
        expect(await redis.keys(`${prefix}rate-limit:write:*`)).toEqual([
          `${prefix}rate-limit:write:ip:127.0.0.1`,
        ]);
        expect(await redis.get(`${prefix}rate-limit:write:ip:127.0.0.1`)).toBe('4');
      } finally {
        await dropPrefix(redis, prefix);
        redis.disconnect();
      }
    },
  );
});

/** `RateLimit-Limit`, `-Remaining`, `-Reset` and `Retry-After` of an answer. */
const told = (answer: LightMyRequestResponse) =>
  ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after'].map(
    (name) => answer.headers[name],
  );

describe('a read budget on Fastify routes', () => {
  /** 12:00:15 UTC: 45 s before the window ends. */
  const AT_15_S = Date.UTC(2026, 0, 1, 12, 0, 15);
  const budgets: ReadBudget[] = [];
  const servers: FastifyInstance[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const budget of budgets.splice(0)) budget.close();
    for (const server of servers.splice(0)) await server.close();
  });

  function budget(options: { max: number }): ReadBudget {
    const made = new ReadBudget({ ...options, windowMs: RATE_LIMIT_WINDOW_MS });
    budgets.push(made);
    return made;
  }

  /** GET /read (one read) and GET /bulk?n= (n reads), limited by `reads`, as server.ts wires them. */
  async function serve(reads: ReadBudget, limited: string[]): Promise<FastifyInstance> {
    const app = Fastify();
    servers.push(app);
    installErrorHandling(app);
    const settings = { read: reads.max, write: 0, onLimited: (kind: string) => limited.push(kind) };
    await app.register(async (scope) => {
      limitReads(scope, reads, settings);
      const charge = readChargeOf(reads, settings);
      scope.get('/read', async () => 'ok');
      scope.get('/bulk', async (request, reply) => {
        charge?.(request, reply, Number((request.query as { n: string }).n));
        return 'ok';
      });
    });
    return app;
  }

  it('answers the draft headers, then 429 rate_limited with Retry-After and the message it always had', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(AT_15_S);
    const limited: string[] = [];
    const app = await serve(budget({ max: 2 }), limited);
    const first = await app.inject('/read');
    expect(first.statusCode).toBe(200);
    expect(told(first)).toEqual(['2', '1', '45', undefined]);
    expect(told(await app.inject('/read'))).toEqual(['2', '0', '45', undefined]);
    const refused = await app.inject('/read');
    expect(refused.statusCode).toBe(429);
    expect(told(refused)).toEqual(['2', '0', '45', '45']);
    expect(refused.json()).toEqual({
      success: false,
      error: { code: 'rate_limited', message: 'more than 2 reads a minute; retry in 45 seconds' },
    });
    expect(limited).toEqual(['read']);

    vi.setSystemTime(AT_15_S + 45_000);
    expect((await app.inject('/read')).headers['ratelimit-remaining']).toBe('1');
    expect((await app.inject('/read')).statusCode).toBe(200);
    expect((await app.inject('/read')).json().error.message).toBe(
      'more than 2 reads a minute; retry in 1 minute',
    );
  });

  it('charges a bulk read one read per id, the request’s own included, and refuses one the budget cannot pay', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(AT_15_S + 44_000);
    const limited: string[] = [];
    const app = await serve(budget({ max: 10 }), limited);
    const four = await app.inject('/bulk?n=4');
    expect(four.statusCode).toBe(200);
    expect(four.headers['ratelimit-remaining']).toBe('6');
    expect((await app.inject('/bulk?n=1')).headers['ratelimit-remaining']).toBe('5');
    const six = await app.inject('/bulk?n=6');
    expect(six.statusCode).toBe(429);
    expect(told(six)).toEqual(['10', '0', '1', '1']);
    expect(six.json().error.message).toBe(
      'more than 10 reads a minute (a bulk read counts one per id); retry in 1 second',
    );
    expect((await app.inject('/read')).statusCode).toBe(429);
    expect(limited).toEqual(['read', 'read']);
  });
});
