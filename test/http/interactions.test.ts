import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { APIInteraction, APIInteractionResponse } from 'discord-api-types/v10';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Delivery } from '../../src/discord/messenger.js';
import { OPENAPI_PATH } from '../../src/http/routes/docs.js';
import {
  DEFERRAL_DEADLINE_MS,
  INTERACTION_BODY_LIMIT,
  type InteractionRouteOptions,
  interactionRoutes,
  REPLAY_WINDOW_MS,
} from '../../src/http/routes/interactions.js';
import { createLogger } from '../../src/log.js';
import { eventually } from '../support/eventually.js';
import { startHttpServer } from '../support/http-server.js';
import {
  OPENAPI_31_STRUCTURE,
  type OpenApiDocument,
  resolvePointer,
  schemaCompiler,
} from '../support/openapi.js';

/**
 * `POST /interactions` over real HTTP on loopback, signed as Discord signs: with an Ed25519 key made here,
 * over `X-Signature-Timestamp` + the raw body. Nothing unsigned, altered, stale or repeated reaches the
 * handler; what the handler answers is Discord's answer, and a handler that does not answer (or fails)
 * is answered for with a deferral, never a 500.
 */

type Handle = InteractionRouteOptions['handle'];
type Respond = Parameters<Handle>[1];

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const otherKey = generateKeyPairSync('ed25519').privateKey;
/** The public key as the Developer Portal shows it: 32 bytes in hex. */
const PUBLIC_KEY_HEX = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url').toString(
  'hex',
);
/** The interaction's token: a secret (a webhook token for 15 minutes) that must never be logged. */
const TOKEN = 'aW50ZXJhY3Rpb24tdG9rZW4tbmV2ZXItbG9nZ2Vk';
/** Reads are limited to this: the route must not be in their budget. */
const READS = 2;

let handle: Handle = () => undefined;
const lines: string[] = [];
let app: FastifyInstance;
let base: string;
let nextId = 1_000_000_000_000_000_000n;

beforeAll(async () => {
  ({ app, base } = await startHttpServer({
    interactions: {
      publicKey: PUBLIC_KEY_HEX,
      handle: (interaction, respond) => handle(interaction, respond),
    },
    rateLimits: { read: READS, write: 0 },
    logger: createLogger('trace', false, { write: (line: string) => void lines.push(line) }),
  }));
});

afterAll(async () => {
  await app?.close();
});

afterEach(() => {
  handle = () => undefined;
  vi.useRealTimers();
});

const seconds = (ms = Date.now()) => String(Math.floor(ms / 1000));

/** A slash command interaction, with a new id. */
function command(name = 'ping'): APIInteraction {
  nextId += 1n;
  return {
    id: String(nextId),
    application_id: '1100000000000000001',
    type: 2,
    token: TOKEN,
    version: 1,
    data: { id: '1100000000000000002', name, type: 1 },
    channel_id: '1100000000000000003',
    user: {
      id: '1100000000000000004',
      username: 'nova',
      discriminator: '0',
      global_name: 'Nova',
      avatar: null,
    },
    locale: 'en-US',
    app_permissions: '0',
    entitlements: [],
    authorizing_integration_owners: {},
    attachment_size_limit: 8_388_608,
  } as unknown as APIInteraction;
}

const PING = JSON.stringify({
  id: '1100000000000000009',
  application_id: '1100000000000000001',
  type: 1,
  token: TOKEN,
  version: 1,
});

interface Signed {
  body: string | Buffer;
  headers: Record<string, string>;
}

/** `body` signed as Discord signs it; `key` and `timestamp` may be someone else's. */
function signed(
  body: string | Buffer,
  { key = privateKey, timestamp = seconds() }: { key?: KeyObject; timestamp?: string } = {},
): Signed {
  const signature = sign(null, Buffer.concat([Buffer.from(timestamp), Buffer.from(body)]), key).toString(
    'hex',
  );
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-signature-ed25519': signature,
      'x-signature-timestamp': timestamp,
    },
  };
}

