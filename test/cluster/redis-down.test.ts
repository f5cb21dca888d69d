import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { insertApiKey } from '../support/api-key.js';
import { type PrivateRedis, redisAvailable, startPrivateRedis } from '../support/redis.js';

/**
 * Redis is down: an API node still answers every request (an error in the envelope for what needs the
 * store, never a request left hanging) and shuts down promptly.
 */

const hasRedis = await redisAvailable('requests while Redis is down');
const USER = '80351110224678912';
/** Longer than a fail-fast command may take; shorter than a request that hangs for good. */
const ANSWER_WITHIN_MS = 8_000;

describe.skipIf(!hasRedis)('an API node while Redis is down', () => {
  let redis: PrivateRedis;
  let app: App;
  let key: string;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    app = await startApp(
      loadConfig({ ROLE: 'api', REDIS_URL: redis.url, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent' }),
      { logger: pino({ level: 'silent' }) },
    );
    key = await insertApiKey(app.store, USER);
    expect((await fetch(`${app.url}/v1/users/@me`, { headers: { authorization: key } })).status).toBe(404);
    redis.kill();
  }, 30_000);

  afterAll(() => redis.remove());

  it.each([
    ['GET', '/v1/users/@me'],
    ['PUT', `/v1/users/${USER}/kv/city`],
    ['GET', `/v1/users/${USER}/history`],
    ['GET', `/v1/users/${USER}/stats`],
    ['GET', `/v1/users/${USER}/top-tracks`],
  ])('%s %s answers with a JSON error instead of hanging', async (method, path) => {
    const response = await fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: key },
      ...(method === 'PUT' ? { body: 'Lyon' } : {}),
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    });
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ success: false, error: { code: 'internal_error' } });
  });

  it('what needs no store is served as before', async () => {
    expect((await fetch(`${app.url}/v1/users/${USER}`)).status).toBe(404);
    expect((await fetch(`${app.url}/v1/version`)).status).toBe(200);
  });

  it('shuts down without waiting for Redis', async () => {
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('close() waited for Redis')), ANSWER_WITHIN_MS);
    });
    await Promise.race([app.close(), gaveUp]);
    clearTimeout(timer);
  });
});
