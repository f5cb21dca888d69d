import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessages } from '../../src/bus/ports.js';
import { generateApiKey } from '../../src/keys/api-key.js';
import { DEFAULT_KV_MAX_BYTES } from '../../src/kv/rules.js';
import { insertApiKey } from '../support/api-key.js';
import { startApiNode } from '../support/api-node.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { KV_LIMITS } from '../support/kv.js';
import { dropPrefix, REDIS_TEST_URL, redisAvailable, uniquePrefix } from '../support/redis.js';

/**
 * The KV routes against the real app (real HTTP, real store, the presence read back through
 * `GET /v1/users/:id`): every row of the contract's error table (docs/api.md) a KV write can hit, the limits at their edges,
 * and that a rejected write changes nothing.
 */

const hasRedis = await redisAvailable('the KV routes on Redis');
const GUILD = '500000000000000001';
const JSON_TYPE = 'application/json; charset=utf-8';
const KIB = 1024;

type Kv = Record<string, string>;
type Envelope<T> = { success: true; data: T } | { success: false; error: { code: string; message: string } };

let h: Harness;
/** Each test gets its own monitored user, so tests never share a KV. */
let nextUser = 90_000_000_000_000_000n;

beforeAll(async () => {
  h = await startHarness({
    setup: (sim) => sim.createGuild({ id: GUILD, name: 'KV Guild', members: [] }),
  });
});

afterAll(async () => {
  await h?.close();
});

interface User {
  id: string;
  key: string;
}

/** A new member of GUILD, monitored, with a live key. */
async function user(): Promise<User> {
  const id = String(nextUser++);
  h.simulator.addMember(GUILD, {
    user: { id, username: `u${id.slice(-4)}` },
    presence: { status: 'online' },
  });
  await eventually(() => expect(h.app.registry.isMonitored(id)).toBe(true));
  return { id, key: await insertApiKey(h.app.store, id) };
}

interface Call {
  key?: string | null;
  /** Raw Authorization header value (overrides key). */
  authorization?: string;
  body?: string | Uint8Array;
  type?: string | null;
}

