import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_BULK_IDS } from '../../src/http/bulk-read.js';
import {
  ALICE,
  BOB,
  ERIN,
  GUILD_A,
  joinWithKv,
  largeKv,
  NOBODY,
  type PresenceData,
  seededHarness,
} from '../socket/fixture.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { inOneReadWindow } from '../support/read-window.js';

/**
 * `GET /v1/users?ids=a,b,c`: up to 50 presences in one envelope, each the bytes `GET /v1/users/:id` answers,
 * unmonitored ids left out; refused at once when the list is wrong; one read of the budget per id.
 */

const ENVELOPE_HEAD = '{"success":true,"data":';
/** Monitored besides the fixture's users, so a read of 50 ids finds most of them. */
const CROWD = Array.from({ length: 40 }, (_, n) => `9000000000000${String(n).padStart(4, '0')}`);
/** Valid ids nobody shares a server with. */
const STRANGERS = Array.from({ length: 10 }, (_, n) => `7000000000000${String(n).padStart(4, '0')}`);

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function get(url: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(url, init);
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The presence JSON of `GET /v1/users/:id`, as the bytes it answered (the envelope taken off). */
async function singleJson(base: string, id: string): Promise<string> {
  const { status, text } = await get(`${base}/v1/users/${id}`);
  expect(status, id).toBe(200);
  return text.slice(ENVELOPE_HEAD.length, -1);
}

async function expectRefused(base: string, query: string, message: RegExp): Promise<void> {
  const { status, headers, text } = await get(`${base}/v1/users${query}`);
  expect(status, query).toBe(400);
  expect(headers.get('content-type')).toBe('application/json; charset=utf-8');
  const body = JSON.parse(text) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe('invalid_query');
  expect(body.error.message).toMatch(message);
}

describe('GET /v1/users?ids=', () => {
  const service = seededHarness();
  const url = (path: string) => `${service().base}${path}`;

  beforeAll(async () => {
    const h = service();
    for (const [n, id] of CROWD.entries()) {
      h.simulator.addMember(GUILD_A, {
        user: { id, username: `crowd${n}` },
        presence: { status: n % 2 === 0 ? 'online' : 'idle', activities: [] },
      });
    }
    await eventually(() => {
      for (const id of CROWD) if (!h.app.registry.isMonitored(id)) throw new Error(`${id} not monitored yet`);
    });
  });

  it('answers 50 ids, strangers among them, in one envelope of the bytes each single read answers', async () => {
    // The monitored in an order of their own, a stranger before every fourth.
    const monitored = [ERIN, ...CROWD.slice(0, 37).reverse(), ALICE, BOB];
    const ids = monitored.flatMap((id, n) => (n % 4 === 0 ? [STRANGERS[n / 4] as string, id] : [id]));
    expect(new Set(ids).size).toBe(MAX_BULK_IDS);

    const answer = await get(url(`/v1/users?ids=${ids.join(',')}`));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(Number(answer.headers.get('content-length'))).toBe(Buffer.byteLength(answer.text));

    const found = ids.filter((id) => !STRANGERS.includes(id));
    const parts = await Promise.all(
      found.map(async (id) => `"${id}":${await singleJson(service().base, id)}`),
    );
    expect(answer.text).toBe(`${ENVELOPE_HEAD}{${parts.join(',')}}}`);
    const body = JSON.parse(answer.text) as { data: Record<string, PresenceData> };
    expect(Object.keys(body.data)).toEqual(found);
  });

  it('counts an id asked twice once, and answers {} when nobody asked is monitored', async () => {
    const ids = [...CROWD, ...STRANGERS];
    expect(ids).toHaveLength(MAX_BULK_IDS);
    const twice = await get(url(`/v1/users?ids=${[...ids, ...ids].join(',')}`));
    expect(twice.status, twice.text).toBe(200);
    const body = JSON.parse(twice.text) as { data: Record<string, PresenceData> };
    expect(Object.keys(body.data)).toEqual(CROWD);
    await expectRefused(service().base, `?ids=${[...ids, ALICE].join(',')}`, /more than 50 distinct/);

    const nobody = await get(url(`/v1/users?ids=${NOBODY},${STRANGERS[0]}`));
    expect(nobody.status).toBe(200);
    expect(nobody.text).toBe('{"success":true,"data":{}}');
  });

  it('refuses a list that is missing, empty, too long, or holds an empty item or a bad id, saying which', async () => {
    const base = service().base;
    await expectRefused(base, '', /ids is required/);
    await expectRefused(base, '?ids=', /ids is required/);
    await expectRefused(base, `?ids=${ALICE},,${BOB}`, /empty item at position 2/);
    await expectRefused(base, `?ids=${ALICE},`, /empty item at position 2/);
    await expectRefused(base, `?ids=,${ALICE}`, /empty item at position 1/);
    await expectRefused(base, `?ids=${ALICE},abc`, /item 2, "abc", is not a Discord user id/);
    await expectRefused(base, `?ids=${ALICE},18446744073709551616`, /is not a Discord user id/);
    const many = Array.from({ length: MAX_BULK_IDS + 1 }, (_, n) => `${800000000000000 + n}`);
    await expectRefused(base, `?ids=${many.join(',')}`, /more than 50 distinct/);
  });

  it('answers a HEAD with the length and no body', async () => {
    const ids = `${ALICE},${NOBODY},${BOB}`;
    const full = await get(url(`/v1/users?ids=${ids}`));
    const head = await get(url(`/v1/users?ids=${ids}`), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(full.text)));
    expect(head.headers.get('etag')).toBe(full.headers.get('etag'));
  });
});

