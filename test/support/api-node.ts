import pino from 'pino';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { REDIS_TEST_URL } from './redis.js';

/** An API node (ROLE api) on the test Redis under `prefix`, on an ephemeral port; `env` adds to it. */
export function startApiNode(prefix: string, env: Record<string, string> = {}): Promise<App> {
  const config = loadConfig({
    ROLE: 'api',
    REDIS_URL: REDIS_TEST_URL,
    REDIS_PREFIX: prefix,
    HOST: '127.0.0.1',
    PORT: '0',
    ...env,
  });
  return startApp(config, { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) });
}
