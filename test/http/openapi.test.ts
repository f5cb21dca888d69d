import { Ajv2020 } from 'ajv/dist/2020.js';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS, type ErrorCode } from '../../src/http/errors.js';
import { registerOpenApi } from '../../src/http/openapi.js';
import { DOCS_CONTENT_SECURITY_POLICY, DOCS_PATH, OPENAPI_PATH } from '../../src/http/routes/docs.js';
import { successResponse } from '../../src/http/schemas/envelope.js';
import { discordUserSchema } from '../../src/http/schemas/presence.js';
import { CONTENT_SECURITY_POLICY } from '../../src/net/security-headers.js';
import { customStatusActivity, gameActivity, spotifyActivity } from '../../src/simulator/activities.js';
import { readVersionInfo } from '../../src/version.js';
import { documentedErrors, documentedRoutes } from '../docs/tables.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import {
  type MediaType,
  OPENAPI_31_STRUCTURE,
  type OpenApiDocument,
  operationsOf,
  referencesIn,
  resolvePointer,
  schemaCompiler,
} from '../support/openapi.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * The OpenAPI document (`/v1/openapi.json`) against the contract, docs/api.md, and against the service:
 * every route of docs/api.md's tables and no other is in it, every error code of its table too, it is valid
 * OpenAPI 3.1, and what the running service answers fits the schemas it gives.
 */

/** The page that shows the document: not an operation of the API. */
const NOT_IN_DOCUMENT = [`GET ${DOCS_PATH}`];
/** Operations that need the user's API key. */
const KEYED = [
  'GET /v1/users/@me',
  'PUT /v1/users/{id}/kv/{key}',
  'PATCH /v1/users/{id}/kv',
  'DELETE /v1/users/{id}/kv/{key}',
  'POST /v1/users/@me/webhooks',
  'GET /v1/users/@me/webhooks',
  'DELETE /v1/users/@me/webhooks/{id}',
  'GET /v1/users/@me/privacy',
  'PATCH /v1/users/@me/privacy',
  'DELETE /v1/users/@me',
  'GET /v1/users/@me/export',
  'POST /v1/users/@me/read-tokens',
  'GET /v1/users/@me/read-tokens',
  'DELETE /v1/users/@me/read-tokens/{id}',
];
/** Operations whose security is optional: open, unless the operator set a token. */
const OPTIONALLY_KEYED = ['GET /metrics'];

/** docs/api.md's `METHOD /path` as the document writes it: `:param` as `{param}`. */
const openApiRoute = (route: string): string => route.replace(/:([A-Za-z_]+)/g, '{$1}');

/** status → the error codes the operation's response for it lists. */
function errorCodesOf(operation: OpenApiDocument['paths'][string][string]): Map<number, string[]> {
  const codes = new Map<number, string[]>();
  for (const [status, response] of Object.entries(operation.responses)) {
    for (const media of Object.values(response.content ?? {})) {
      const listed = resolvePointer(media, '#/schema/properties/error/properties/code/enum');
      if (Array.isArray(listed)) codes.set(Number(status), [...(codes.get(Number(status)) ?? []), ...listed]);
    }
  }
  return codes;
}

/** Set for the harness, so `/metrics` answers 401 without it and `/discord` redirects. */
const METRICS_TOKEN = 'metrics-token-for-the-docs-test';
const INVITE = 'https://discord.gg/presently';
const NOVA = '94490510688792576';
const KAI = '218486934151479296';
const NOT_MONITORED = '123456789012345678';
const GUILD = '500000000000000005';
const TRACK = {
  song: 'Midnight City',
  artists: ['M83'],
  album: "Hurry Up, We're Dreaming",
  imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
  trackId: '1eyzqe2QqGZUmfcPZtrIyt',
  userId: NOVA,
};

let harness: Harness;
let base: string;
let document: OpenApiDocument;