describe('a bulk read of presences with KVs of a megabyte', () => {
  const service = seededHarness();
  const url = (path: string) => `${service().base}${path}`;
  const LARGE = [
    { id: '90000000000000301', username: 'large1' },
    { id: '90000000000000302', username: 'large2' },
  ];
  const KV = largeKv(1_000_000, 'bulk');

  beforeAll(async () => {
    for (const user of LARGE) await joinWithKv(service(), user, KV);
    // Held as bytes, not text: the pieces a bulk read writes as they are.
    for (const user of LARGE) expect(Buffer.isBuffer(service().app.view.get(user.id)?.body)).toBe(true);
  }, 60_000);

  it('splices the large presences in as they are held, parsing none of them', async () => {
    const ids = [LARGE[0]?.id, ERIN, NOBODY, LARGE[1]?.id, ALICE] as string[];
    const parse = JSON.parse;
    let longest = 0;
    const spy = vi.spyOn(JSON, 'parse').mockImplementation((text, reviver) => {
      longest = Math.max(longest, String(text).length);
      return parse(text, reviver);
    });
    let answer: { status: number; headers: Headers; bytes: Buffer };
    try {
      const response = await fetch(url(`/v1/users?ids=${ids.join(',')}`));
      answer = {
        status: response.status,
        headers: response.headers,
        bytes: Buffer.from(await response.arrayBuffer()),
      };
    } finally {
      spy.mockRestore();
    }
    expect(longest).toBeLessThan(JSON.stringify(KV).length);
    expect(answer.status).toBe(200);
    expect(answer.bytes.length).toBeGreaterThan(2 * Buffer.byteLength(JSON.stringify(KV)));
    expect(Number(answer.headers.get('content-length'))).toBe(answer.bytes.length);

    const found = ids.filter((id) => id !== NOBODY);
    const singles = await Promise.all(
      found.map(async (id) => {
        const bytes = Buffer.from(await (await fetch(url(`/v1/users/${id}`))).arrayBuffer());
        return bytes.subarray(ENVELOPE_HEAD.length, bytes.length - 1);
      }),
    );
    const expected = Buffer.concat([
      Buffer.from(`${ENVELOPE_HEAD}{`),
      ...found.flatMap((id, n) => [Buffer.from(`${n === 0 ? '' : ','}"${id}":`), singles[n] as Buffer]),
      Buffer.from('}}'),
    ]);
    expect(answer.bytes.equals(expected)).toBe(true);
    const body = JSON.parse(answer.bytes.toString('utf8')) as { data: Record<string, PresenceData> };
    expect(Object.keys(body.data)).toEqual(found);
    expect(body.data[LARGE[1]?.id as string]?.kv).toEqual(KV);
  });
});

describe('a bulk read against the read limit', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('costs one read per distinct id asked; one the budget cannot pay is refused 429', async () => {
    h = await startHarness({
      env: { RATE_LIMIT_READ: '10' },
      setup: (sim) =>
        sim.createGuild({
          id: GUILD_A,
          name: 'Guild',
          members: [{ user: { id: ALICE, username: 'alice' }, presence: { status: 'online' } }],
        }),
    });
    const started = h;
    await eventually(() => expect(started.app.view.get(ALICE)).toBeDefined());
    await inOneReadWindow();
    const base = h.base;

    // Four distinct ids, one of them twice, one not monitored: four reads.
    const four = await fetch(
      `${base}/v1/users?ids=${ALICE},${NOBODY},${ALICE},${STRANGERS[0]},${STRANGERS[1]}`,
    );
    expect(four.status).toBe(200);
    expect(four.headers.get('ratelimit-limit')).toBe('10');
    expect(four.headers.get('ratelimit-remaining')).toBe('6');

    // A refused list costs the request alone.
    const refused = await fetch(`${base}/v1/users?ids=${ALICE},,`);
    expect(refused.status).toBe(400);
    expect(refused.headers.get('ratelimit-remaining')).toBe('5');

    // Six ids with five reads left: refused, and nothing is left.
    const six = await fetch(`${base}/v1/users?ids=${STRANGERS.slice(0, 6).join(',')}`);
    expect(six.status).toBe(429);
    expect(Number(six.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(six.headers.get('ratelimit-remaining')).toBe('0');
    const body = (await six.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('rate_limited');
    expect(body.error.message).toContain('one per id');
    expect((await fetch(`${base}/v1/users/${ALICE}`)).status).toBe(429);
  });
});
