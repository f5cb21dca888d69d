import { request } from 'node:http';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DEMO_USERS } from '../../src/demo/cast.js';
import { homeContentSecurityPolicy } from '../../src/http/routes/home.js';
import { CONTENT_SECURITY_POLICY } from '../../src/net/security-headers.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * `GET /` against the real service: a browser gets the landing page, everything else Lanyard's JSON info,
 * and the page is whole without script.
 */
const GUILD = '300000000000000010';
const MEMBERS = ['94490510688792576', '218486934151479296', '381456437152087040'];
const LATE = '725054734427766827';
const CHROME =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Home',
        members: MEMBERS.map((id) => ({ user: { id, username: `user${id.slice(-3)}` } })),
      }),
  });
  await eventually(() => expect(harness.app.registry.size).toBe(MEMBERS.length));
});

afterAll(async () => {
  await harness?.close();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** node:http, which sends no header it is not given: a request without Accept is one. */
function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${harness.base}${path}`, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const html = (path = '/', headers: Record<string, string> = {}) => get(path, { accept: CHROME, ...headers });

describe('content negotiation', () => {
  it.each([
    ['Chromium', { accept: CHROME }],
    [
      'Firefox',
      { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8' },
    ],
    ['Safari', { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }],
    ['HTML over weighted-down JSON', { accept: 'application/json;q=0.5, text/html' }],
  ])('%s gets the page', async (_client, headers) => {
    const answer = await get('/', headers);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(answer.headers.vary).toBe('Accept');
    expect(answer.headers['cache-control']).toBe('no-cache');
    expect(answer.headers['content-security-policy']).toBe(
      homeContentSecurityPolicy(harness.simulator.cdnUrl),
    );
    expect(answer.body).toMatch(/^<!doctype html>/);
  });

  it.each([
    ['no Accept', {}],
    ['curl', { accept: '*/*', 'user-agent': 'curl/8.5.0' }],
    ['application/json', { accept: 'application/json' }],
    ['axios', { accept: 'application/json, text/plain, */*' }],
    ['a tie', { accept: 'text/html, application/json' }],
    ['HTML refused', { accept: 'text/html;q=0, */*' }],
  ])(
    "%s gets Lanyard's info, in the envelope, with the number of monitored users",
    async (_client, headers) => {
      const answer = await get('/', headers);
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.headers.vary).toBe('Accept');
      expect(answer.headers['cache-control']).toBe('no-cache');
      expect(answer.headers['access-control-allow-origin']).toBe('*');
      expect(answer.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(JSON.parse(answer.body)).toEqual({
        success: true,
        data: {
          info: expect.stringContaining('Lanyard-compatible'),
          monitored_user_count: harness.app.registry.size,
          discord_invite: null,
        },
      });
      expect(harness.app.registry.size).toBe(MEMBERS.length);
    },
  );

  it('the count follows who is monitored, on the page too', async () => {
    harness.simulator.addMember(GUILD, { user: { id: LATE, username: 'late' } });
    await eventually(async () => {
      const info = JSON.parse((await get('/')).body) as { data: { monitored_user_count: number } };
      expect(info.data.monitored_user_count).toBe(MEMBERS.length + 1);
    });
    expect((await html()).body).toContain(`<strong id="monitored">${MEMBERS.length + 1} users</strong>`);
    harness.simulator.removeMember(GUILD, LATE);
    await eventually(() => expect(harness.app.registry.size).toBe(MEMBERS.length));
  });

  it('HEAD answers like GET, without a body, for either kind', async () => {
    for (const accept of [CHROME, 'application/json']) {
      const [head, full] = await Promise.all([get('/', { accept }, 'HEAD'), get('/', { accept })]);
      expect(head.status).toBe(200);
      expect(head.body).toBe('');
      expect(head.headers['content-type']).toBe(full.headers['content-type']);
      expect(head.headers.vary).toBe('Accept');
    }
  });
});

describe('the page without script', () => {
  it('explains the service, lists the endpoints, and says the viewer needs JavaScript', async () => {
    const { body } = await html();
    expect(body).toContain('Lanyard-compatible');
    expect(body).toContain('<noscript>');
    for (const path of ['/v1/users/:id', '/v1/users/:id/card.svg', '/v1/users/:id/history', '/socket']) {
      expect(body).toContain(`<code>GET ${path}</code>`);
    }
    // No id yet: the snippets say where it goes; no card.
    expect(body).toContain('<span data-fill="id">USER_ID</span>');
    expect(body).toContain('<figure id="card-figure" class="card"></figure>');
    // Nothing inline for the CSP to refuse: no inline script or style, no event handler attributes.
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)|<style|\sstyle=|\son[a-z]+=/i);
  });

  it('with ?id= shows that user’s card and fills the snippets in for them, with the host asked for', async () => {
    const [id] = MEMBERS;
    const { body } = await html(`/?id=${id}`, { host: 'presence.example.test:8080' });
    expect(body).toContain(`value="${id}"`);
    expect(body).toContain(`<img id="card" src="/v1/users/${id}/card.svg"`);
    expect(body).toContain(
      `curl <span data-fill="origin">http://presence.example.test:8080</span>/v1/users/<span data-fill="id">${id}</span>`,
    );
    expect(body).toContain('<span data-fill="socket">ws://presence.example.test:8080</span>/socket');
  });

  it('shows back an id it cannot take, escaped, with the reason, and no card', async () => {
    const bad = '<script>alert(1)</script>';
    const answer = await html(`/?id=${encodeURIComponent(bad)}`);
    expect(answer.status).toBe(200);
    expect(answer.body).not.toContain(bad);
    expect(answer.body).toContain('“&lt;script&gt;alert(1)&lt;/script&gt;” is not a Discord user id');
    expect(answer.body).toContain('value="&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(answer.body).not.toContain('<img id="card"');
    // 20 digits, but past 64 bits.
    expect((await html('/?id=99999999999999999999')).body).toContain('is not a Discord user id');
  });

  it('escapes the Host header it puts in the snippets', async () => {
    const { body } = await html('/', { host: 'x"><img src=x onerror=alert(1)>' });
    expect(body).not.toContain('<img src=x');
    expect(body).toContain('http://x&quot;&gt;&lt;img src=x onerror=alert(1)&gt;');
  });
});