beforeAll(async () => {
  const now = Date.now();
  harness = await startHarness({
    env: { METRICS_TOKEN, DISCORD_INVITE_URL: INVITE, INTERACTIONS_PUBLIC_KEY: 'ab'.repeat(32) },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Docs',
        members: [
          {
            user: { id: NOVA, username: 'nova', global_name: 'Nova', avatar: null },
            presence: {
              status: 'online',
              activities: [
                customStatusActivity({ text: 'on repeat', emoji: { name: '🎧' } }),
                // A play that has ended, so the same track starting again is a second play.
                spotifyActivity({ ...TRACK, start: now - 60_000, end: now - 20_000 }),
              ],
            },
          },
          { user: { id: KAI, username: 'kai' }, presence: { status: 'idle' } },
        ],
      }),
  });
  base = harness.base;
  await eventually(() => expect(harness.app.view.get(NOVA)).toBeDefined());
  const response = await fetch(`${base}${OPENAPI_PATH}`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  document = (await response.json()) as OpenApiDocument;
});

afterAll(async () => {
  await harness.close();
});

describe('the document covers the contract', () => {
  it("has every route of docs/api.md's tables, and no other", () => {
    const routes = documentedRoutes().map(openApiRoute);
    // Three tables, fifty routes: a reading that found none would let everything below pass.
    expect(routes.length).toBeGreaterThanOrEqual(50);
    const documented = new Set(operationsOf(document).map(([route]) => route));
    const expected = routes.filter((route) => !NOT_IN_DOCUMENT.includes(route));
    expect(
      expected.filter((route) => !documented.has(route)),
      'in docs/api.md, not in the document',
    ).toEqual([]);
    expect(
      [...documented].filter((route) => !routes.includes(route)),
      'in the document, not in docs/api.md',
    ).toEqual([]);
    // Each route left out is in the tables and still not in the document (else it leaves the list).
    expect(NOT_IN_DOCUMENT.filter((route) => documented.has(route) || !routes.includes(route))).toEqual([]);
  });

  it('has every error code of the contract and of the service, each under its status', () => {
    const listed = new Map<string, Set<number>>();
    for (const [, operation] of operationsOf(document)) {
      for (const [status, codes] of errorCodesOf(operation)) {
        for (const code of codes) listed.set(code, (listed.get(code) ?? new Set()).add(status));
      }
    }
    const expected = new Map([...documentedErrors(), ...Object.entries(ERROR_STATUS)]);
    expect(expected.size).toBeGreaterThanOrEqual(14);
    for (const [code, status] of expected) {
      expect([...(listed.get(code) ?? [])], code).toContain(status);
    }
    expect(
      resolvePointer(document, '#/components/schemas/error/properties/error/properties/code/enum'),
    ).toEqual(Object.keys(ERROR_STATUS));
  });
});

