import { request as httpRequest } from 'node:http';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import { buildHttpServer } from '../../src/http/server.js';
import { ApiKeyService } from '../../src/keys/service.js';
import { KvService } from '../../src/kv/service.js';
import { PresenceRegistry, type PresenceView } from '../../src/presence/registry.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/youtube-music.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { readVersionInfo } from '../../src/version.js';

const ALICE = { id: '80351110224678912', username: 'alice', global_name: 'Alice', avatar: null };
const GUILD = '100000000000000001';

let app: FastifyInstance;
let base: string;
const registry = new PresenceRegistry({
  cdnUrl: 'https://cdn.discordapp.com',
  youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
});
/** Throws for one id, to show what an unexpected failure looks like from outside. */
const BROKEN_ID = '666';
const view: PresenceView = {
  get size() {
    return registry.size;
  },
  get(userId) {
    if (userId === BROKEN_ID) throw new Error('secret internal detail');
    return registry.get(userId);
  },
};

beforeAll(async () => {
  registry.memberSeen(GUILD, ALICE, {
    status: 'online',
    activities: [],
    client_status: { desktop: 'online' },
  });
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  app = await buildHttpServer({
    view,
    keys: new ApiKeyService(store.apiKeys),
    kv: new KvService(store.kv, new LocalBus()),
    history: store.history,
    version: readVersionInfo(),
    logger: pino({ level: 'silent' }),
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await app.close();
});

async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
  const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
}

describe('GET /v1/users/:id', () => {
  it('answers the presence in the envelope, with CORS', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const body = (await response.json()) as { success: boolean; data: Record<string, unknown> };
    expect(body.success).toBe(true);
    expect(body.data).toMatchObject({
      discord_user: { id: ALICE.id, username: 'alice' },
      discord_status: 'online',
      active_on_discord_desktop: true,
      kv: {},
      member_since: 1439227597529,
    });
  });

  it('answers a HEAD like the GET without a body', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });

  it('404 user_not_monitored for a valid id nobody shares a server with', async () => {
    await expectError(await fetch(`${base}/v1/users/123456789012345678`), 404, 'user_not_monitored');
  });

  it.each(['abc', '12a', '123456789012345678901', '18446744073709551616', '-5', '%20', '@you'])(
    '400 invalid_user_id for %j',
    async (id) => {
      await expectError(await fetch(`${base}/v1/users/${id}`), 400, 'invalid_user_id');
    },
  );

  it('accepts the largest 64-bit id', async () => {
    await expectError(await fetch(`${base}/v1/users/18446744073709551615`), 404, 'user_not_monitored');
  });

  it('500 internal_error as JSON, without leaking the cause', async () => {
    const response = await fetch(`${base}/v1/users/${BROKEN_ID}`);
    const text = await response.clone().text();
    expect(text).not.toContain('secret internal detail');
    await expectError(response, 500, 'internal_error');
  });
});

describe('unknown routes and methods', () => {
  it.each([
    ['GET', '/'],
    ['GET', '/nope'],
    ['GET', '/v1/users'],
    ['GET', '/v1/users/1/unknown'],
    ['POST', `/v1/users/${ALICE.id}`],
    ['DELETE', '/v1/version'],
  ])('%s %s → 404 not_found', async (method, path) => {
    await expectError(await fetch(`${base}${path}`, { method }), 404, 'not_found');
  });

  it('answers a malformed URL in JSON, not as an HTML page', async () => {
    const { status, body, headers } = await rawRequest('GET', '/v1/users/%E0%A4%A');
    expect(status).toBeLessThan(500);
    expect(headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(body).success).toBe(false);
  });

  it('answers a request body on a GET without failing', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/xml' },
      body: '<x/>',
    });
    expect(response.status).toBeLessThan(500);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });
});

describe('CORS', () => {
  it('preflight echoes the requested headers and allows the API methods', async () => {
    const response = await fetch(`${base}/v1/users/${ALICE.id}/kv/theme`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://example.com',
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(response.status).toBeLessThan(300);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-headers')).toBe('authorization,content-type');
    expect(response.headers.get('access-control-allow-methods')).toContain('PUT');
    expect(response.headers.get('access-control-allow-methods')).toContain('PATCH');
    expect(response.headers.get('access-control-allow-methods')).toContain('DELETE');
  });
});

describe('GET /v1/version', () => {
  it("serves package.json's version and the changelog, newest first", async () => {
    const response = await fetch(`${base}/v1/version`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      data: { version: string; changelog: { version: string; date: string; changes: string[] }[] };
    };
    const info = readVersionInfo();
    expect(body.data.version).toBe(info.version);
    expect(body.data.changelog[0]?.version).toBe(info.version);
    expect(body.data.changelog[0]?.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(body.data.changelog[0]?.changes.length).toBeGreaterThan(0);
  });
});

/** fetch() normalizes URLs; this sends the path byte for byte. */
function rawRequest(
  method: string,
  path: string,
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}