describe('the page’s stylesheet and script', () => {
  it('are served under hashed names, cached for good, typed for nosniff', async () => {
    const { body } = await html();
    const stylesheet = /<link rel="stylesheet" href="(\/page\/page\.[\w-]+\.css)">/.exec(body)?.[1];
    const script = /<script type="module" src="(\/page\/viewer\.[\w-]+\.js)"><\/script>/.exec(body)?.[1];
    for (const [path, type] of [
      [stylesheet, 'text/css; charset=utf-8'],
      [script, 'text/javascript; charset=utf-8'],
    ] as const) {
      expect(path).toBeDefined();
      const answer = await get(path ?? '');
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe(type);
      expect(answer.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.body.length).toBeGreaterThan(1000);
    }
  });

  it('an unknown or outdated name is a 404 in the envelope', async () => {
    const answer = await get('/page/viewer.outdated.js');
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body)).toEqual({
      success: false,
      error: { code: 'not_found', message: 'no route for GET /page/viewer.outdated.js' },
    });
  });
});

describe('in demo mode', () => {
  it("offers the demo's users as one-click examples, and opens on Nova, whose API key the log shows", async () => {
    const app = await startApp(
      loadConfig({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: '0', RATE_LIMIT_READ: '0' }),
      { logger: pino({ level: 'silent' }) },
    );
    try {
      // Closing while the gateway is still connecting to the simulated Discord is another test's business.
      await eventually(() => expect(app.view.size).toBe(Object.keys(DEMO_USERS).length));
      const response = await fetch(`${app.url}/`, { headers: { accept: CHROME } });
      const body = await response.text();
      expect(body).toContain('Demo mode');
      for (const user of Object.values(DEMO_USERS)) {
        expect(body).toContain(
          `<a href="/?id=${user.id}" data-id="${user.id}">${user.global_name} <span class="id">${user.id}</span></a>`,
        );
      }
      // Without ?id= the page is Nova's: the field filled in, the card, the snippets.
      const nova = DEMO_USERS.nova.id;
      expect(body).toContain(`value="${nova}"`);
      expect(body).toContain(`<img id="card" src="/v1/users/${nova}/card.svg"`);
      expect(body).toContain(`/v1/users/<span data-fill="id">${nova}</span>`);
      expect(body).toContain("The service's log shows an API key for Nova");
      // An id asked for is still the one shown.
      const kai = await (
        await fetch(`${app.url}/?id=${DEMO_USERS.kai.id}`, { headers: { accept: CHROME } })
      ).text();
      expect(kai).toContain(`value="${DEMO_USERS.kai.id}"`);
      expect(kai).not.toContain(`<img id="card" src="/v1/users/${nova}/card.svg"`);
    } finally {
      await app.close();
    }
  });
});
