import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EMBED_SIZE_BUDGET_GZIP_BYTES } from '../../src/http/browser-scripts.js';
import { embedPagePolicy } from '../../src/http/embed/page.js';
import { EMBED_CACHE_CONTROL } from '../../src/http/routes/embed.js';
import { startHttpServer } from '../support/http-server.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * `GET /embed.js` and `GET /v1/users/:id/embed` over HTTP: what any site needs to load the script and frame
 * the page, and the refusals of what the element would not take. The element itself is
 * test/embed/browser.test.ts's.
 */

const ID = '94490510688792576';
const CDN = 'https://cdn.example';
const READS = 4;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  ({ app, base } = await startHttpServer({ cdnUrl: CDN }));
});

afterAll(async () => {
  await app?.close();
});

describe('GET /embed.js', () => {
  it('is the element’s script, for pages of any origin, kept an hour with an ETag', async () => {
    const answer = await fetch(`${base}/embed.js`, { headers: { origin: 'https://site.example' } });
    const script = await answer.text();
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(answer.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(answer.headers.get('cache-control')).toBe(EMBED_CACHE_CONTROL);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(script).toContain('presently-presence');
    // One file, no imports: it runs as a classic script and as a module alike.
    expect(script).not.toMatch(/\bimport\s*[({'"]|\bexport\s*\{|import\.meta/);

    const etag = answer.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[\w-]{22}"$/);
    const again = await fetch(`${base}/embed.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect((await fetch(`${base}/embed.js`, { method: 'HEAD' })).headers.get('etag')).toBe(etag);
  });

  it(`weighs at most ${EMBED_SIZE_BUDGET_GZIP_BYTES / 1024} KiB gzipped`, async () => {
    const script = Buffer.from(await (await fetch(`${base}/embed.js`)).arrayBuffer());
    expect(gzipSync(script, { level: 9 }).length).toBeLessThanOrEqual(EMBED_SIZE_BUDGET_GZIP_BYTES);
  });
});

describe('GET /v1/users/:id/embed', () => {
  it('is the element alone on a page any site may frame, with the query as its attributes', async () => {
    const answer = await fetch(
      `${base}/v1/users/${ID}/embed?theme=Dark&layout=compact&fields=mood,%20location,mood`,
    );
    const page = await answer.text();
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(answer.headers.get('content-security-policy')).toBe(embedPagePolicy(CDN));
    expect(answer.headers.get('content-security-policy')).toContain('frame-ancestors *');
    expect(answer.headers.get('x-frame-options')).toBeNull();
    expect(answer.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(answer.headers.get('cache-control')).toBe(EMBED_CACHE_CONTROL);
    const etag = answer.headers.get('etag') ?? '';
    const again = await fetch(`${base}/v1/users/${ID}/embed?layout=compact&theme=dark&fields=mood,location`, {
      headers: { 'if-none-match': etag },
    });
    // The same page, however the query spelled it.
    expect(again.status).toBe(304);
    expect(page).toContain(
      `<presently-presence user="${ID}" theme="dark" layout="compact" fields="mood,location"></presently-presence>`,
    );
    // embed.js, named relative to the page, and nothing else runs.
    expect([...page.matchAll(/<script\b[^>]*>/g)].map(([tag]) => tag)).toEqual([
      '<script src="../../../embed.js" defer>',
    ]);
    expect(new URL('../../../embed.js', `${base}/v1/users/${ID}/embed`).href).toBe(`${base}/embed.js`);
  });

  it('has the defaults without a query, and ignores what it does not know (`base` among them)', async () => {
    const page = await (
      await fetch(`${base}/v1/users/${ID}/embed?base=https://elsewhere.example&v=2`)
    ).text();
    expect(page).toContain(
      `<presently-presence user="${ID}" theme="auto" layout="full" fields=""></presently-presence>`,
    );
    expect(page).not.toContain('elsewhere');
  });

  it('names an HTTP CDN in its images (an HTTPS one is in `https:`)', () => {
    expect(embedPagePolicy('http://127.0.0.1:9000/cdn')).toContain(
      "img-src 'self' http://127.0.0.1:9000 https:",
    );
    expect(embedPagePolicy(CDN)).toContain("img-src 'self' https:;");
  });

  it.each([
    [
      'an id that is not one',
      '/v1/users/123abc/embed',
      'invalid_user_id',
      /not a Discord user id|must match/,
    ],
    [
      'a theme it does not know',
      `/v1/users/${ID}/embed?theme=blue`,
      'invalid_query',
      /theme is one of auto, light, dark/,
    ],
    [
      'a layout it does not know',
      `/v1/users/${ID}/embed?layout=grid`,
      'invalid_query',
      /layout is one of full, compact, badge/,
    ],
    [
      'a field that is no KV key',
      `/v1/users/${ID}/embed?fields=mood,a-b`,
      'invalid_query',
      /"a-b" is not one/,
    ],
  ])('refuses %s, in the envelope', async (_what, path, code, message) => {
    const answer = await fetch(`${base}${path}`);
    expect(answer.status).toBe(400);
    const body = (await answer.json()) as { success: boolean; error: { code: string; message: string } };
    expect(body).toMatchObject({ success: false, error: { code } });
    expect(body.error.message).toMatch(message);
  });
});

describe('the read budget', () => {
  let limited: FastifyInstance;
  let limitedBase: string;

  beforeAll(async () => {
    ({ app: limited, base: limitedBase } = await startHttpServer({ rateLimits: { read: READS, write: 0 } }));
  });

  afterAll(async () => {
    vi.useRealTimers();
    await limited?.close();
  });

  it('counts the script and the page as reads', async () => {
    await inOneReadWindow();
    const answers = [];
    for (let n = 0; n < READS / 2; n++) {
      answers.push(
        await fetch(`${limitedBase}/embed.js`),
        await fetch(`${limitedBase}/v1/users/${ID}/embed`),
      );
    }
    expect(answers.map((answer) => answer.headers.get('ratelimit-remaining'))).toEqual(['3', '2', '1', '0']);
    expect((await fetch(`${limitedBase}/embed.js`)).status).toBe(429);
    expect((await fetch(`${limitedBase}/v1/users/${ID}/embed`)).status).toBe(429);
  });
});
