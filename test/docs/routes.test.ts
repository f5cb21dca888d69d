import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { FastifyInstance, RouteOptions } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { documentedRoutes } from './tables.js';

/**
 * docs/api.md's route tables are the routes the service has: a route the app registers that they do not
 * list, or one they list that the app does not register, fails here. The app is one with every route: demo
 * mode (its "try the bot"), with Discord's HTTP interactions on.
 */

/** Routes the app registers that the tables leave out, each for its reason; nothing else may be left out. */
const REGISTERED_NOT_LISTED = [
  // The CORS preflight of any path, which docs/api.md's opening paragraph describes.
  'OPTIONS *',
  // The landing page's stylesheet and script, under names that carry their content's hash.
  'GET /page/:file',
  // The landing page's "try the bot", in demo mode only: the page's, not the API's (docs/landing-page.md).
  'POST /demo/bot',
  // The files of the /docs page (Swagger UI) and its copies of the document ("API docs" names them).
  'GET /docs/static/index.html',
  'GET /docs/static/swagger-initializer.js',
  'GET /docs/static/*',
  'GET /docs/json',
  'GET /docs/yaml',
];

/** Routes the tables list that are no route of Fastify's. */
const LISTED_NOT_REGISTERED = [
  // The WebSocket: an upgrade the HTTP server hands to the socket gateway, which Fastify never sees.
  'GET /socket',
];

/**
 * `METHOD url` of a route as the tables write it. A parameter that takes one of a few values
 * (`/:id.:format(^(?:png|jpg)$)`) is one route per value, as the tables list the avatar's formats.
 */
function routesOf(route: RouteOptions): string[] {
  const choices = /^(.*):\w+\(\^\(\?:([\w|]+)\)\$\)$/.exec(route.url);
  const urls = choices ? (choices[2] ?? '').split('|').map((value) => `${choices[1]}${value}`) : [route.url];
  return [route.method].flat().flatMap((method) => urls.map((url) => `${method} ${url}`));
}

const CHANNEL = 'fastify.initialization';
let app: App;
const registered = new Set<string>();

beforeAll(async () => {
  // Every Fastify instance made meanwhile (the simulated Discord's too) tells its routes, as they are added.
  const byInstance = new Map<FastifyInstance, string[]>();
  const collect = (message: unknown): void => {
    const { fastify } = message as { fastify: FastifyInstance };
    const routes: string[] = [];
    byInstance.set(fastify, routes);
    fastify.addHook('onRoute', (route) => {
      routes.push(...routesOf(route));
    });
  };
  subscribe(CHANNEL, collect);
  try {
    app = await startApp(
      loadConfig({
        DATABASE_URL: 'sqlite::memory:',
        HOST: '127.0.0.1',
        PORT: '0',
        INTERACTIONS_PUBLIC_KEY: 'ab'.repeat(32),
      }),
      { logger: pino({ level: 'silent' }) },
    );
  } finally {
    unsubscribe(CHANNEL, collect);
  }
  // Fastify adds a HEAD to each GET by itself (unless the route turns it off): the tables list the GET.
  for (const route of byInstance.get(app.http) ?? []) if (!route.startsWith('HEAD ')) registered.add(route);
});

afterAll(async () => {
  await app?.close();
});

describe("docs/api.md's route tables", () => {
  const listed = documentedRoutes();

  it('list each route once', () => {
    expect(listed.filter((route, i) => listed.indexOf(route) !== i)).toEqual([]);
  });

  it('list every route the app registers', () => {
    expect(registered.size).toBeGreaterThan(REGISTERED_NOT_LISTED.length);
    const missing = [...registered].filter(
      (route) => !listed.includes(route) && !REGISTERED_NOT_LISTED.includes(route),
    );
    expect(missing, 'registered by the app, missing from docs/api.md').toEqual([]);
  });

  it('list no route the app does not register', () => {
    const unknown = listed.filter(
      (route) => !registered.has(route) && !LISTED_NOT_REGISTERED.includes(route),
    );
    expect(unknown, 'in docs/api.md, not registered by the app').toEqual([]);
  });

  it('leave out or add only the routes excepted, each still an exception (else it leaves its list)', () => {
    expect(REGISTERED_NOT_LISTED.filter((route) => !registered.has(route) || listed.includes(route))).toEqual(
      [],
    );
    expect(LISTED_NOT_REGISTERED.filter((route) => registered.has(route) || !listed.includes(route))).toEqual(
      [],
    );
  });
});