async function call(method: string, path: string, options: Call = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  else if (typeof options.key === 'string') headers.authorization = options.key;
  if (typeof options.type === 'string') headers['content-type'] = options.type;
  return fetch(`${h.base}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
}

function put(u: User, name: string, body: string | Uint8Array, options: Omit<Call, 'body'> = {}) {
  return call('PUT', `/v1/users/@me/kv/${name}`, { key: u.key, body, ...options });
}

function patch(u: User, body: string | Uint8Array, options: Omit<Call, 'body'> = {}) {
  return call('PATCH', '/v1/users/@me/kv', { key: u.key, body, type: 'application/json', ...options });
}

function del(u: User, name: string, options: Call = {}) {
  return call('DELETE', `/v1/users/@me/kv/${name}`, { key: u.key, ...options });
}

/** The user's KV as the next presence read shows it. */
async function presenceKv(id: string): Promise<Kv> {
  const response = await fetch(`${h.base}/v1/users/${id}`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as Envelope<{ kv: Kv }>;
  if (!body.success) throw new Error(body.error.code);
  return body.data.kv;
}

async function stored(id: string) {
  return h.app.store.kv.getKv(id);
}

/** Checks the envelope of a refusal; resolves with its message. */
async function expectError(response: Response, status: number, code: string): Promise<string> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toBe(JSON_TYPE);
  const body = JSON.parse(text) as unknown;
  expect(body).toEqual({ success: false, error: { code, message: expect.any(String) } });
  const { message } = (body as { error: { message: string } }).error;
  expect(message.length).toBeGreaterThan(0);
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
  return message;
}

async function expect204(response: Response): Promise<void> {
  expect(response.status, await response.clone().text()).toBe(204);
  expect(await response.text()).toBe('');
}

/**
 * Runs `attempt`, which must be refused with `status`/`code`, and checks that nothing changed: not in the
 * store (revision included) and not in the presence. Resolves with the refusal's message.
 */
async function refused(
  u: User,
  attempt: () => Promise<Response>,
  status: number,
  code: string,
  label?: string,
): Promise<string> {
  const before = await stored(u.id);
  const shown = await presenceKv(u.id);
  let message: string;
  try {
    message = await expectError(await attempt(), status, code);
  } catch (error) {
    if (label) (error as Error).message = `${label}: ${(error as Error).message}`;
    throw error;
  }
  expect(await stored(u.id), label).toEqual(before);
  expect(await presenceKv(u.id), label).toEqual(shown);
  return message;
}

/** Runs `attempt`, which must be accepted, and checks the next presence read shows `expected`. */
async function accepted(attempt: () => Promise<Response>, id: string, expected: Kv): Promise<void> {
  await expect204(await attempt());
  expect(await presenceKv(id)).toEqual(expected);
  expect((await stored(id)).kv).toEqual(expected);
}

const emoji = (n: number) => '😀'.repeat(n);

/** What a KV weighs against KV_MAX_BYTES: the UTF-8 bytes of its names and values. */
const kvBytes = (kv: Kv) =>
  Object.entries(kv).reduce(
    (sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(value),
    0,
  );

/** A PATCH body of `count` short valid entries (under the 1 MiB body cap), then `extra`. */
const manyKeys = (count: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ ...Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, ''])), ...extra });
const codePoints = (value: string) => [...value].length;

describe('401 invalid_api_key', () => {
  const variants: [string, Call][] = [
    ['no header', { key: null }],
    ['an empty header', { authorization: '' }],
    ['"Bearer " with nothing', { authorization: 'Bearer ' }],
    ['"Bearer" alone', { authorization: 'Bearer' }],
    ['an unknown key', { authorization: 'not-a-key' }],
    ['a key-shaped but unissued key', { authorization: generateApiKey() }],
    ['a key-shaped but unissued key, as Bearer', { authorization: `Bearer ${generateApiKey()}` }],
    ['garbage', { authorization: '%%% garbage \t !!' }],
    ['a key one character too long', { authorization: `${generateApiKey()}x` }],
    ['Basic credentials', { authorization: 'Basic dXNlcjpwYXNz' }],
  ];

  it.each(variants)('PUT, PATCH, DELETE and GET @me with %s', async (label, auth) => {
    const u = await user();
    await accepted(() => put(u, 'kept', 'yes'), u.id, { kept: 'yes' });
    const attempts: [string, () => Promise<Response>][] = [
      ['PUT @me', () => call('PUT', '/v1/users/@me/kv/x', { ...auth, body: 'v' })],
      ['PUT id', () => call('PUT', `/v1/users/${u.id}/kv/x`, { ...auth, body: 'v' })],
      [
        'PATCH',
        () => call('PATCH', `/v1/users/${u.id}/kv`, { ...auth, body: '{"x":"v"}', type: 'application/json' }),
      ],
      ['DELETE', () => call('DELETE', `/v1/users/${u.id}/kv/kept`, auth)],
    ];
    for (const [what, attempt] of attempts)
      await refused(u, attempt, 401, 'invalid_api_key', `${label}, ${what}`);
    await expectError(await call('GET', '/v1/users/@me', auth), 401, 'invalid_api_key');
  });

  it('a replaced key stops working at once', async () => {
    const u = await user();
    const old = u.key;
    u.key = await insertApiKey(h.app.store, u.id);
    await refused(u, () => put({ ...u, key: old }, 'x', 'v'), 401, 'invalid_api_key');
    await accepted(() => put(u, 'x', 'v'), u.id, { x: 'v' });
  });
});

describe('403 no_permission', () => {
  it("a valid key on another user's id: PUT, PATCH and DELETE, nothing written on either side", async () => {
    const owner = await user();
    const victim = await user();
    await accepted(() => put(victim, 'mine', 'victim'), victim.id, { mine: 'victim' });
    await accepted(() => put(owner, 'own', 'owner'), owner.id, { own: 'owner' });
    const attempts: [string, () => Promise<Response>][] = [
      ['PUT', () => call('PUT', `/v1/users/${victim.id}/kv/mine`, { key: owner.key, body: 'hacked' })],
      [
        'PATCH',
        () =>
          call('PATCH', `/v1/users/${victim.id}/kv`, {
            key: owner.key,
            body: '{"mine":"x"}',
            type: 'application/json',
          }),
      ],
      ['DELETE', () => call('DELETE', `/v1/users/${victim.id}/kv/mine`, { key: owner.key })],
      [
        'PUT Bearer',
        () => call('PUT', `/v1/users/${victim.id}/kv/z`, { authorization: `Bearer ${owner.key}`, body: 'z' }),
      ],
      // An id nobody is monitored as is still someone else's.
      [
        'PUT unknown id',
        () => call('PUT', '/v1/users/123456789012345678/kv/z', { key: owner.key, body: 'z' }),
      ],
    ];
    for (const [what, attempt] of attempts) {
      await refused(victim, attempt, 403, 'no_permission', what);
    }
    expect(await stored(owner.id)).toMatchObject({ kv: { own: 'owner' }, revision: 1 });
    expect((await stored('123456789012345678')).revision).toBe(0);
  });
});

describe('400 invalid_user_id', () => {
  it('a path id that is neither a snowflake nor @me, with or without a key', async () => {
    const u = await user();
    for (const id of ['abc', '-1', '12a', '18446744073709551616', '123456789012345678901', 'me', '@ME']) {
      for (const auth of [{ key: u.key }, { key: null }]) {
        const label = `${id} ${auth.key ? 'keyed' : 'no key'}`;
        await refused(
          u,
          () => call('PUT', `/v1/users/${id}/kv/x`, { ...auth, body: 'v' }),
          400,
          'invalid_user_id',
          label,
        );
        await refused(
          u,
          () => call('PATCH', `/v1/users/${id}/kv`, { ...auth, body: '{"x":"v"}', type: 'application/json' }),
          400,
          'invalid_user_id',
          label,
        );
        await refused(u, () => call('DELETE', `/v1/users/${id}/kv/x`, auth), 400, 'invalid_user_id', label);
      }
    }
  });
});

describe('400 invalid_kv_key', () => {
  const badKeys = ['bad-key', 'a.b', 'a b', 'é', 'ключ', '😀', 'a$', 'x%'];

  it('PUT and DELETE refuse bad names in the path', async () => {
    const u = await user();
    await accepted(() => put(u, 'kept', 'v'), u.id, { kept: 'v' });
    for (const name of badKeys) {
      const path = encodeURIComponent(name);
      await refused(u, () => put(u, path, 'v'), 400, 'invalid_kv_key', `PUT ${name}`);
      await refused(u, () => del(u, path), 400, 'invalid_kv_key', `DELETE ${name}`);
    }
    // An empty name: `/kv/` with nothing after it.
    await refused(u, () => put(u, '', 'v'), 400, 'invalid_kv_key', 'PUT empty');
    await refused(u, () => del(u, ''), 400, 'invalid_kv_key', 'DELETE empty');
  });

  it('PATCH refuses bad names, and writes none of the good ones next to them', async () => {
    const u = await user();
    for (const name of [...badKeys, '', 'k'.repeat(256), ' spaced', 'tab\t']) {
      await refused(
        u,
        () => patch(u, JSON.stringify({ good: 'g', [name]: 'v', also_good: 'a' })),
        400,
        'invalid_kv_key',
        `PATCH ${JSON.stringify(name)}`,
      );
    }
    expect(await stored(u.id)).toEqual({ kv: {}, revision: 0 });
  });

  it('PATCH checks every name before any value', async () => {
    const u = await user();
    await refused(u, () => patch(u, '{"number":5,"bad-key":"v"}'), 400, 'invalid_kv_key');
    await refused(
      u,
      () => patch(u, JSON.stringify({ long: emoji(30_001), 'a.b': 'v' })),
      400,
      'invalid_kv_key',
    );
  });

  it('PATCH takes a 255-character name', async () => {
    const u = await user();
    const name = 'p'.repeat(255);
    await accepted(() => patch(u, JSON.stringify({ [name]: 'v' })), u.id, { [name]: 'v' });
  });

  it('a 256-character name is refused with invalid_kv_key on PUT and DELETE', async () => {
    const u = await user();
    const name = 'k'.repeat(256);
    await refused(u, () => put(u, name, 'v'), 400, 'invalid_kv_key', 'PUT');
    await refused(u, () => del(u, name), 400, 'invalid_kv_key', 'DELETE');
  });

  it('a 255-character name is accepted on PUT and DELETE', async () => {
    const u = await user();
    const name = 'k'.repeat(255);
    await accepted(() => put(u, name, 'long'), u.id, { [name]: 'long' });
    await accepted(() => del(u, name), u.id, {});
  });

  it('names of 1 to 100 characters are accepted on PUT and DELETE', async () => {
    const u = await user();
    for (const name of ['a', '_', 'Z9', 'x'.repeat(100)]) {
      await accepted(() => put(u, name, 'v'), u.id, { [name]: 'v' });
      await accepted(() => del(u, name), u.id, {});
    }
  });
});

describe('400 invalid_kv_value', () => {
  it('PUT: 30,000 code points are accepted (emoji count once), 30,001 are not', async () => {
    const u = await user();
    const max = emoji(30_000);
    expect(max.length).toBe(60_000);
    expect(Buffer.byteLength(max)).toBe(120_000);
    await accepted(() => put(u, 'emoji', max), u.id, { emoji: max });
    expect(codePoints((await presenceKv(u.id)).emoji ?? '')).toBe(30_000);

    await refused(u, () => put(u, 'emoji', emoji(30_001)), 400, 'invalid_kv_value', 'emoji 30,001');
    await refused(u, () => put(u, 'other', emoji(30_001)), 400, 'invalid_kv_value', 'new key 30,001');
    await refused(u, () => put(u, 'ascii', 'x'.repeat(30_001)), 400, 'invalid_kv_value', 'ascii 30,001');
    await accepted(() => put(u, 'ascii', 'x'.repeat(30_000)), u.id, {
      emoji: max,
      ascii: 'x'.repeat(30_000),
    });
  });

  it('PATCH: the same limit per value', async () => {
    const u = await user();
    await accepted(() => patch(u, JSON.stringify({ a: emoji(30_000), b: 'x' })), u.id, {
      a: emoji(30_000),
      b: 'x',
    });
    await refused(u, () => patch(u, JSON.stringify({ c: 'ok', a: emoji(30_001) })), 400, 'invalid_kv_value');
  });

  it('PATCH: a value that is not a string', async () => {
    const u = await user();
    await accepted(() => put(u, 'kept', 'v'), u.id, { kept: 'v' });
    for (const value of [1, 0, 1.5, null, true, false, {}, { a: 'b' }, [], ['a']]) {
      await refused(
        u,
        () => patch(u, JSON.stringify({ fine: 'x', bad: value, kept: 'changed' })),
        400,
        'invalid_kv_value',
        JSON.stringify(value),
      );
    }
  });

  it('PATCH: a body that is not a JSON object', async () => {
    const u = await user();
    for (const body of ['[]', '["a","b"]', '[{"a":"b"}]', '"a string"', '42', 'null', 'true']) {
      await refused(u, () => patch(u, body), 400, 'invalid_kv_value', body);
    }
  });

  it('PATCH: an empty body, with or without a content type', async () => {
    const u = await user();
    await refused(u, () => patch(u, ''), 400, 'invalid_kv_value', 'empty json');
    await refused(u, () => patch(u, '  \n '), 400, 'invalid_kv_value', 'white space');
    await refused(
      u,
      () => call('PATCH', '/v1/users/@me/kv', { key: u.key }),
      400,
      'invalid_kv_value',
      'no body',
    );
    await refused(
      u,
      () => call('PATCH', '/v1/users/@me/kv', { key: u.key, body: '', type: 'text/plain' }),
      400,
      'invalid_kv_value',
      'empty text',
    );
  });

  it('PATCH: a body that is not JSON', async () => {
    const u = await user();
    for (const body of ['{a:"b"}', "{'a':'b'}", '{"a":"b"', 'hello', '{"a":"b"} trailing', '{"a":"b",}']) {
      await refused(u, () => patch(u, body), 400, 'invalid_kv_value', body);
      await refused(u, () => patch(u, body, { type: 'text/plain' }), 400, 'invalid_kv_value', `text ${body}`);
    }
  });

  it('PUT and PATCH: a body that is not valid UTF-8', async () => {
    const u = await user();
    const bad = new Uint8Array([0xff, 0xfe]);
    await refused(u, () => put(u, 'x', bad), 400, 'invalid_kv_value', 'PUT ff fe');
    await refused(u, () => put(u, 'x', bad, { type: 'text/plain' }), 400, 'invalid_kv_value', 'PUT text');
    await refused(u, () => patch(u, bad), 400, 'invalid_kv_value', 'PATCH ff fe');
    // Valid JSON around an invalid byte, and an overlong encoding.
    const inside = Buffer.concat([Buffer.from('{"x":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    await refused(u, () => patch(u, new Uint8Array(inside)), 400, 'invalid_kv_value', 'PATCH inside');
    await refused(u, () => put(u, 'x', new Uint8Array([0xc0, 0xaf])), 400, 'invalid_kv_value', 'overlong');
  });

  it('PATCH: a lone surrogate escaped in JSON is not valid Unicode', async () => {
    const u = await user();
    await refused(u, () => patch(u, '{"x":"a\\ud800b"}'), 400, 'invalid_kv_value');
  });
});

describe('400 kv_limit_exceeded', () => {
  async function fill(u: User, count: number, prefix = 'k'): Promise<Kv> {
    const expected: Kv = {};
    for (let start = 0; start < count; start += 32) {
      const batch = Array.from({ length: Math.min(32, count - start) }, (_, i) => start + i);
      const responses = await Promise.all(batch.map((i) => put(u, `${prefix}${i}`, `v${i}`)));
      for (const response of responses) expect(response.status).toBe(204);
      for (const i of batch) expected[`${prefix}${i}`] = `v${i}`;
    }
    return expected;
  }

  it('PUT: 512 keys one by one; the 513th is refused; overwriting at 512 is fine', async () => {
    const u = await user();
    const expected = await fill(u, 512);
    expect(await presenceKv(u.id)).toEqual(expected);
    await refused(u, () => put(u, 'one_more', 'x'), 400, 'kv_limit_exceeded');
    expected.k7 = 'overwritten';
    await accepted(() => put(u, 'k7', 'overwritten'), u.id, expected);
    // Deleting makes room again.
    delete expected.k0;
    await accepted(() => del(u, 'k0'), u.id, expected);
    expected.one_more = 'x';
    await accepted(() => put(u, 'one_more', 'x'), u.id, expected);
    await refused(u, () => put(u, 'two_more', 'x'), 400, 'kv_limit_exceeded');
  });

  it('PATCH: all or nothing at the limit', async () => {
    const u = await user();
    const expected = await fill(u, 510);
    // 2 existing + 3 new = 513: refused, and not one of them written (existing values included).
    await refused(
      u,
      () => patch(u, JSON.stringify({ k1: 'changed', k2: 'changed', n1: 'a', n2: 'b', n3: 'c' })),
      400,
      'kv_limit_exceeded',
    );
    // 2 existing + 2 new = 512: accepted.
    Object.assign(expected, { k1: 'changed', k2: 'changed', n1: 'a', n2: 'b' });
    await accepted(
      () => patch(u, JSON.stringify({ k1: 'changed', k2: 'changed', n1: 'a', n2: 'b' })),
      u.id,
      expected,
    );
    await refused(u, () => patch(u, JSON.stringify({ n3: 'c' })), 400, 'kv_limit_exceeded');
  });

  it('PATCH: exactly 512 new keys on an empty KV are accepted, 513 are not', async () => {
    const u = await user();
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, `v${i}`]));
    await refused(u, () => patch(u, JSON.stringify(many(513))), 400, 'kv_limit_exceeded');
    expect(await stored(u.id)).toEqual({ kv: {}, revision: 0 });
    await accepted(() => patch(u, JSON.stringify(many(512))), u.id, many(512));
  });
});

describe('400 kv_limit_exceeded: KV_MAX_BYTES', () => {
  const CAP = DEFAULT_KV_MAX_BYTES;
  const capMessage = (wouldHave: number) =>
    `this write would leave ${wouldHave.toLocaleString('en')} bytes of KV; the limit is 1,048,576 (KV_MAX_BYTES)`;

  /** 34 values of 30,000 ASCII characters, b0 to b33: 1,020,092 bytes with their names, in one PATCH. */
  const nearlyFull = (): Kv =>
    Object.fromEntries(Array.from({ length: 34 }, (_, i) => [`b${i}`, 'x'.repeat(30_000)]));

  it('PUT, PATCH and DELETE at the cap: past it is refused whole, naming the figures; UTF-8 bytes count', async () => {
    const u = await user();
    const expected = nearlyFull();
    await accepted(() => patch(u, JSON.stringify(expected)), u.id, expected);
    const room = CAP - kvBytes(expected);
    expected.top = 'y'.repeat(room - 'top'.length);
    await accepted(() => put(u, 'top', expected.top as string), u.id, expected);
    expect(kvBytes(expected)).toBe(CAP);

    expect(await refused(u, () => put(u, 'z', ''), 400, 'kv_limit_exceeded')).toBe(capMessage(CAP + 1));
    // As many characters as the stored value, one of them two bytes long.
    const wider = `${'y'.repeat(room - 'top'.length - 1)}é`;
    expect(await refused(u, () => put(u, 'top', wider), 400, 'kv_limit_exceeded')).toBe(capMessage(CAP + 1));
    const grows = JSON.stringify({ b0: 'x'.repeat(29_999), new: '' });
    expect(await refused(u, () => patch(u, grows), 400, 'kv_limit_exceeded')).toBe(capMessage(CAP + 2));

    Object.assign(expected, { b0: 'x'.repeat(29_990), n: 'v' });
    await accepted(() => patch(u, JSON.stringify({ b0: expected.b0, n: 'v' })), u.id, expected);
    expected.n = 'v'.repeat(9);
    await accepted(() => put(u, 'n', 'v'.repeat(9)), u.id, expected);
    expect(kvBytes(expected)).toBe(CAP);
    const top = expected.top as string;
    delete expected.top;
    await accepted(() => del(u, 'top'), u.id, expected);
    expected.top = top;
    await accepted(() => put(u, 'top', top), u.id, expected);
  });

  it('a user already past the cap keeps their KV and may shrink it, never grow it', async () => {
    const u = await user();
    const expected = nearlyFull();
    for (let i = 34; i < 40; i++) expected[`b${i}`] = 'x'.repeat(30_000);
    const written = await h.app.store.kv.writeKv(
      u.id,
      { set: new Map(Object.entries(expected)), delete: [] },
      { ...KV_LIMITS, maxBytes: 2 * CAP },
    );
    expect(written).toMatchObject({ revision: 1 });
    const over = kvBytes(expected);
    expect(over).toBeGreaterThan(CAP);

    expect(await refused(u, () => put(u, 'more', 'v'), 400, 'kv_limit_exceeded')).toBe(capMessage(over + 5));
    expected.b1 = 'y'.repeat(30_000);
    await accepted(() => put(u, 'b1', 'y'.repeat(30_000)), u.id, expected);
    expected.b2 = 'x'.repeat(100);
    await accepted(() => patch(u, JSON.stringify({ b2: 'x'.repeat(100) })), u.id, expected);
    delete expected.b3;
    await accepted(() => del(u, 'b3'), u.id, expected);
    expect(kvBytes(expected)).toBeGreaterThan(CAP);
  });
});

describe('writes that change nothing', () => {
  it('are answered 204 and announce nothing: a later write is the next one seen', async () => {
    const u = await user();
    const seen: BusMessages['kv.changed'][] = [];
    const unsubscribe = h.app.bus.subscribe('kv.changed', (message) => {
      if (message.userId === u.id) seen.push(message);
    });
    try {
      await accepted(() => put(u, 'a', '1'), u.id, { a: '1' });
      await accepted(() => put(u, 'a', '1'), u.id, { a: '1' });
      await accepted(() => patch(u, '{"a":"1"}'), u.id, { a: '1' });
      await accepted(() => del(u, 'missing'), u.id, { a: '1' });
      expect(await stored(u.id)).toEqual({ kv: { a: '1' }, revision: 1 });
      await accepted(() => put(u, 'b', '2'), u.id, { a: '1', b: '2' });
      expect(seen.map(({ set, delete: deleted, revision }) => ({ set, delete: deleted, revision }))).toEqual([
        { set: [['a', '1']], delete: [], revision: 1 },
        { set: [['b', '2']], delete: [], revision: 2 },
      ]);
    } finally {
      unsubscribe();
    }
  });
});

describe('a PATCH of 80,000 keys', () => {
  it('is refused as too many keys, before any name or value is looked at, and writes nothing', async () => {
    const u = await user();
    const body = manyKeys(80_000, { 'bad-key': 5 });
    const message = await refused(u, () => patch(u, body), 400, 'kv_limit_exceeded');
    expect(message).toBe('this write sets 80,001 keys; the limit is 512');
    expect(await stored(u.id)).toEqual({ kv: {}, revision: 0 });
  });

  it.skipIf(!hasRedis)('is refused on Redis too (an API node), and writes nothing', async () => {
    const prefix = uniquePrefix();
    const app = await startApiNode(prefix, { RATE_LIMIT_WRITE: '0' });
    const redis = new Redis(REDIS_TEST_URL);
    try {
      const id = String(nextUser++);
      const response = await fetch(`${app.url}/v1/users/@me/kv`, {
        method: 'PATCH',
        headers: { authorization: await insertApiKey(app.store, id), 'content-type': 'application/json' },
        body: manyKeys(80_000),
      });
      expect(await expectError(response, 400, 'kv_limit_exceeded')).toBe(
        'this write sets 80,000 keys; the limit is 512',
      );
      expect(await app.store.kv.getKv(id)).toEqual({ kv: {}, revision: 0 });
    } finally {
      await app.close();
      await dropPrefix(redis, prefix);
      redis.disconnect();
    }
  });
});

describe('413 payload_too_large', () => {
  it('PUT: a body over 128 KiB', async () => {
    const u = await user();
    await accepted(() => put(u, 'kept', 'v'), u.id, { kept: 'v' });
    await refused(u, () => put(u, 'big', 'x'.repeat(128 * KIB + 1)), 413, 'payload_too_large');
    await refused(u, () => put(u, 'big', 'x'.repeat(512 * KIB)), 413, 'payload_too_large');
    // At the cap the body is read: the value is then too long, which is another error.
    await refused(u, () => put(u, 'big', 'x'.repeat(128 * KIB)), 400, 'invalid_kv_value');
  });

  it('PATCH: a body over 1 MiB; just under it is read', async () => {
    const u = await user();
    const chunk = 'y'.repeat(25_000);
    const under = Object.fromEntries(Array.from({ length: 41 }, (_, i) => [`c${i}`, chunk]));
    const underBody = JSON.stringify(under);
    expect(Buffer.byteLength(underBody)).toBeLessThanOrEqual(1024 * KIB);
    await accepted(() => patch(u, underBody), u.id, under);

    const over = JSON.stringify({ ...under, more: 'z'.repeat(1024 * KIB - underBody.length) });
    expect(Buffer.byteLength(over)).toBeGreaterThan(1024 * KIB);
    await refused(u, () => patch(u, over), 413, 'payload_too_large');
  });
});

describe('415 unsupported_media_type', () => {
  it('PATCH with a content type that is neither JSON nor text', async () => {
    const u = await user();
    for (const type of [
      'application/xml',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'image/png',
    ]) {
      await refused(u, () => patch(u, '{"a":"b"}', { type }), 415, 'unsupported_media_type', type);
    }
  });

  it('PATCH with JSON sent as text/plain or application/*+json is accepted', async () => {
    const u = await user();
    await accepted(() => patch(u, '{"a":"1"}', { type: 'text/plain' }), u.id, { a: '1' });
    await accepted(() => patch(u, '{"b":"2"}', { type: 'application/merge-patch+json' }), u.id, {
      a: '1',
      b: '2',
    });
    await accepted(() => patch(u, '{"c":"3"}', { type: 'Application/JSON' }), u.id, {
      a: '1',
      b: '2',
      c: '3',
    });
  });

  it('PATCH with a charset parameter on JSON or text (what fetch and browsers send) is accepted', async () => {
    const u = await user();
    await accepted(() => patch(u, '{"a":"1"}', { type: 'application/json; charset=utf-8' }), u.id, {
      a: '1',
    });
    await accepted(() => patch(u, '{"b":"2"}', { type: 'text/plain;charset=UTF-8' }), u.id, {
      a: '1',
      b: '2',
    });
    // fetch's default for a string body is text/plain;charset=UTF-8.
    await accepted(() => call('PATCH', '/v1/users/@me/kv', { key: u.key, body: '{"c":"3"}' }), u.id, {
      a: '1',
      b: '2',
      c: '3',
    });
  });
});

describe('accepted writes', () => {
  it('DELETE of a key that does not exist is 204', async () => {
    const u = await user();
    await accepted(() => del(u, 'never_set'), u.id, {});
    await accepted(() => put(u, 'a', '1'), u.id, { a: '1' });
    await accepted(() => del(u, 'never_set'), u.id, { a: '1' });
  });

  it('@me and the own id work on PUT, PATCH and DELETE; bare and Bearer', async () => {
    const u = await user();
    const bearer = `Bearer ${u.key}`;
    await accepted(() => call('PUT', '/v1/users/@me/kv/a', { key: u.key, body: '1' }), u.id, { a: '1' });
    await accepted(() => call('PUT', `/v1/users/${u.id}/kv/b`, { authorization: bearer, body: '2' }), u.id, {
      a: '1',
      b: '2',
    });
    await accepted(
      () =>
        call('PATCH', '/v1/users/@me/kv', {
          authorization: bearer,
          body: '{"c":"3"}',
          type: 'application/json',
        }),
      u.id,
      { a: '1', b: '2', c: '3' },
    );
    await accepted(
      () =>
        call('PATCH', `/v1/users/${u.id}/kv`, { key: u.key, body: '{"a":"x"}', type: 'application/json' }),
      u.id,
      { a: 'x', b: '2', c: '3' },
    );
    await accepted(() => call('DELETE', '/v1/users/@me/kv/a', { authorization: bearer }), u.id, {
      b: '2',
      c: '3',
    });
    await accepted(() => call('DELETE', `/v1/users/${u.id}/kv/b`, { key: u.key }), u.id, { c: '3' });
    await accepted(
      () => call('PUT', '/v1/users/@me/kv/d', { authorization: `  bearer   ${u.key}  `, body: '4' }),
      u.id,
      { c: '3', d: '4' },
    );
  });

  it('PUT stores the raw body whatever the content type, or none; an empty body stores ""', async () => {
    const u = await user();
    const expected: Kv = {};
    const cases: [string, string | Uint8Array, string | null, string][] = [
      ['json', '{"not":"parsed"}', 'application/json', '{"not":"parsed"}'],
      ['text', 'plain text\nwith lines', 'text/plain; charset=utf-8', 'plain text\nwith lines'],
      ['form', 'a=1&b=2', 'application/x-www-form-urlencoded', 'a=1&b=2'],
      ['xml', '<a>b</a>', 'application/xml', '<a>b</a>'],
      ['octets', new Uint8Array(Buffer.from('café 😀')), 'application/octet-stream', 'café 😀'],
      ['untyped', new Uint8Array(Buffer.from('no content type')), null, 'no content type'],
      ['spaces', '  padded  ', 'text/plain', '  padded  '],
      ['empty', '', 'text/plain', ''],
    ];
    for (const [name, body, type, value] of cases) {
      expected[name] = value;
      await accepted(() => put(u, name, body, { type }), u.id, expected);
    }
    expected.bare = '';
    await accepted(() => call('PUT', '/v1/users/@me/kv/bare', { key: u.key }), u.id, expected);
  });

  it('every accepted write shows in the next presence read', async () => {
    const u = await user();
    const expected: Kv = {};
    for (let i = 0; i < 20; i++) {
      if (i % 3 === 0) {
        const change = { [`p${i}`]: `patched ${i}`, shared: `${i}` };
        Object.assign(expected, change);
        await accepted(() => patch(u, JSON.stringify(change)), u.id, expected);
      } else if (i % 3 === 1) {
        expected[`s${i}`] = `put ${i}`;
        await accepted(() => put(u, `s${i}`, `put ${i}`), u.id, expected);
      } else {
        delete expected[`s${i - 1}`];
        await accepted(() => del(u, `s${i - 1}`), u.id, expected);
      }
    }
  });
});

describe('__proto__ and friends', () => {
  it('are plain keys via PATCH and PUT, read back in the presence, with no pollution', async () => {
    const u = await user();
    await accepted(() => patch(u, '{"__proto__":"from patch","constructor":"c","toString":"t"}'), u.id, {
      ['__proto__']: 'from patch',
      constructor: 'c',
      toString: 't',
    } as Kv);
    const response = await fetch(`${h.base}/v1/users/${u.id}`);
    const text = await response.text();
    expect(text).toContain('"__proto__":"from patch"');
    const kv = (JSON.parse(text) as { data: { kv: Kv } }).data.kv;
    expect(Object.hasOwn(kv, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(kv, '__proto__')?.value).toBe('from patch');
    expect(Object.getPrototypeOf(kv)).toBe(Object.prototype);

    await expect204(await put(u, '__proto__', 'from put'));
    const after = (await stored(u.id)).kv;
    expect(Object.getOwnPropertyDescriptor(after, '__proto__')?.value).toBe('from put');
    expect(await (await fetch(`${h.base}/v1/users/${u.id}`)).text()).toContain('"__proto__":"from put"');

    await refused(u, () => patch(u, '{"__proto__":{"polluted":"yes"}}'), 400, 'invalid_kv_value');
    await refused(
      u,
      () => patch(u, '{"constructor":{"prototype":{"polluted":"yes"}}}'),
      400,
      'invalid_kv_value',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);

    await accepted(() => del(u, '__proto__'), u.id, { constructor: 'c', toString: 't' });
  });
});

describe('CORS', () => {
  it('a preflight for PATCH with authorization echoes it', async () => {
    for (const path of ['/v1/users/@me/kv', '/v1/users/@me/kv/x']) {
      const response = await fetch(`${h.base}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://example.com',
          'access-control-request-method': path.endsWith('kv') ? 'PATCH' : 'PUT',
          'access-control-request-headers': 'authorization, content-type',
        },
      });
      expect(response.status).toBeLessThan(300);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      const allowed = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase();
      expect(allowed).toContain('authorization');
      expect(allowed).toContain('content-type');
      const methods = response.headers.get('access-control-allow-methods') ?? '';
      for (const method of ['PUT', 'PATCH', 'DELETE']) expect(methods).toContain(method);
    }
  });

  it('answers a malformed key in the URL in the envelope, with CORS like every other error', async () => {
    const u = await user();
    // A broken percent-encoding fails in the router, before any route hook runs.
    await refused(u, () => put(u, '%E0%A4%A', 'v'), 400, 'bad_request');
    await refused(u, () => del(u, '%zz'), 400, 'bad_request');
  });

  it('answers writes with Access-Control-Allow-Origin: *', async () => {
    const u = await user();
    const response = await put(u, 'a', '1', { type: 'text/plain' });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('bodies are read only by the routes that take one', () => {
  /** Deeply nested, so parsing it would cost; not a valid JSON object of strings either way. */
  const nested = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;

  it('a POST with a JSON body to a route that does not exist is a 404, the body never parsed', async () => {
    for (const body of [nested, '{not json']) {
      const response = await call('POST', '/v1/users/@me/nothing-here', { body, type: 'application/json' });
      expect((await expectError(response, 404, 'not_found')).startsWith('no route for POST')).toBe(true);
    }
  });

  it('DELETE ignores a body: a keyless one is refused for its key, a keyed one deletes', async () => {
    const u = await user();
    await expect204(await put(u, 'gone', 'soon'));
    await expectError(
      await del(u, 'gone', { key: null, body: nested, type: 'application/json' }),
      401,
      'invalid_api_key',
    );
    await accepted(() => del(u, 'gone', { body: '{not json', type: 'application/json' }), u.id, {});
  });

  it('a GET route answers as usual whatever body comes with a POST to it', async () => {
    const u = await user();
    const response = await call('POST', `/v1/users/${u.id}`, { body: '{not json', type: 'application/json' });
    await expectError(response, 404, 'not_found');
  });
});