async function post(request: Signed): Promise<{ status: number; body: unknown; headers: Headers }> {
  const response = await fetch(`${base}/interactions`, { method: 'POST', ...request });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

/** A promise and what settles it (Promise.withResolvers, which the compiled-for library lacks). */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

const refused = (code: string) => ({ success: false, error: { code, message: expect.any(String) } });
const messageOf = (body: unknown) => (body as { error: { message: string } }).error.message;

/** Flips one bit of a hex string, at `at` (a hex digit). */
function flipped(hex: string, at = 0): string {
  const digit = Number.parseInt(hex[at] as string, 16) ^ 1;
  return hex.slice(0, at) + digit.toString(16) + hex.slice(at + 1);
}

describe('PING', () => {
  it('is answered PONG, {"type":1}, without the handler', async () => {
    const called = vi.fn();
    handle = called;
    const answer = await post(signed(PING));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual({ type: 1 });
    expect(called).not.toHaveBeenCalled();
  });

  it('is not in the per-IP read budget: Discord comes from few addresses', async () => {
    for (let n = 0; n < READS + 3; n++) {
      const answer = await post(signed(PING));
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit-limit')).toBeNull();
    }
  });
});

describe('what is not signed by the application is refused 401 invalid_signature', () => {
  it('no signature headers', async () => {
    const called = vi.fn();
    handle = called;
    const none = await post({
      body: JSON.stringify(command()),
      headers: { 'content-type': 'application/json' },
    });
    expect([none.status, none.body]).toEqual([401, refused('invalid_signature')]);
    const { headers } = signed(PING);
    const noTimestamp = await post({
      body: PING,
      headers: {
        'content-type': 'application/json',
        'x-signature-ed25519': headers['x-signature-ed25519'] as string,
      },
    });
    expect([noTimestamp.status, noTimestamp.body]).toEqual([401, refused('invalid_signature')]);
    expect(called).not.toHaveBeenCalled();
  });

  it('headers of the wrong shape: a short signature, one not hex, a timestamp not in seconds', async () => {
    const good = signed(PING);
    const signature = good.headers['x-signature-ed25519'] as string;
    const variations: Record<string, string>[] = [
      { 'x-signature-ed25519': signature.slice(2) },
      { 'x-signature-ed25519': `${signature.slice(0, 126)}zz` },
      { 'x-signature-timestamp': `${good.headers['x-signature-timestamp']}.5` },
      { 'x-signature-timestamp': '' },
    ];
    for (const headers of variations) {
      const answer = await post({ body: PING, headers: { ...good.headers, ...headers } });
      expect([answer.status, answer.body]).toEqual([401, refused('invalid_signature')]);
    }
  });

  it('a signature with one bit flipped', async () => {
    const good = signed(PING);
    for (const at of [0, 63, 127]) {
      const signature = flipped(good.headers['x-signature-ed25519'] as string, at);
      const answer = await post({
        body: PING,
        headers: { ...good.headers, 'x-signature-ed25519': signature },
      });
      expect([answer.status, answer.body]).toEqual([401, refused('invalid_signature')]);
    }
  });

  it('a signature by another key', async () => {
    const called = vi.fn();
    handle = called;
    const answer = await post(signed(JSON.stringify(command()), { key: otherKey }));
    expect([answer.status, answer.body]).toEqual([401, refused('invalid_signature')]);
    expect(called).not.toHaveBeenCalled();
  });

  it('a body altered after it was signed, by a byte or by whitespace', async () => {
    const called = vi.fn();
    handle = called;
    const body = JSON.stringify(command());
    const { headers } = signed(body);
    for (const altered of [body.replace('"ping"', '"pong"'), `${body} `, body.replace(':', ': ')]) {
      const answer = await post({ body: altered, headers });
      expect([answer.status, answer.body]).toEqual([401, refused('invalid_signature')]);
    }
    expect(called).not.toHaveBeenCalled();
  });

  it('a timestamp more than 5 minutes old, or ahead, properly signed', async () => {
    const called = vi.fn();
    handle = called;
    for (const at of [Date.now() - REPLAY_WINDOW_MS - 2_000, Date.now() + REPLAY_WINDOW_MS + 2_000]) {
      const answer = await post(signed(JSON.stringify(command()), { timestamp: seconds(at) }));
      expect([answer.status, answer.body]).toEqual([401, refused('invalid_signature')]);
      expect(messageOf(answer.body)).toMatch(/5 minutes/);
    }
    expect(called).not.toHaveBeenCalled();
  });

  it('a replay of a signed request: refused, and the handler runs once', async () => {
    let runs = 0;
    handle = (_interaction, respond) => {
      runs += 1;
      void respond({ type: 4, data: { content: 'pong' } });
    };
    const request = signed(JSON.stringify(command()));
    const first = await post(request);
    expect([first.status, first.body]).toEqual([200, { type: 4, data: { content: 'pong' } }]);
    for (const replay of [request, { ...request }]) {
      const answer = await post(replay);
      expect([answer.status, answer.body]).toEqual([401, refused('invalid_signature')]);
      expect(messageOf(answer.body)).toMatch(/received already/);
    }
    expect(runs).toBe(1);
  });

  it('an unsigned request is refused on its headers, before its body is read: however large, whatever its type', async () => {
    for (const type of ['application/json', 'text/plain']) {
      const answer = await post({
        body: 'x'.repeat(4 * INTERACTION_BODY_LIMIT),
        headers: { 'content-type': type },
      });
      expect([answer.status, answer.body]).toEqual([401, refused('invalid_signature')]);
    }
  });
});

describe('a signed interaction', () => {
  it('runs the handler with the parsed interaction; its response is the HTTP answer', async () => {
    const interaction = command('status');
    let given: APIInteraction | undefined;
    let delivered: Promise<Delivery> | undefined;
    let again: Promise<Delivery> | undefined;
    handle = (received, respond) => {
      given = received;
      delivered = respond({ type: 4, data: { content: 'all good', flags: 64 } });
      again = respond({ type: 4, data: { content: 'second' } });
    };
    const answer = await post(signed(JSON.stringify(interaction)));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual({ type: 4, data: { content: 'all good', flags: 64 } });
    expect(given).toEqual(interaction);
    expect(await delivered).toEqual({ accepted: true });
    expect(await again).toEqual({ accepted: false, reason: expect.stringMatching(/answered already/) });
  });

  it('may be answered later than the call, within the deadline', async () => {
    let respond: Respond | undefined;
    const called = signal();
    handle = (_interaction, given) => {
      respond = given;
      called.resolve();
    };
    const answer = post(signed(JSON.stringify(command())));
    await called.promise;
    expect(await respond?.({ type: 4, data: { content: 'later' } })).toEqual({ accepted: true });
    expect((await answer).body).toEqual({ type: 4, data: { content: 'later' } });
  });

  it('not answered within the deadline: a deferred ephemeral response, and a late respond is told why', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let respond: Respond | undefined;
    const called = signal();
    handle = (_interaction, given) => {
      respond = given;
      called.resolve();
    };
    const answer = post(signed(JSON.stringify(command('slow'))));
    await called.promise;
    await vi.advanceTimersByTimeAsync(DEFERRAL_DEADLINE_MS);
    const deferred = await answer;
    expect([deferred.status, deferred.body]).toEqual([200, { type: 5, data: { flags: 64 } }]);
    expect(await respond?.({ type: 4, data: { content: 'too late' } })).toEqual({
      accepted: false,
      reason: expect.stringMatching(/deferred.*follow-up/),
    });
  });

  it('Discord gone before the answer (the request closed): respond is told it was not delivered', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    lines.length = 0;
    let respond: Respond | undefined;
    const called = signal();
    handle = (_interaction, given) => {
      respond = given;
      called.resolve();
    };
    const gone = new AbortController();
    const answer = fetch(`${base}/interactions`, {
      method: 'POST',
      ...signed(JSON.stringify(command())),
      signal: gone.signal,
    });
    await called.promise;
    gone.abort();
    await expect(answer).rejects.toThrow();
    await eventually(() => expect(lines.join('')).toContain('closed before it was answered'));
    expect(await respond?.({ type: 4, data: { content: 'nobody hears' } })).toEqual({
      accepted: false,
      reason: expect.stringMatching(/closed/),
    });
  });

  it('a handler that throws, or whose promise rejects: logged, and deferred at once, never a 500', async () => {
    // The deadline cannot pass: the deferral comes of the failure alone.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    lines.length = 0;
    const failures: Handle[] = [
      () => {
        throw new Error('thrown by the handler');
      },
      (async () => {
        throw new Error('rejected by the handler');
      }) as Handle,
    ];
    for (const failure of failures) {
      handle = failure;
      const answer = await post(signed(JSON.stringify(command())));
      expect([answer.status, answer.body]).toEqual([200, { type: 5, data: { flags: 64 } }]);
    }
    const logged = lines.join('');
    expect(logged).toContain('thrown by the handler');
    expect(logged).toContain('rejected by the handler');
    expect(logged).toContain('interaction handler failed');
    expect(logged).not.toContain(TOKEN);
  });

  it('an autocomplete whose handler fails is answered with no suggestions (it cannot be deferred)', async () => {
    handle = () => {
      throw new Error('no suggestions today');
    };
    const autocomplete = { ...command('search'), type: 4 };
    const answer = await post(signed(JSON.stringify(autocomplete)));
    expect([answer.status, answer.body]).toEqual([200, { type: 8, data: { choices: [] } }]);
  });

  it('a response that is not JSON is refused to the handler, which may still answer', async () => {
    let first: Delivery | undefined;
    handle = (_interaction, respond) => {
      void respond({ type: 4, data: { content: 1n } } as unknown as APIInteractionResponse).then(
        (delivery) => {
          first = delivery;
          void respond({ type: 4, data: { content: 'fixed' } });
        },
      );
    };
    const answer = await post(signed(JSON.stringify(command())));
    expect(answer.body).toEqual({ type: 4, data: { content: 'fixed' } });
    expect(first).toEqual({ accepted: false, reason: expect.any(String) });
  });

  it('a body that is not JSON, or not an interaction, properly signed: 400 bad_request', async () => {
    const called = vi.fn();
    handle = called;
    for (const body of ['{"type":2,', '[1,2]', '{"type":"2","id":"1"}', '{"type":2}', '']) {
      const answer = await post(signed(body));
      expect([answer.status, answer.body], body).toEqual([400, refused('bad_request')]);
    }
    expect(called).not.toHaveBeenCalled();
  });
});

