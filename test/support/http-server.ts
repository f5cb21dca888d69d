import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { LocalBus } from '../../src/bus/local.js';
import { buildHttpServer, type HttpServerOptions } from '../../src/http/server.js';
import { ApiKeyService } from '../../src/keys/service.js';
import { DEFAULT_KV_MAX_BYTES } from '../../src/kv/rules.js';
import { KvService } from '../../src/kv/service.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { readVersionInfo } from '../../src/version.js';

/**
 * The HTTP server alone, on an in-memory store and an empty registry, not listening yet (a test may add
 * routes first): for routes that need no Discord. `options` replace the defaults; closing it closes the store.
 */
export async function buildTestHttpServer(
  options: Partial<HttpServerOptions> = {},
): Promise<FastifyInstance> {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  const app = await buildHttpServer({
    view: new PresenceRegistry({
      cdnUrl: 'https://cdn.example',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    }),
    keys: new ApiKeyService(store.apiKeys),
    kv: new KvService(store.kv, new LocalBus(), DEFAULT_KV_MAX_BYTES),
    history: store.history,
    version: readVersionInfo(),
    logger: pino({ level: 'silent' }),
    // As the harness does: refusals of abusive clients are answered at once unless a test holds them.
    abuseRefusalDelayMs: 0,
    ...options,
  });
  app.addHook('onClose', () => store.close());
  return app;
}

/** The server of `buildTestHttpServer`, listening on a loopback port. */
export async function startHttpServer(
  options: Partial<HttpServerOptions> = {},
): Promise<{ app: FastifyInstance; base: string }> {
  const app = await buildTestHttpServer(options);
  return { app, base: await app.listen({ port: 0, host: '127.0.0.1' }) };
}