describe('the document is valid OpenAPI 3.1', () => {
  it('has the structure the specification gives', () => {
    const validate = new Ajv2020({ strict: false, allErrors: true }).compile(OPENAPI_31_STRUCTURE);
    expect(validate(document), JSON.stringify(validate.errors?.slice(0, 5), null, 1)).toBe(true);
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({ title: 'Presently', version: readVersionInfo().version });
    expect(document.info.description).toContain('user_not_monitored');
    expect(document.servers?.length).toBeGreaterThan(0);
  });

  it('every reference resolves', () => {
    const references = referencesIn(document);
    expect(references.length).toBeGreaterThan(0);
    for (const { at, ref } of references) {
      expect(resolvePointer(document, ref), `${ref} at ${at}`).toBeDefined();
    }
  });

  it('every Schema Object is JSON Schema 2020-12 that compiles in strict mode, and every example fits it', () => {
    const compile = schemaCompiler(document);
    for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) {
      expect(() => compile(schema), name).not.toThrow();
    }
    const media = (content: Record<string, MediaType> | undefined): MediaType[] =>
      Object.values(content ?? {});
    let examples = 0;
    for (const [route, operation] of operationsOf(document)) {
      const schemas: [string, MediaType][] = [
        ...(operation.parameters ?? []).map((parameter): [string, MediaType] => [
          `${route} ${parameter.name}`,
          parameter,
        ]),
        ...media(operation.requestBody?.content).map((body): [string, MediaType] => [`${route} body`, body]),
        ...Object.entries(operation.responses).flatMap(([status, response]) =>
          media(response.content).map((body): [string, MediaType] => [`${route} ${status}`, body]),
        ),
      ];
      for (const [where, { schema, example }] of schemas) {
        if (!schema) continue;
        const validate = compile(schema);
        if (example === undefined) continue;
        examples++;
        expect(validate(example), `${where}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    }
    // The presence, twice; ids, KV keys and a PATCH body.
    expect(examples).toBeGreaterThanOrEqual(5);
  });

  it('path parameters match the path templates', () => {
    for (const [route, operation] of operationsOf(document)) {
      const inTemplate = [...route.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name);
      const inPath = (operation.parameters ?? []).filter((p) => p.in === 'path');
      expect(inPath.map((p) => p.name).sort(), route).toEqual(inTemplate.sort());
      for (const parameter of inPath) expect(parameter.required, route).toBe(true);
    }
  });

  it('every operation says what it does, in a declared family, with its security', () => {
    const tags = new Set(document.tags?.map((tag) => tag.name));
    const schemes = Object.keys(document.components?.securitySchemes ?? {});
    for (const [route, operation] of operationsOf(document)) {
      expect(operation.summary, route).toBeTruthy();
      expect(operation.description, route).toBeTruthy();
      expect(operation.tags?.length, route).toBeGreaterThan(0);
      for (const tag of operation.tags ?? []) expect(tags.has(tag), `${route}: ${tag}`).toBe(true);
      for (const requirement of operation.security ?? []) {
        for (const scheme of Object.keys(requirement)) expect(schemes, route).toContain(scheme);
      }
      expect(operation.security !== undefined, route).toBe([...KEYED, ...OPTIONALLY_KEYED].includes(route));
      // Optional: one of the requirements is none at all.
      const open = operation.security?.some((requirement) => Object.keys(requirement).length === 0);
      if (operation.security) expect(open, route).toBe(OPTIONALLY_KEYED.includes(route));
    }
  });
});

describe('real answers fit the document', () => {
  let key: string;
  const compile = (schema: object) => schemaCompiler(document)(schema);

  beforeAll(async () => {
    key = await insertApiKey(harness.app.store, NOVA);
    // Free keys in `kv`, a second play of the track (for top tracks), and a status change (for history).
    const patch = await fetch(`${base}/v1/users/@me/kv`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ location: 'Lisbon', free_key_1: 'anything' }),
    });
    expect(patch.status).toBe(204);
    const now = Date.now();
    harness.simulator.setPresence(NOVA, {
      status: 'dnd',
      activities: [
        gameActivity({ name: 'Celeste', applicationId: '512035578624524288', start: now - 1_000 }),
        spotifyActivity({ ...TRACK, start: now - 1_000, end: now + 200_000 }),
      ],
    });
    await eventually(async () => {
      const body = (await (await fetch(`${base}/v1/users/${NOVA}/top-tracks`)).json()) as {
        data: { top_tracks: unknown[] };
      };
      expect(body.data.top_tracks).toHaveLength(1);
    });
  });

  /** The document's schema for this answer: its operation, its status, its content type. */
  function schemaFor(route: string, status: number, contentType: string): object {
    const [method = '', path = ''] = route.split(' ');
    const operation = document.paths[path]?.[method.toLowerCase()];
    expect(operation, route).toBeDefined();
    const response = operation?.responses[String(status)];
    expect(response, `${route} ${status}`).toBeDefined();
    const media = response?.content?.[contentType.split(';')[0] ?? ''];
    expect(media?.schema, `${route} ${status} ${contentType}`).toBeDefined();
    return media?.schema as object;
  }

  async function expectFits(route: string, url: string, status: number, init: RequestInit = {}) {
    const response = await fetch(`${base}${url}`, init);
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(status);
    const validate = compile(schemaFor(route, status, response.headers.get('content-type') ?? ''));
    const body: unknown = JSON.parse(text);
    expect(validate(body), `${url}: ${JSON.stringify(validate.errors)}`).toBe(true);
    return body as { data: Record<string, unknown> };
  }

  it('a presence read on the fast path, with Discord fields the schema leaves open', async () => {
    const { data } = await expectFits('GET /v1/users/{id}', `/v1/users/${NOVA}`, 200);
    expect(data.discord_user).toMatchObject({ id: NOVA, username: 'nova', global_name: 'Nova' });
    expect(data.kv).toEqual({ location: 'Lisbon', free_key_1: 'anything' });
  });

  it('a bulk read, with an id not monitored left out', async () => {
    const { data } = await expectFits('GET /v1/users', `/v1/users?ids=${NOVA},${NOT_MONITORED}`, 200);
    expect(Object.keys(data)).toEqual([NOVA]);
  });

  it('@me, through Fastify', async () => {
    const { data } = await expectFits('GET /v1/users/@me', '/v1/users/@me', 200, {
      headers: { authorization: key },
    });
    // Fields no schema names arrive as Discord sent them: nothing was serialized away.
    const activities = data.activities as Record<string, unknown>[];
    expect(activities.find((activity) => activity.name === 'Spotify')).toMatchObject({
      sync_id: TRACK.trackId,
      session_id: expect.any(String),
      party: { id: `spotify:${NOVA}` },
    });
  });

  it('history, stats, top tracks and the latest plays, with entries', async () => {
    await eventually(async () => {
      const { data } = await expectFits('GET /v1/users/{id}/history', `/v1/users/${NOVA}/history`, 200);
      expect((data.status_history as unknown[]).length).toBeGreaterThan(0);
      expect((data.track_history as unknown[]).length).toBeGreaterThan(0);
    });
    const { data: stats } = await expectFits('GET /v1/users/{id}/stats', `/v1/users/${NOVA}/stats`, 200);
    expect(stats).toMatchObject({ current_status: 'dnd', is_monitored: true });
    await expectFits('GET /v1/users/{id}/stats', `/v1/users/${NOT_MONITORED}/stats`, 200);
    const { data: top } = await expectFits(
      'GET /v1/users/{id}/top-tracks',
      `/v1/users/${NOVA}/top-tracks?limit=5`,
      200,
    );
    expect(top.top_tracks).toEqual([expect.objectContaining({ song: TRACK.song, play_count: 2 })]);
    const { data: recent } = await expectFits(
      'GET /v1/users/{id}/recent',
      `/v1/users/${NOVA}/recent?limit=1`,
      200,
    );
    expect(recent.recent_tracks).toEqual([expect.objectContaining({ song: TRACK.song })]);
  });

  it('the webhook routes: added, listed, refused', async () => {
    const headers = { authorization: key, 'content-type': 'application/json' };
    // A literal public address: nothing is resolved, and with only `kv` (and removed at the end) nothing is sent.
    const body = JSON.stringify({ url: 'https://93.184.216.34/hook', events: ['kv'] });
    const { data } = await expectFits('POST /v1/users/@me/webhooks', '/v1/users/@me/webhooks', 201, {
      method: 'POST',
      headers,
      body,
    });
    await expectFits('GET /v1/users/@me/webhooks', '/v1/users/@me/webhooks', 200, { headers });
    await expectFits('POST /v1/users/@me/webhooks', '/v1/users/@me/webhooks', 400, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: 'https://127.0.0.1/', events: ['kv'] }),
    });
    const removed = await fetch(`${base}/v1/users/@me/webhooks/${String(data.id)}`, {
      method: 'DELETE',
      headers: { authorization: key },
    });
    expect(removed.status).toBe(204);
  });

  it('the privacy routes: read, changed, refused, and a presence that hides something', async () => {
    const headers = { authorization: key, 'content-type': 'application/json' };
    const path = '/v1/users/@me/privacy';
    await expectFits(`GET ${path}`, path, 200, { headers });
    await expectFits(`PATCH ${path}`, path, 200, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ hide_custom_status: true, hide_profile: true }),
    });
    await expectFits('GET /v1/users/{id}', `/v1/users/${NOVA}`, 200);
    await expectFits(`PATCH ${path}`, path, 400, { method: 'PATCH', headers, body: '{"hide_all":true}' });
    const reset = await fetch(`${base}${path}`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ hide_custom_status: false, hide_profile: false }),
    });
    expect(reset.status).toBe(200);
  });

  it('the read token routes: made, listed, refused, removed, and a private read with one', async () => {
    const headers = { authorization: key, 'content-type': 'application/json' };
    const path = '/v1/users/@me/read-tokens';
    const { data } = await expectFits(`POST ${path}`, path, 201, {
      method: 'POST',
      headers,
      body: JSON.stringify({ label: 'docs test' }),
    });
    const { data: list } = await expectFits(`GET ${path}`, path, 200, { headers });
    expect(list.read_tokens).toEqual([{ id: data.id, label: 'docs test', created_at: data.created_at }]);
    await expectFits(`POST ${path}`, path, 400, { method: 'POST', headers, body: '{"name":"x"}' });
    await expectFits(`POST ${path}`, path, 401, { method: 'POST', body: '{}' });
    await expectFits('DELETE /v1/users/@me/read-tokens/{id}', `${path}/rt_0000000000000000`, 404, {
      method: 'DELETE',
      headers: { authorization: key },
    });
    // Kai private, read with Kai's token: the answers of the owner fit the same schemas.
    const kai = await insertApiKey(harness.app.store, KAI);
    const kaiHeaders = { authorization: kai, 'content-type': 'application/json' };
    const made = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: kai } });
    const { token } = ((await made.json()) as { data: { token: string } }).data;
    const privately = await fetch(`${base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: kaiHeaders,
      body: JSON.stringify({ visibility: 'private' }),
    });
    expect(privately.status).toBe(200);
    await expectFits('GET /v1/users/{id}', `/v1/users/${KAI}`, 404);
    await expectFits('GET /v1/users/{id}', `/v1/users/${KAI}?token=${token}`, 200);
    await expectFits('GET /v1/users/{id}/stats', `/v1/users/${KAI}/stats?token=${token}`, 200);
    const back = await fetch(`${base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: kaiHeaders,
      body: JSON.stringify({ visibility: 'public' }),
    });
    expect(back.status).toBe(200);
    const removed = await fetch(`${base}${path}/${String(data.id)}`, {
      method: 'DELETE',
      headers: { authorization: key },
    });
    expect(removed.status).toBe(204);
  });

  it('the export, and the erasure of everything', async () => {
    const { data } = await expectFits('GET /v1/users/@me/export', '/v1/users/@me/export', 200, {
      headers: { authorization: key },
    });
    expect(data).toMatchObject({ user_id: NOVA, kv: { location: 'Lisbon', free_key_1: 'anything' } });
    expect((data.track_history as unknown[]).length).toBeGreaterThan(0);
    await expectFits('GET /v1/users/@me/export', '/v1/users/@me/export', 401);
    // Kai's, so that Nova's data stays for the other answers.
    const kai = await insertApiKey(harness.app.store, KAI);
    const erased = await fetch(`${base}/v1/users/@me`, { method: 'DELETE', headers: { authorization: kai } });
    expect(erased.status).toBe(204);
    expect(document.paths['/v1/users/@me']?.delete?.responses['204']).toBeDefined();
    await expectFits('DELETE /v1/users/@me', '/v1/users/@me', 401, {
      method: 'DELETE',
      headers: { authorization: kai },
    });
  });

  it('the version and the document itself', async () => {
    await expectFits('GET /v1/version', '/v1/version', 200);
    await expectFits(`GET ${OPENAPI_PATH}`, OPENAPI_PATH, 200);
  });

  it('the card, as the content type the document gives', async () => {
    const response = await fetch(`${base}/v1/users/${NOVA}/card.svg`);
    expect(response.status).toBe(200);
    const contentType = response.headers.get('content-type')?.split(';')[0] ?? '';
    expect(
      Object.keys(document.paths['/v1/users/{id}/card.svg']?.get?.responses['200']?.content ?? {}),
    ).toEqual([contentType]);
  });

  it("GET /: Lanyard's info as JSON, the page as HTML, both content types documented", async () => {
    const { data } = await expectFits('GET /', '/', 200);
    expect(data).toMatchObject({ monitored_user_count: 2, discord_invite: INVITE });
    const page = await fetch(`${base}/?id=${NOVA}`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(Object.keys(document.paths['/']?.get?.responses['200']?.content ?? {}).sort()).toEqual([
      'application/json',
      'text/html',
    ]);
    // The page's assets are not the API's.
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/page/'))).toEqual([]);
  });

  it.each([
    ['GET /privacy', '/privacy'],
    ['GET /terms', '/terms'],
  ])('%s: its facts as JSON, the page as HTML, both content types documented', async (route, url) => {
    await expectFits(route, url, 200);
    const page = await fetch(`${base}${url}`, { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(Object.keys(document.paths[url]?.get?.responses['200']?.content ?? {}).sort()).toEqual([
      'application/json',
      'text/html',
    ]);
  });

  it('an event stream, as the content type the document gives', async () => {
    const abort = new AbortController();
    const response = await fetch(`${base}/v1/events?ids=${NOVA}`, { signal: abort.signal });
    expect(response.status).toBe(200);
    abort.abort();
    const contentType = response.headers.get('content-type') ?? '';
    for (const path of ['/v1/events', '/v1/users/{id}/events']) {
      expect(Object.keys(document.paths[path]?.get?.responses['200']?.content ?? {})).toEqual([contentType]);
    }
  });

  it('health and readiness', async () => {
    await expectFits('GET /v1/health', '/v1/health', 200);
    await eventually(() => expectFits('GET /v1/ready', '/v1/ready', 200));
  });

  it('metrics: the text format with the token, 401 in the envelope without it', async () => {
    const response = await fetch(`${base}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(response.status).toBe(200);
    const contentType = response.headers.get('content-type')?.split(';')[0] ?? '';
    expect(Object.keys(document.paths['/metrics']?.get?.responses['200']?.content ?? {})).toEqual([
      contentType,
    ]);
    await expectFits('GET /metrics', '/metrics', 401);
  });

  it.each<[string, string, () => string]>([
    ['GET /{id}.png', `/${KAI}.png`, () => `${harness.simulator.cdnUrl}/embed/avatars/`],
    ['GET /{id}.jpeg', `/${NOVA}.jpeg?size=64`, () => harness.simulator.cdnUrl],
    ['GET /discord', '/discord', () => INVITE],
  ])('%s: %s redirects, with the documented Location and no body', async (route, url, target) => {
    const response = await fetch(`${base}${url}`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(
      response.headers.get('location')?.startsWith(target()),
      response.headers.get('location') ?? '',
    ).toBe(true);
    expect(await response.text()).toBe('');
    const [method = '', path = ''] = route.split(' ');
    const documented = document.paths[path]?.[method.toLowerCase()]?.responses['302'] as
      | { headers?: Record<string, unknown>; content?: unknown }
      | undefined;
    expect(Object.keys(documented?.headers ?? {})).toContain('Location');
    expect(documented?.content).toBeUndefined();
  });

  it('KV writes: 204 with no body, as documented', async () => {
    const response = await fetch(`${base}/v1/users/@me/kv/mood`, {
      method: 'PUT',
      headers: { authorization: key },
      body: 'shipping',
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(document.paths['/v1/users/{id}/kv/{key}']?.put?.responses['204']?.content).toBeUndefined();
  });

  it.each<[string, string, number, () => RequestInit]>([
    ['GET /v1/users/{id}', '/v1/users/abc', 400, () => ({})],
    ['GET /v1/users/{id}', `/v1/users/${NOT_MONITORED}`, 404, () => ({})],
    ['GET /v1/users', `/v1/users?ids=${NOVA},,`, 400, () => ({})],
    ['GET /v1/users/{id}/events', '/v1/users/abc/events', 400, () => ({})],
    ['GET /v1/users/{id}/events', `/v1/users/${NOT_MONITORED}/events`, 404, () => ({})],
    ['GET /v1/events', `/v1/events?ids=${NOVA},x`, 400, () => ({})],
    ['GET /v1/users/@me', '/v1/users/@me', 401, () => ({})],
    ['GET /v1/users/{id}/history', '/v1/users/@me/history', 400, () => ({})],
    ['GET /v1/users/{id}/top-tracks', `/v1/users/${NOVA}/top-tracks?limit=x`, 400, () => ({})],
    [
      'GET /v1/users/{id}/card.svg',
      `/v1/users/${NOVA}/card.svg?theme=neon`,
      400,
      () => ({ headers: { accept: 'application/json' } }),
    ],
    [
      'GET /v1/users/{id}/card.png',
      '/v1/users/abc/card.png',
      400,
      () => ({ headers: { accept: 'application/json' } }),
    ],
    [
      'PUT /v1/users/{id}/kv/{key}',
      `/v1/users/${KAI}/kv/mood`,
      403,
      () => ({ method: 'PUT', headers: { authorization: key }, body: 'x' }),
    ],
    [
      'PUT /v1/users/{id}/kv/{key}',
      '/v1/users/@me/kv/not-a-key',
      400,
      () => ({ method: 'PUT', headers: { authorization: key }, body: 'x' }),
    ],
    [
      'PUT /v1/users/{id}/kv/{key}',
      '/v1/users/@me/kv/big',
      413,
      () => ({ method: 'PUT', headers: { authorization: key }, body: 'x'.repeat(200 * 1024) }),
    ],
    [
      'PATCH /v1/users/{id}/kv',
      '/v1/users/@me/kv',
      400,
      () => ({
        method: 'PATCH',
        headers: { authorization: key, 'content-type': 'application/json' },
        body: '[]',
      }),
    ],
    [
      'PATCH /v1/users/{id}/kv',
      '/v1/users/@me/kv',
      415,
      () => ({ method: 'PATCH', headers: { authorization: key, 'content-type': 'image/png' }, body: 'x' }),
    ],
    ['DELETE /v1/users/{id}/kv/{key}', '/v1/users/@me/kv/mood', 401, () => ({ method: 'DELETE' })],
    ['GET /{id}.png', `/${NOT_MONITORED}.png`, 404, () => ({})],
    ['GET /{id}.webp', '/abc.webp', 400, () => ({})],
    ['GET /{id}.gif', `/${NOVA}.gif?size=100`, 400, () => ({})],
    // A plain GET of the socket's path, without the upgrade.
    ['GET /socket', '/socket', 404, () => ({})],
  ])('%s: %s answers %i in the documented envelope', async (route, url, status, init) => {
    await expectFits(route, url, status, init());
  });
});

describe('the docs page and the document as served', () => {
  it('the page has its own policy: local scripts and styles only, not framable', async () => {
    const response = await fetch(`${base}${DOCS_PATH}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toBe(DOCS_CONTENT_SECURITY_POLICY);
    expect(DOCS_CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await response.text();
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map(([, source]) => source ?? '');
    expect(sources.length).toBeGreaterThan(3);
    for (const source of sources) expect(source, source).toMatch(new RegExp(`^${DOCS_PATH}/static/`));
  });

  it('the assets come from the npm package, under the same policy', async () => {
    const response = await fetch(`${base}${DOCS_PATH}/static/swagger-ui-bundle.js`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/javascript/);
    expect(response.headers.get('content-security-policy')).toBe(DOCS_CONTENT_SECURITY_POLICY);
    expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });

  it('the document keeps the policy of every answer', async () => {
    const response = await fetch(`${base}${OPENAPI_PATH}`);
    expect(response.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('response schemas', () => {
  it('document answers without changing them: fields a schema leaves out are sent as they were', async () => {
    const app = Fastify();
    await registerOpenApi(app, { version: '0.0.0', socket: false });
    // What fast-json-stringify would cut: Discord's open user object, with fields no schema names.
    const data = { id: NOVA, username: 'nova', avatar_decoration_data: { asset: 'a_1', sku_id: '2' } };
    app.get(
      '/open',
      { schema: { response: { 200: successResponse('open', discordUserSchema) } } },
      async () => ({ success: true, data }),
    );
    try {
      const response = await app.inject('/open');
      expect(JSON.parse(response.body)).toEqual({ success: true, data });
    } finally {
      await app.close();
    }
  });
});

describe('rate limits', () => {
  it('the document and the docs page are reads: they count against the read budget', async () => {
    const limited = await startHarness({ env: { RATE_LIMIT_READ: '3' } });
    try {
      await inOneReadWindow();
      const url = limited.base;
      for (const path of [OPENAPI_PATH, DOCS_PATH, `${DOCS_PATH}/static/swagger-ui.css`]) {
        const response = await fetch(`${url}${path}`);
        expect(response.status, path).toBe(200);
        expect(response.headers.get('ratelimit-limit'), path).toBe('3');
      }
      const refused = await fetch(`${url}${OPENAPI_PATH}`);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(((await refused.json()) as { error: { code: ErrorCode } }).error.code).toBe('rate_limited');
    } finally {
      await limited.close();
    }
  });
});
