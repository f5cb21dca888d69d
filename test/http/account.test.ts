import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyService } from '../../src/keys/service.js';
import type { Erasure } from '../../src/store/ports.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { insertApiKey } from '../support/api-key.js';
import { startHttpServer } from '../support/http-server.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * The account routes as the HTTP server serves them, the erasure and the export stood in for: which
 * budget each is charged to, and that the erasure's key is settled before anything else.
 */

const USER = '94490510688792576';
const READS = 3;
const WRITES = 2;
const NOTHING: Erasure = {
  statusEntries: 0,
  trackEntries: 0,
  playCounts: 0,
  kvKeys: [],
  kvRevision: 0,
  apiKeys: 1,
  readTokens: 0,
  webhookIds: [],
  privacySettings: false,
  profile: false,
};

const store = openSqliteStore({ kind: 'sqlite-memory' });
const erase = vi.fn(async (_userId: string) => NOTHING);
const pieces = vi.fn(async (userId: string) =>
  (async function* () {
    yield `{"success":true,"data":{"user_id":"${userId}"`;
    yield '}}';
  })(),
);
let app: FastifyInstance;
let base: string;
let key: string;

beforeAll(async () => {
  ({ app, base } = await startHttpServer({
    keys: new ApiKeyService(store.apiKeys),
    rateLimits: { read: READS, write: WRITES },
    account: { service: { erase }, export: { pieces } },
  }));
});
afterEach(() => {
  vi.useRealTimers();
  erase.mockClear();
});
afterAll(async () => {
  await app?.close();
  await store.close();
});

const call = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
  fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });

describe('DELETE /v1/users/@me', () => {
  it('is a write of the key owner’s budget; a refused key is charged to its client and erases nothing', async () => {
    key = await insertApiKey(store, USER);
    const refused = await call('DELETE', '/v1/users/@me', { authorization: 'prs_nope' }, 'ignored body');
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect(erase).not.toHaveBeenCalled();

    const erased = await call('DELETE', '/v1/users/@me', { authorization: `Bearer ${key}` });
    expect(erased.status).toBe(204);
    expect(await erased.text()).toBe('');
    expect(erased.headers.get('ratelimit-limit')).toBe(String(WRITES));
    expect(erase).toHaveBeenCalledWith(USER);
    expect((await call('DELETE', '/v1/users/@me', { authorization: key })).status).toBe(204);
    const limited = await call('DELETE', '/v1/users/@me', { authorization: key });
    expect(limited.status).toBe(429);
    expect(erase).toHaveBeenCalledTimes(2);
  });
});

describe('GET /v1/users/@me/export', () => {
  it('is a read, answered as an attachment', async () => {
    await inOneReadWindow();
    const answer = await call('GET', '/v1/users/@me/export', { authorization: key });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('ratelimit-limit')).toBe(String(READS));
    expect(answer.headers.get('content-disposition')).toBe(`attachment; filename="presently-${USER}.json"`);
    expect(await answer.json()).toEqual({ success: true, data: { user_id: USER } });
    expect((await call('GET', '/v1/users/@me/export')).status).toBe(401);
  });
});
