import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateApiKey } from '../../src/keys/api-key.js';
import { generateReadToken, hashReadToken, READ_TOKENS_PER_USER } from '../../src/keys/read-token.js';
import { createLogger } from '../../src/log.js';
import { customStatusActivity } from '../../src/simulator/activities.js';
import { SseReader } from '../sse/reader.js';
import { insertApiKey } from '../support/api-key.js';
import { comparableHeaders } from '../support/comparable-headers.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Read tokens through the service as it runs: made, listed and removed with the owner's key, within their
 * limit; then used to read a private user (REST, card, event stream, history) in both forms, by its owner
 * only, stopping the moment it is removed, and answered as no token at all whenever it does not read the
 * user. The app logs at `trace` into memory, and no token may be in what it wrote.
 */

const GUILD = '520000000000000001';
const NOVA = '520000000000000101';
const MIRA = '520000000000000102';
const KAI = '520000000000000103';
const UNKNOWN = '520000000000000199';
const STATUS = 'NOVA-ONLY-STATUS';
const PATH = '/v1/users/@me/read-tokens';

const lines: string[] = [];
const logs = () => lines.join('');
/** Every token the service handed out, and every one a test made up. */
const tokens = new Set<string>();
const streams = new Set<SseReader>();
let h: Harness;
let novaKey: string;
let miraKey: string;

beforeAll(async () => {
  h = await startHarness({
    logger: createLogger('trace', false, { write: (line: string) => void lines.push(line) }),
    // A keep-alive every 200 ms: the owner's streams are checked again as often.
    sse: { keepAliveMs: 200 },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Tokens',
        members: [
          {
            user: { id: NOVA, username: 'nova', global_name: 'Nova', avatar: null },
            presence: { status: 'online', activities: [customStatusActivity({ text: STATUS })] },
          },
          {
            user: { id: MIRA, username: 'mira', global_name: 'Mira', avatar: null },
            presence: { status: 'idle' },
          },
          {
            user: { id: KAI, username: 'kai', global_name: 'Kai', avatar: null },
            presence: { status: 'dnd' },
          },
        ],
      }),
  });
  await eventually(() => expect(h.app.view.get(KAI)).toBeDefined());
  novaKey = await insertApiKey(h.app.store, NOVA);
  miraKey = await insertApiKey(h.app.store, MIRA);
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  await h?.close();
});

const post = (authorization: string | null, body?: string, type = 'application/json') =>
  fetch(`${h.base}${PATH}`, {
    method: 'POST',
    headers: {
      ...(authorization === null ? {} : { authorization }),
      ...(body === undefined ? {} : { 'content-type': type }),
    },
    ...(body === undefined ? {} : { body }),
  });
const list = (authorization: string) => fetch(`${h.base}${PATH}`, { headers: { authorization } });
const remove = (authorization: string, id: string) =>
  fetch(`${h.base}${PATH}/${id}`, { method: 'DELETE', headers: { authorization } });
const codeOf = async (response: Response) =>
  ((await response.json()) as { error: { code: string } }).error.code;

interface Made {
  id: string;
  token: string;
  label: string | null;
  created_at: number;
}

async function make(key: string, label?: string): Promise<Made> {
  const response = await post(key, label === undefined ? undefined : JSON.stringify({ label }));
  expect(response.status).toBe(201);
  const { data } = (await response.json()) as { data: Made };
  tokens.add(data.token);
  return data;
}

async function setVisibility(key: string, visibility: 'public' | 'private') {
  const response = await fetch(`${h.base}/v1/users/@me/privacy`, {
    method: 'PATCH',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: JSON.stringify({ visibility }),
  });
  expect(response.status).toBe(200);
}