describe('refused before the signature is checked (well-shaped headers, a wrong signature)', () => {
  /** Headers of Discord's shape whose signature is not the body's. */
  const wrong = (body: string): Signed => {
    const request = signed(body);
    const signature = flipped(request.headers['x-signature-ed25519'] as string);
    return { body, headers: { ...request.headers, 'x-signature-ed25519': signature } };
  };

  it(`a body over ${INTERACTION_BODY_LIMIT / 1024} KiB: 413 payload_too_large, in JSON`, async () => {
    const body = JSON.stringify({ ...command(), padding: 'x'.repeat(INTERACTION_BODY_LIMIT) });
    for (const request of [signed(body), wrong(body)]) {
      const answer = await post(request);
      expect([answer.status, answer.body]).toEqual([413, refused('payload_too_large')]);
    }
  });

  it('a body that is not JSON by its content type: 415 unsupported_media_type', async () => {
    const body = JSON.stringify(command());
    for (const request of [signed(body), wrong(body)]) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
        const answer = await post({ ...request, headers: { ...request.headers, 'content-type': type } });
        expect([answer.status, answer.body]).toEqual([415, refused('unsupported_media_type')]);
      }
      // No content type at all (fetch names none for bytes).
      const { 'content-type': _, ...untyped } = request.headers;
      const answer = await post({ body: Buffer.from(body), headers: untyped });
      expect([answer.status, answer.body]).toEqual([415, refused('unsupported_media_type')]);
    }
  });
});

