import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { INTENTS } from '../../src/discord/intents.js';
import { instanceFacts, intentsOf, LICENSE } from '../../src/http/page/legal.js';
import { PAGE_CONTENT_SECURITY_POLICY } from '../../src/http/routes/home.js';
import { CONTENT_SECURITY_POLICY } from '../../src/net/security-headers.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { startHttpServer } from '../support/http-server.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * `/privacy` and `/terms`: made from the instance's configuration, HTML to a browser and the same facts as
 * JSON to a program, operator text escaped, in the read budget.
 */

const CHROME =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

const servers: FastifyInstance[] = [];

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

afterEach(() => {
  vi.useRealTimers();
});

/** A server whose pages speak of the configuration `env` makes. */
async function serve(env: Record<string, string> = {}, read = 0): Promise<string> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', ...env });
  const { app, base } = await startHttpServer({
    instance: instanceFacts(config, INTENTS),
    rateLimits: { read, write: 0 },
  });
  servers.push(app);
  return base;
}

interface Page {
  status: number;
  headers: Headers;
  body: string;
}

async function page(base: string, path: string): Promise<Page> {
  const response = await fetch(`${base}${path}`, { headers: { accept: CHROME } });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

async function json<T = Record<string, unknown>>(base: string, path: string): Promise<T> {
  const response = await fetch(`${base}${path}`, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { success: boolean; data: T };
  expect(body.success).toBe(true);
  return body.data;
}

/** The text of an element of the page by its id, tags taken out. */
function textOf(body: string, id: string): string {
  const match = new RegExp(`<(\\w+) id="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(body);
  if (!match) throw new Error(`no element #${id}`);
  return (match[2] ?? '').replace(/<[^>]+>/g, '').replace(/\s+/g, ' ');
}

describe('the defaults', () => {
  let base: string;
  beforeAll(async () => {
    base = await serve();
  });

  it('the JSON says what the configuration says: everyone monitored, 30 days, no contact, prefix ?', async () => {
    const data = await json(base, '/privacy');
    expect(data).toMatchObject({
      operator_contact: null,
      command_prefix: '?',
      monitor: 'all',
      monitor_role_id: null,
      guild_ids: null,
      allowed_user_count: null,
      retention_days: 30,
    });
    expect(data.who_is_monitored).toEqual([
      'Everyone who shares a server with the bot is monitored, online or offline.',
    ]);
    expect(data.retention).toContain('erased 30 days later');
    expect(data.opting_out).toEqual([expect.stringContaining('leave the servers you share with the bot')]);
  });

  it('names the gateway intents the bot identifies with, and which Discord calls privileged', async () => {
    const data = await json<{ intents: { name: string; privileged: boolean }[] }>(base, '/privacy');
    expect(data.intents.map(({ name, privileged }) => [name, privileged])).toEqual([
      ['GUILDS', false],
      ['GUILD_MEMBERS', true],
      ['GUILD_PRESENCES', true],
      ['DIRECT_MESSAGES', false],
    ]);
  });

  it('lists what is recorded and every control, with the bot and with the API', async () => {
    const data = await json<{
      recorded: { what: string; kept: string }[];
      controls: { what: string; bot: string | null; api: string | null }[];
    }>(base, '/privacy');
    const recorded = data.recorded.map((item) => item.what).join('\n');
    for (const what of ['presence', 'History', 'play counts', 'KV', 'only a hash', 'Webhooks', 'profile']) {
      expect(recorded).toContain(what);
    }
    expect(data.recorded.find((item) => item.what.startsWith('History'))?.kept).toBe(
      'until you erase it (/presently forget)',
    );
    expect(data.controls.map(({ bot, api }) => [bot, api])).toEqual([
      ['/presently privacy show', 'GET /v1/users/@me/privacy'],
      ['/presently privacy hide', 'PATCH /v1/users/@me/privacy'],
      [
        '/presently privacy set setting:visibility value:private',
        'PATCH /v1/users/@me/privacy {"visibility": "private"}',
      ],
      ['/presently privacy pause for:2h', 'PATCH /v1/users/@me/privacy {"paused_until": …}'],
      [
        '/presently privacy set setting:record_history value:false',
        'PATCH /v1/users/@me/privacy {"record_history": false}',
      ],
      ['/presently forget', null],
      ['/presently forget all:True', 'DELETE /v1/users/@me'],
      ['/presently export', 'GET /v1/users/@me/export'],
      ['/presently key', null],
    ]);
  });

  it('the page says the same, in the landing page’s stylesheet, header and footer, without script', async () => {
    const { status, headers, body } = await page(base, '/privacy');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(body).toMatch(/^<!doctype html>/);
    expect(body).toContain('<h1 id="title">Privacy on this instance</h1>');
    expect(textOf(body, 'operator')).toContain('gave no contact (OPERATOR_CONTACT is not set)');
    expect(textOf(body, 'retention')).toContain('erased 30 days later');
    expect(textOf(body, 'retention')).toContain('RETENTION_DAYS=30');
    expect(body).toContain('<code>GUILD_PRESENCES</code>');
    expect(body).toContain('<code>/presently forget all:True</code>');
    expect(body).toContain('<code>DELETE /v1/users/@me</code>');
    expect(body).toContain('its prefix here is <code>?</code>');
    expect(body).toContain('<header class="site">');
    expect(body).toContain('<a href="/privacy">Privacy</a> · <a href="/terms">Terms</a>');
    // Nothing the page's CSP would refuse, and no script at all.
    expect(body).not.toMatch(/<script|<style|\sstyle=|\son[a-z]+=/i);
    const stylesheet = /<link rel="stylesheet" href="(\/page\/page\.[\w-]+\.css)">/.exec(body)?.[1];
    expect(stylesheet).toBeDefined();
  });

  it('terms: the rate limits, no warranty, the license', async () => {
    const data = await json<{
      rate_limits: object;
      license: string;
      terms: { title: string; text: string }[];
    }>(base, '/terms');
    expect(data.rate_limits).toEqual({ read_per_minute: 1200, write_per_minute: 120 });
    expect(data.license).toBe('MIT');
    expect(data.terms.map((term) => term.title)).toEqual([
      'Using the API',
      'Rate limits',
      'Abuse',
      'No warranty',
      'Discord',
      'Open source',
    ]);
    const text = data.terms.map((term) => term.text).join('\n');
    expect(text).toContain('1,200 a minute per client address');
    expect(text).toContain('120 a minute per API key');
    expect(text).toContain('without warranty of any kind');
    expect(text).toContain('open source under the MIT license');
    const { body } = await page(base, '/terms');
    expect(body).toContain('<h1 id="title">Terms of use</h1>');
    expect(body).toContain('1,200 a minute per client address');
    expect(body).toContain('<a href="/privacy">Privacy</a>');
  });
});

describe('content negotiation, as for /', () => {
  let base: string;
  beforeAll(async () => {
    base = await serve();
  });

  it.each(['/privacy', '/terms'])('%s: a browser gets the page under the page’s own CSP', async (path) => {
    const { status, headers } = await page(base, path);
    expect(status).toBe(200);
    expect(headers.get('vary')).toBe('Accept');
    expect(headers.get('cache-control')).toBe('no-cache');
    expect(headers.get('content-security-policy')).toBe(PAGE_CONTENT_SECURITY_POLICY);
    expect(headers.get('referrer-policy')).toBe('no-referrer');
    expect(headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each([
    ['/privacy', 'no Accept', undefined],
    ['/privacy', 'curl', '*/*'],
    ['/terms', 'application/json', 'application/json'],
    ['/terms', 'a tie', 'text/html, application/json'],
  ])('%s: %s gets JSON, under the API’s CSP', async (path, _client, accept) => {
    const response = await fetch(`${base}${path}`, accept === undefined ? {} : { headers: { accept } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('vary')).toBe('Accept');
    expect(response.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(((await response.json()) as { success: boolean }).success).toBe(true);
  });

  it('HEAD answers like GET, without a body', async () => {
    const response = await fetch(`${base}/privacy`, { method: 'HEAD', headers: { accept: CHROME } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await response.text()).toBe('');
  });
});

describe('the configuration decides what the pages say', () => {
  it('RETENTION_DAYS=7 says 7 days; 0 says at once', async () => {
    const seven = await serve({ RETENTION_DAYS: '7' });
    expect((await json(seven, '/privacy')).retention_days).toBe(7);
    const retention = textOf((await page(seven, '/privacy')).body, 'retention');
    expect(retention).toContain('erased 7 days later, unless you are monitored again before');
    expect(retention).toContain('RETENTION_DAYS=7');
    const once = await serve({ RETENTION_DAYS: '0' });
    expect(textOf((await page(once, '/privacy')).body, 'retention')).toContain('is erased at once');
    const oneDay = await serve({ RETENTION_DAYS: '1' });
    expect((await json(oneDay, '/privacy')).retention).toContain('erased 1 day later');
  });

  it('OPERATOR_CONTACT is shown as text, escaped, on both pages; JSON gives it as it is', async () => {
    const contact = '<script>alert(1)</script> & "friends"';
    const base = await serve({ OPERATOR_CONTACT: contact });
    for (const path of ['/privacy', '/terms']) {
      const { body } = await page(base, path);
      expect(body).not.toContain('<script>');
      expect(body).toContain(
        '<strong id="operator-contact">&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;friends&quot;</strong>',
      );
      expect((await json(base, path)).operator_contact).toBe(contact);
    }
  });

  it('a contact that is an https URL or a mail address is a link; any other scheme stays text', async () => {
    const url = await serve({ OPERATOR_CONTACT: 'https://example.org/contact?a=1&b=2' });
    expect((await page(url, '/privacy')).body).toContain(
      '<a href="https://example.org/contact?a=1&amp;b=2" rel="nofollow">https://example.org/contact?a=1&amp;b=2</a>',
    );
    const mail = await serve({ OPERATOR_CONTACT: 'ops@example.org' });
    expect((await page(mail, '/terms')).body).toContain(
      '<a href="mailto:ops@example.org">ops@example.org</a>',
    );
    const script = await serve({ OPERATOR_CONTACT: 'javascript:alert(1)' });
    const { body } = await page(script, '/privacy');
    expect(body).toContain('<strong id="operator-contact">javascript:alert(1)</strong>');
    expect(body).not.toContain('href="javascript:');
  });

  it('MONITOR=opt-in: only those who ask, with the role and the servers; ?stop to opt out', async () => {
    const base = await serve({
      MONITOR: 'opt-in',
      MONITOR_ROLE_ID: '700000000000000001',
      GUILD_IDS: '300000000000000001,300000000000000002',
      COMMAND_PREFIX: '!',
    });
    const data = await json<{
      monitor: string;
      monitor_role_id: string;
      guild_ids: string[];
      who_is_monitored: string[];
      opting_out: string[];
      retention: string;
    }>(base, '/privacy');
    expect(data).toMatchObject({
      monitor: 'opt-in',
      monitor_role_id: '700000000000000001',
      guild_ids: ['300000000000000001', '300000000000000002'],
    });
    expect(data.who_is_monitored).toEqual([
      "Only those who ask are monitored, in the 2 servers listed below: by running /presently start (or sending the bot !start in a DM), by getting an API key (/presently key), or by setting opted_in to true in their privacy settings, or by holding the role 700000000000000001 in one of them. Everyone else is dropped as Discord's messages come in: never kept, served or recorded.",
    ]);
    expect(data.opting_out[0]).toContain('run /presently stop (or send the bot !stop in a DM');
    expect(data.retention).toContain('or you opted out');
    const { body } = await page(base, '/privacy');
    expect(body).toContain('<code>/presently start</code>');
    expect(body).toContain('<code>!start</code>');
    expect(body).toContain('<code>/presently forget all:True</code>');
    expect(body).toContain('<li><code>300000000000000002</code></li>');
    expect(body).not.toContain('shares a server with the bot is monitored');
  });

  it('MONITOR=all with GUILD_IDS: only those servers; a role set for opt-in does not apply', async () => {
    const base = await serve({ GUILD_IDS: '300000000000000001', MONITOR_ROLE_ID: '700000000000000001' });
    const data = await json<{ monitor_role_id: null; who_is_monitored: string[] }>(base, '/privacy');
    expect(data.monitor_role_id).toBeNull();
    expect(data.who_is_monitored[0]).toBe(
      'Everyone who is a member of the server listed below is monitored, online or offline; the bot ignores the other servers it is in.',
    );
  });

  it('ALLOWED_USER_IDS: how many, never who (a private user must not be told from one not there)', async () => {
    const allowed = ['80351110224678912', '80351110224678913'];
    const base = await serve({ ALLOWED_USER_IDS: allowed.join(',') });
    const data = await json(base, '/privacy');
    expect(data.allowed_user_count).toBe(2);
    expect(data.who_is_monitored).toEqual([
      expect.any(String),
      expect.stringContaining('only 2 users chosen by the operator can be monitored here'),
    ]);
    const answers = [
      JSON.stringify(data),
      (await page(base, '/privacy')).body,
      (await page(base, '/terms')).body,
      JSON.stringify(await json(base, '/terms')),
    ];
    for (const answer of answers) for (const id of allowed) expect(answer).not.toContain(id);
  });

  it('the rate limits of the terms are the configured ones; 0 is no limit', async () => {
    const base = await serve({ RATE_LIMIT_READ: '600', RATE_LIMIT_WRITE: '0' });
    expect((await json(base, '/terms')).rate_limits).toEqual({ read_per_minute: 600, write_per_minute: 0 });
    const { body } = await page(base, '/terms');
    expect(body).toContain('Reads: 600 a minute per client address');
    expect(body).toContain('Writes: no limit set by this instance');
    const none = await serve({ RATE_LIMIT_READ: '0', RATE_LIMIT_WRITE: '0' });
    expect((await page(none, '/terms')).body).toContain('This instance sets no rate limits');
  });
});

describe('the pages are reads', () => {
  it('in the read budget, as / is: past it, 429', async () => {
    const base = await serve({}, 2);
    await inOneReadWindow();
    const first = await fetch(`${base}/privacy`);
    expect(first.headers.get('ratelimit-limit')).toBe('2');
    expect((await fetch(`${base}/terms`, { headers: { accept: CHROME } })).status).toBe(200);
    const refused = await fetch(`${base}/privacy`);
    expect(refused.status).toBe(429);
  });

  it('a server built without the facts does not serve them', async () => {
    const { app, base } = await startHttpServer();
    servers.push(app);
    expect((await fetch(`${base}/privacy`)).status).toBe(404);
  });
});

describe('what the pages are made of', () => {
  it('intents: Discord’s names of any bit, the privileged three marked', () => {
    const intents = intentsOf((1 << 0) | (1 << 2) | (1 << 8) | (1 << 24), '?');
    expect(intents.map(({ name, privileged }) => [name, privileged])).toEqual([
      ['GUILDS', false],
      ['GUILD_MODERATION', false],
      ['GUILD_PRESENCES', true],
      ['GUILD_MESSAGE_POLLS', false],
    ]);
  });

  it('the license is package.json’s', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      license: string;
    };
    expect(LICENSE).toBe(pkg.license);
  });
});

describe('in the running service', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({
      env: { RETENTION_DAYS: '12', OPERATOR_CONTACT: 'ops@example.org' },
      setup: (sim) =>
        sim.createGuild({
          id: '300000000000000030',
          name: 'Legal',
          members: [{ user: { id: '80351110224678912', username: 'alice' } }],
        }),
    });
    // Connected before anything is asked of it, so that closing does not race the gateway's start.
    await eventually(() => expect(harness.app.registry.size).toBe(1));
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('the app passes its configuration and its intents; the landing page links both pages', async () => {
    const data = await json<{ retention_days: number; operator_contact: string; intents: unknown[] }>(
      harness.base,
      '/privacy',
    );
    expect(data.retention_days).toBe(12);
    expect(data.operator_contact).toBe('ops@example.org');
    expect(data.intents).toHaveLength(intentsOf(INTENTS, '?').length);
    const landing = await page(harness.base, '/');
    expect(landing.body).toContain('<a href="/privacy">Privacy</a> · <a href="/terms">Terms</a>');
  });
});
