import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SqliteWebhookQueue } from '../../src/store/sqlite/webhook-queue.js';
import { WebhookDirectory } from '../../src/webhooks/directory.js';
import { WebhookService } from '../../src/webhooks/service.js';
import type { Resolve } from '../../src/webhooks/target.js';

/** Adding a webhook: the body's shape, the URL's rules, every address its host resolves to, the limit. */

const USER = '80351110224678912';
/** Names and what the injected resolver answers for them; any other name does not resolve. */
const DNS: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34', '2606:2800:220:1::1'],
  'loopback.example.com': ['127.0.0.1'],
  'mixed.example.com': ['93.184.216.34', '10.0.0.7'],
  'metadata.example.com': ['169.254.169.254'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
};
const resolve: Resolve = async (hostname) => {
  const addresses = DNS[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function serviceWith(options: { allowPrivate?: boolean; maxPerUser?: number; now?: () => number } = {}) {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  closers.push(() => store.close());
  const directory = new WebhookDirectory(store.webhooks);
  const service = new WebhookService({
    store: store.webhooks,
    queue: new SqliteWebhookQueue(store.db),
    directory,
    bus: new LocalBus(),
    policy: { allowPrivate: options.allowPrivate ?? false, resolve },
    maxPerUser: options.maxPerUser ?? 5,
    notify: async () => {},
    commandPrefix: '?',
    logger: pino({ level: 'silent' }),
    ...(options.now ? { now: options.now } : {}),
  });
  return { service, directory, store };
}

const add = (service: WebhookService, url: string, events: unknown = ['presence']) =>
  service.create(USER, { url, events });

describe('adding a webhook', () => {
  it('answers the id, the normalized URL, the events in order and a secret, and the directory has it', async () => {
    const { service, directory } = serviceWith();
    const outcome = await add(service, 'https://hooks.example.com/in#fragment', ['kv', 'presence']);
    expect(outcome).toEqual({
      ok: true,
      webhook: {
        id: expect.stringMatching(/^wh_[A-Za-z0-9_-]{16}$/),
        url: 'https://hooks.example.com/in',
        events: ['presence', 'kv'],
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
        created_at: expect.any(Number),
      },
    });
    expect(directory.subscribed(USER, 'kv')).toHaveLength(1);
    expect(directory.subscribed(USER, 'now_playing')).toEqual([]);
    const [listed] = await service.list(USER);
    expect(listed).not.toHaveProperty('secret');
    expect(JSON.stringify(listed)).not.toContain('whsec_');
  });

  it('lists webhooks in the order they were added, also when added within one millisecond', async () => {
    const { service } = serviceWith({ now: () => 1_765_000_000_000 });
    const paths = ['/a', '/b', '/c', '/d', '/e'];
    for (const path of paths) await add(service, `https://hooks.example.com${path}`);
    const listed = await service.list(USER);
    expect(listed.map((webhook) => new URL(webhook.url).pathname)).toEqual(paths);
    expect(listed.map((webhook) => webhook.created_at)).toEqual(
      [0, 1, 2, 3, 4].map((n) => 1_765_000_000_000 + n),
    );
  });

  it('gives every webhook a secret of its own', async () => {
    const { service } = serviceWith();
    const secrets = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const outcome = await add(service, 'https://hooks.example.com/');
      if (outcome.ok) secrets.add(outcome.webhook.secret);
    }
    expect(secrets.size).toBe(5);
  });

  it.each([
    ['https://127.0.0.1/hook', '127.0.0.1 (loopback address)'],
    ['https://10.1.2.3/hook', '10.1.2.3 (private address)'],
    ['https://172.20.0.1/', '172.20.0.1 (private address)'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254 (link-local address)'],
    ['https://[::1]/hook', '::1 (loopback address)'],
    ['https://[fe80::1]/hook', 'fe80::1 (link-local address)'],
    ['https://[::ffff:127.0.0.1]/hook', '::ffff:7f00:1 (loopback address)'],
    ['https://[64:ff9b::a00:1]/', '64:ff9b::a00:1 (private address)'],
    ['https://0.0.0.0/', '0.0.0.0 (unspecified address)'],
    ['https://2130706433/', '127.0.0.1 (loopback address)'],
    ['https://0x7f.1/', '127.0.0.1 (loopback address)'],
    ['https://100.64.1.1/', '100.64.1.1 (carrier-grade NAT address)'],
    ['https://192.0.2.10/', '192.0.2.10 (reserved or documentation address)'],
  ])('refuses %s: %s', async (url, why) => {
    const { service } = serviceWith();
    const outcome = await add(service, url);
    expect(outcome).toEqual({
      ok: false,
      rejection: {
        code: 'invalid_webhook_url',
        message: `the host is ${why}, which webhooks may not reach`,
      },
    });
  });

  it.each([
    ['loopback.example.com', 'loopback.example.com resolves to 127.0.0.1 (loopback address)'],
    ['mixed.example.com', 'mixed.example.com resolves to 10.0.0.7 (private address)'],
    ['metadata.example.com', 'metadata.example.com resolves to 169.254.169.254 (link-local address)'],
    ['mapped.example.com', 'mapped.example.com resolves to ::ffff:127.0.0.1 (loopback address)'],
    ['nowhere.example.com', 'nowhere.example.com does not resolve'],
  ])('refuses a name whose addresses are not all public: %s', async (host, why) => {
    const { service } = serviceWith();
    const outcome = await add(service, `https://${host}/hook`);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.rejection.message).toContain(why);
  });

  it('refuses http://, credentials and URLs that are not absolute or too long', async () => {
    const { service } = serviceWith();
    for (const [url, why] of [
      ['http://hooks.example.com/', 'must start with https://'],
      ['ftp://hooks.example.com/', 'must start with https://'],
      ['https://user:pass@hooks.example.com/', 'user name or password'],
      ['/relative', 'not an absolute URL'],
      [`https://hooks.example.com/${'a'.repeat(2048)}`, 'longer than 2048'],
    ] as const) {
      const outcome = await add(service, url);
      expect(outcome, url).toMatchObject({ ok: false, rejection: { code: 'invalid_webhook_url' } });
      if (!outcome.ok) expect(outcome.rejection.message).toContain(why);
    }
  });

  it('with private targets allowed, takes http:// and loopback but still not link-local', async () => {
    const { service } = serviceWith({ allowPrivate: true });
    expect((await add(service, 'http://127.0.0.1:8080/hook')).ok).toBe(true);
    expect((await add(service, 'https://loopback.example.com/')).ok).toBe(true);
    expect(await add(service, 'http://169.254.169.254/')).toMatchObject({
      ok: false,
      rejection: { code: 'invalid_webhook_url' },
    });
  });

  it.each([
    [null],
    [['https://hooks.example.com/']],
    [{ url: 'https://hooks.example.com/' }],
    [{ url: 'https://hooks.example.com/', events: [] }],
    [{ url: 'https://hooks.example.com/', events: ['presence', 'typing'] }],
    [{ url: 'https://hooks.example.com/', events: 'presence' }],
    [{ url: 42, events: ['presence'] }],
    [{ url: 'https://hooks.example.com/', events: ['kv'], secret: 'mine' }],
  ])('refuses the body %j as invalid_webhook', async (body) => {
    const { service } = serviceWith();
    const outcome = await service.create(USER, body);
    expect(outcome).toMatchObject({ ok: false, rejection: { code: 'invalid_webhook' } });
  });

  it('holds each user to the limit, counting disabled webhooks until removed', async () => {
    const { service, store } = serviceWith({ maxPerUser: 2 });
    const first = await add(service, 'https://hooks.example.com/1');
    await add(service, 'https://hooks.example.com/2');
    expect(await add(service, 'https://hooks.example.com/3')).toEqual({
      ok: false,
      rejection: { code: 'webhook_limit_exceeded', message: 'a user may have 2 webhooks: remove one first' },
    });
    expect(
      (await service.create('80351110224678913', { url: 'https://hooks.example.com/', events: ['kv'] })).ok,
    ).toBe(true);
    if (!first.ok) throw new Error('expected the first webhook');
    await store.webhooks.disableWebhook(first.webhook.id, 1, 'failing');
    expect((await add(service, 'https://hooks.example.com/3')).ok).toBe(false);
    expect(await service.remove(USER, first.webhook.id)).toBe('removed');
    expect((await add(service, 'https://hooks.example.com/3')).ok).toBe(true);
  });

  it("removes only the user's own webhooks", async () => {
    const { service, directory } = serviceWith();
    const outcome = await add(service, 'https://hooks.example.com/');
    if (!outcome.ok) throw new Error('expected a webhook');
    expect(await service.remove('80351110224678913', outcome.webhook.id)).toBe('not_yours');
    expect(await service.remove(USER, 'wh_AAAAAAAAAAAAAAAA')).toBe('not_found');
    expect(await service.remove(USER, 'not an id')).toBe('not_found');
    expect(await service.remove(USER, outcome.webhook.id)).toBe('removed');
    expect(directory.has(USER)).toBe(false);
    expect(await service.list(USER)).toEqual([]);
  });
});