/** An answer whole: status, the headers a client can compare, and the body. */
async function answer(path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${h.base}${path}`, { headers });
  return {
    status: response.status,
    headers: comparableHeaders(response),
    body: Buffer.from(await response.arrayBuffer()).toString('latin1'),
  };
}

async function stream(path: string, headers: Record<string, string> = {}) {
  const reader = await SseReader.connect(h.base, path, headers);
  streams.add(reader);
  return reader;
}

describe('making, listing and removing read tokens', () => {
  it('makes a token with the key alone, shown once, with an id, a label and when it was made', async () => {
    expect(await codeOf(await post(null, '{}'))).toBe('invalid_api_key');
    const response = await post(novaKey, JSON.stringify({ label: '  README card ✓ 🎧  ' }));
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const { data } = (await response.json()) as { data: Made };
    tokens.add(data.token);
    expect(data).toEqual({
      id: expect.stringMatching(/^rt_[A-Za-z0-9_-]{16}$/),
      token: expect.stringMatching(/^prt_[A-Za-z0-9_-]{43}$/),
      label: 'README card ✓ 🎧',
      created_at: expect.any(Number),
    });
    // No body: no label.
    expect((await make(novaKey)).label).toBeNull();
    // A token is no key: it makes no tokens, and reads no `@me`.
    expect(await codeOf(await post(`Bearer ${data.token}`))).toBe('invalid_api_key');
    const me = await fetch(`${h.base}/v1/users/@me`, { headers: { authorization: `Bearer ${data.token}` } });
    expect(me.status).toBe(401);
    for (const made of (await listOf(novaKey)).read_tokens)
      expect((await remove(novaKey, made.id)).status).toBe(204);
  });

  it('refuses a body that is not `{label}` with a label of plain text, making nothing', async () => {
    for (const body of [
      JSON.stringify({ label: 'x'.repeat(65) }),
      JSON.stringify({ label: 'two\nlines' }),
      JSON.stringify({ label: 'right\u202eleft' }),
      JSON.stringify({ label: 7 }),
      JSON.stringify({ label: 'ok', scope: 'all' }),
      JSON.stringify(['label']),
      '{"label":',
    ]) {
      const response = await post(novaKey, body);
      expect(response.status, body).toBe(400);
      expect(await codeOf(response)).toBe('invalid_read_token');
    }
    expect((await post(novaKey, 'label=x', 'text/plain')).status).toBe(415);
    expect((await post(novaKey, JSON.stringify({ label: 'x'.repeat(2000) }))).status).toBe(413);
    // 64 characters, emoji counted once each, are taken.
    const longest = await make(novaKey, '🎧'.repeat(64));
    expect(longest.label).toBe('🎧'.repeat(64));
    expect((await listOf(novaKey)).read_tokens).toHaveLength(1);
    expect((await remove(novaKey, longest.id)).status).toBe(204);
  });

  it(`keeps at most ${READ_TOKENS_PER_USER} per user, listed without the tokens or their hashes`, async () => {
    const made: Made[] = [];
    for (let n = 0; n < READ_TOKENS_PER_USER; n++) made.push(await make(novaKey, `token ${n}`));
    const refused = await post(novaKey, JSON.stringify({ label: 'one too many' }));
    expect(refused.status).toBe(409);
    expect(await codeOf(refused)).toBe('read_token_limit_exceeded');
    // Mira's limit is her own.
    const hers = await make(miraKey);

    const response = await list(novaKey);
    expect(response.status).toBe(200);
    const text = await response.text();
    const { data } = JSON.parse(text) as { data: Awaited<ReturnType<typeof listOf>> };
    expect(data.limit).toBe(READ_TOKENS_PER_USER);
    expect(data.read_tokens).toEqual(made.map(({ id, label, created_at }) => ({ id, label, created_at })));
    for (const { token } of made) {
      const hash = hashReadToken(token);
      for (const shown of [token, hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')])
        expect(text).not.toContain(shown);
    }
    expect(text).not.toContain('prt_');
    expect(text).not.toContain(hers.id);
    // The export lists them as the list does.
    const exported = await fetch(`${h.base}/v1/users/@me/export`, { headers: { authorization: novaKey } });
    const document = await exported.text();
    expect(JSON.parse(document).data.read_tokens).toEqual(data.read_tokens);
    expect(document).not.toContain('prt_');

    // Removing one makes room for another.
    expect((await remove(novaKey, made[0]?.id as string)).status).toBe(204);
    await make(novaKey, 'in its place');
    for (const { id } of (await listOf(novaKey)).read_tokens) await remove(novaKey, id);
    await remove(miraKey, hers.id);
  });

  it("answers 404 for an id the user has none of, another user's included, removing nothing", async () => {
    const hers = await make(miraKey, 'hers');
    for (const id of ['rt_0000000000000000', hers.id, 'not-an-id']) {
      const response = await remove(novaKey, id);
      expect(response.status, id).toBe(404);
      expect(await codeOf(response)).toBe('read_token_not_found');
    }
    expect((await listOf(miraKey)).read_tokens.map((token) => token.id)).toEqual([hers.id]);
    expect((await remove(miraKey, hers.id)).status).toBe(204);
    expect((await remove(miraKey, hers.id)).status).toBe(404);
  });
});

async function listOf(key: string) {
  const response = await list(key);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { read_tokens: Omit<Made, 'token'>[]; limit: number } }).data;
}

describe('reading a private user with a read token', () => {
  let token: string;
  let tokenId: string;
  let miraToken: string;

  beforeAll(async () => {
    ({ token, id: tokenId } = await make(novaKey, 'for the page'));
    miraToken = (await make(miraKey)).token;
    await setVisibility(novaKey, 'private');
    await setVisibility(miraKey, 'private');
  });
  afterAll(async () => {
    await setVisibility(novaKey, 'public');
    await setVisibility(miraKey, 'public');
  });

  it('reads the presence with the token, as a query or a bearer, or with the key, and kept by no cache', async () => {
    for (const [path, headers] of [
      [`/v1/users/${NOVA}?token=${token}`, {}],
      [`/v1/users/${NOVA}`, { authorization: `Bearer ${token}` }],
      [`/v1/users/${NOVA}`, { authorization: novaKey }],
    ] as const) {
      const read = await answer(path, headers);
      expect(read.status, path).toBe(200);
      expect(read.headers['cache-control']).toBe('private, no-store');
      expect(JSON.parse(read.body).data).toMatchObject({ discord_user: { id: NOVA } });
      expect(read.body).toContain(STATUS);
    }
    // A public user read with a token is read as anyone reads them, from the fast path.
    const kai = await answer(`/v1/users/${KAI}?token=${token}`);
    expect(kai.status).toBe(200);
    expect(kai.headers['cache-control']).toBeUndefined();
  });

  it('answers any token that does not read the user exactly as no token, and as an unknown id', async () => {
    const none = await answer(`/v1/users/${NOVA}`);
    expect(none.status).toBe(404);
    const made = generateReadToken();
    tokens.add(made);
    for (const [path, headers] of [
      [`/v1/users/${NOVA}?token=${made}`, {}],
      [`/v1/users/${NOVA}`, { authorization: `Bearer ${made}` }],
      [`/v1/users/${NOVA}?token=${miraToken}`, {}],
      [`/v1/users/${NOVA}`, { authorization: `Bearer ${miraToken}` }],
      [`/v1/users/${NOVA}`, { authorization: miraKey }],
      [`/v1/users/${NOVA}`, { authorization: generateApiKey() }],
      [`/v1/users/${NOVA}?token=prt_short`, {}],
      [`/v1/users/${NOVA}?token=${novaKey}`, {}],
      [`/v1/users/${NOVA}?token=${token}&token=${token}`, {}],
    ] as const) {
      expect(await answer(path, headers), path).toEqual(none);
    }
    // Nova's token reads Mira no more than anyone does.
    const miraNone = await answer(`/v1/users/${MIRA}`);
    expect(await answer(`/v1/users/${MIRA}?token=${token}`)).toEqual(miraNone);
    const unknown = await answer(`/v1/users/${UNKNOWN}?token=${token}`);
    const strip = (read: typeof none, id: string) => ({ ...read, body: read.body.replaceAll(id, 'ID') });
    expect(strip(none, NOVA)).toEqual(strip(unknown, UNKNOWN));
  });

  it('draws the card with the token, kept by no cache, and the not-monitored card without it', async () => {
    const own = await answer(`/v1/users/${NOVA}/card.svg?token=${token}`);
    expect(own.status).toBe(200);
    expect(own.headers['cache-control']).toBe('private, no-store');
    expect(own.body).toContain('Nova');
    const none = await answer(`/v1/users/${NOVA}/card.svg`);
    expect(none.headers['cache-control']).toBe('no-cache');
    expect(none.body).not.toContain('Nova');
    expect(none.body).toContain('Not monitored');
    // Drawn in the same second as the owner's: the cache gives anyone else the card anyone gets.
    expect(await answer(`/v1/users/${NOVA}/card.svg?token=${miraToken}`)).toEqual(none);
    const png = await fetch(`${h.base}/v1/users/${NOVA}/card.png?token=${token}`);
    expect(png.status).toBe(200);
    expect(png.headers.get('cache-control')).toBe('private, no-store');
    await png.arrayBuffer();
  });

  it('reads history, stats and top tracks with the token', async () => {
    await eventually(async () => {
      const stats = await answer(`/v1/users/${NOVA}/stats`, { authorization: `Bearer ${token}` });
      expect(stats.headers['cache-control']).toBe('private, no-store');
      expect(JSON.parse(stats.body).data).toMatchObject({ is_monitored: true, current_status: 'online' });
    });
    const history = JSON.parse((await answer(`/v1/users/${NOVA}/history?token=${token}`)).body);
    expect(history.data.status_history.length).toBeGreaterThan(0);
    expect((await answer(`/v1/users/${NOVA}/top-tracks?token=${token}`)).status).toBe(200);
    // Without it, or with Mira's: an unknown id's answers.
    for (const path of ['history', 'stats', 'top-tracks']) {
      const none = await answer(`/v1/users/${NOVA}/${path}`);
      expect(none.headers['cache-control']).toBeUndefined();
      expect(await answer(`/v1/users/${NOVA}/${path}?token=${miraToken}`)).toEqual(none);
      const unknown = await answer(`/v1/users/${UNKNOWN}/${path}`);
      expect(none.body).toBe(unknown.body);
    }
    expect(JSON.parse((await answer(`/v1/users/${NOVA}/stats`)).body).data.is_monitored).toBe(false);
  });

  it("streams the user's changes to a stream opened with the token, and to no other", async () => {
    const reader = await stream(`/v1/users/${NOVA}/events?token=${token}`);
    expect(reader.status).toBe(200);
    expect(reader.headers['cache-control']).toBe('private, no-store');
    const [first] = await reader.eventCount(1);
    expect(JSON.parse(first?.data ?? '{}')).toMatchObject({ user_id: NOVA, discord_status: 'online' });
    expect(first?.id).toBeUndefined();
    // A public stream of Nova and Kai hears Kai only.
    const everyone = await stream(`/v1/events?ids=${NOVA},${KAI}`);
    await everyone.eventCount(1);

    h.simulator.setPresence(NOVA, { status: 'dnd', activities: [customStatusActivity({ text: STATUS })] });
    await reader.until((event) => JSON.parse(event.data).discord_status === 'dnd');
    h.simulator.setPresence(KAI, { status: 'online' });
    await everyone.until((event) => JSON.parse(event.data).discord_status === 'online', 1);
    expect(everyone.presences().map((presence) => presence.user_id)).not.toContain(NOVA);
    expect(everyone.body).not.toContain(STATUS);

    for (const path of [`/v1/users/${NOVA}/events`, `/v1/users/${NOVA}/events?token=${miraToken}`]) {
      const refused = await stream(path);
      expect(refused.status, path).toBe(404);
    }
    // With the key, for a client that sends headers.
    const keyed = await stream(`/v1/users/${NOVA}/events`, { authorization: novaKey });
    expect(keyed.status).toBe(200);
    await keyed.eventCount(1);
    keyed.close();
    reader.close();
    everyone.close();
  });

  it('stops working the moment it is removed: reads, and the streams it opened', async () => {
    const reader = await stream(`/v1/users/${NOVA}/events?token=${token}`);
    await reader.eventCount(1);
    const keyed = await stream(`/v1/users/${NOVA}/events`, { authorization: novaKey });
    await keyed.eventCount(1);
    const none = await answer(`/v1/users/${NOVA}`);
    expect((await remove(novaKey, tokenId)).status).toBe(204);
    expect(await answer(`/v1/users/${NOVA}?token=${token}`)).toEqual(none);
    expect(await answer(`/v1/users/${NOVA}/card.svg?token=${token}`)).toEqual(
      await answer(`/v1/users/${NOVA}/card.svg`),
    );
    await reader.waitFor(() => reader.ended, 'the stream of the removed token to end');
    expect((await stream(`/v1/users/${NOVA}/events?token=${token}`)).status).toBe(404);
    // The key's stream is not the token's.
    expect(keyed.ended).toBe(false);

    // A new key for Nova: the stream the old one opened ends at its next keep-alive.
    novaKey = await insertApiKey(h.app.store, NOVA);
    await keyed.waitFor(() => keyed.ended, 'the stream of the replaced key to end');
  });

  it('answers as to anyone when the token cannot be checked', async () => {
    const { token: fresh } = await make(novaKey);
    const none = await answer(`/v1/users/${NOVA}`);
    const find = vi
      .spyOn(h.app.store.readTokens, 'findReadToken')
      .mockRejectedValueOnce(new Error('SQLITE_BUSY: database is locked'));
    expect(await answer(`/v1/users/${NOVA}?token=${fresh}`)).toEqual(none);
    find.mockRestore();
    expect(logs()).toContain('could not check a key or read token');
    expect((await answer(`/v1/users/${NOVA}?token=${fresh}`)).status).toBe(200);
  });
});

describe('logs', () => {
  it('hold no read token, whatever was asked with one', async () => {
    const failing = vi
      .spyOn(h.app.store.readTokens, 'addReadToken')
      .mockRejectedValueOnce(new Error('SQLITE_BUSY: database is locked'));
    expect((await post(novaKey, '{}')).status).toBe(500);
    failing.mockRestore();
    // A request Fastify refuses for its URL, a token in it.
    const [someToken] = tokens;
    expect((await fetch(`${h.base}/v1/users/%E0%A4%A?token=${someToken}`)).status).toBe(400);
    const text = logs();
    expect(text).toContain('request failed');
    expect(text).toContain('could not check a key or read token');
    expect(tokens.size).toBeGreaterThan(READ_TOKENS_PER_USER);
    for (const token of tokens) expect(text).not.toContain(token);
    expect(text.match(/prt_[A-Za-z0-9_-]{43}/g) ?? []).toEqual([]);
  });
});