describe('the route', () => {
  it('is documented: valid OpenAPI 3.1, invalid_signature under 401, and its answers fit their schemas', async () => {
    const document = (await (await fetch(`${base}${OPENAPI_PATH}`)).json()) as OpenApiDocument;
    const structure = new Ajv2020({ strict: false, allErrors: true }).compile(OPENAPI_31_STRUCTURE);
    expect(structure(document), JSON.stringify(structure.errors?.slice(0, 5))).toBe(true);
    const operation = document.paths['/interactions']?.post;
    if (!operation) throw new Error('POST /interactions is not in the document');
    const schemaOf = (status: number) => operation.responses[status]?.content?.['application/json']?.schema;
    expect(resolvePointer(schemaOf(401), '#/properties/error/properties/code/enum')).toContain(
      'invalid_signature',
    );
    const compile = schemaCompiler(document);
    const body = operation.requestBody?.content['application/json']?.schema;
    expect(compile(body as object)(JSON.parse(PING))).toBe(true);
    const callback = compile(schemaOf(200) as object);
    expect(callback((await post(signed(PING))).body)).toBe(true);
    handle = () => {
      throw new Error('for the deferral');
    };
    expect(callback((await post(signed(JSON.stringify(command())))).body)).toBe(true);
    const error = compile(schemaOf(401) as object);
    expect(error((await post({ body: PING, headers: { 'content-type': 'application/json' } })).body)).toBe(
      true,
    );
  });

  it('is not served without the option: 404 not_found, and not documented', async () => {
    const { app: plain, base: plainBase } = await startHttpServer();
    try {
      const answer = await fetch(`${plainBase}/interactions`, { method: 'POST', ...signed(PING) });
      expect(answer.status).toBe(404);
      expect(await answer.json()).toEqual(refused('not_found'));
      const document = (await (await fetch(`${plainBase}${OPENAPI_PATH}`)).json()) as OpenApiDocument;
      expect(document.paths['/interactions']).toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  it('refuses a public key that is not 32 bytes of hex when it is made, not at the first request', () => {
    for (const publicKey of ['', 'zz'.repeat(32), PUBLIC_KEY_HEX.slice(2)]) {
      expect(() => interactionRoutes({ publicKey, handle: () => undefined })).toThrow(/64 hex characters/);
    }
  });
});
