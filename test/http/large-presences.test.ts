import { once } from 'node:events';
import { connect } from 'node:net';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { AVATAR_CACHE_CONTROL } from '../../src/http/routes/avatar.js';
import { LARGE_BODY_BYTES } from '../../src/presence/registry/snapshot.js';
import {
  apiKeyFor,
  bump,
  changeKv,
  ERIN,
  joinWithKv,
  largeKv,
  type PresenceData,
  seededHarness,
} from '../socket/fixture.js';
import { eventually } from '../support/eventually.js';

/**
 * REST reads of a presence whose KV is megabytes of emoji and escaped ASCII, as a store may hold whatever
 * the KV limit: every way of reading it answers the same bytes, which are the presence as JSON.stringify
 * writes it; and `/stats`, the card and the avatar link answer from the rest of the presence, reading
 * nothing of the KV.
 */

const LARGE = { id: '90000000000000300', username: 'large', avatar: '8342729096ea3675442027381ff50dfe' };
const KV = largeKv(3_000_000, 'rest');
const KV_JSON = JSON.stringify(KV);
const KV_JSON_BYTES = Buffer.byteLength(KV_JSON);

interface Read {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

async function read(url: string, init: RequestInit = {}): Promise<Read> {
  const response = await fetch(url, init);
  return {
    status: response.status,
    headers: response.headers,
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

/** The presence in a REST answer, checked to be canonical JSON: the bytes JSON.stringify gives for it. */
function presenceIn(answer: Read): PresenceData {
  const text = answer.bytes.toString('utf8');
  const body = JSON.parse(text) as { success: boolean; data: PresenceData };
  expect(Buffer.from(JSON.stringify(body)).equals(answer.bytes)).toBe(true);
  expect(body.success).toBe(true);
  return body.data;
}

/** `work`, with the length of the longest text JSON.parse was given meanwhile, anywhere in this process. */
async function longestParsedDuring<T>(work: () => Promise<T>): Promise<{ result: T; longest: number }> {
  const parse = JSON.parse;
  let longest = 0;
  const spy = vi.spyOn(JSON, 'parse').mockImplementation((text, reviver) => {
    longest = Math.max(longest, String(text).length);
    return parse(text, reviver);
  });
  try {
    const result = await work();
    return { result, longest };
  } finally {
    spy.mockRestore();
  }
}

describe('a presence with a KV of megabytes over REST', () => {
  const service = seededHarness();
  const url = (path: string) => `${service().base}${path}`;

  beforeAll(async () => {
    await joinWithKv(service(), LARGE, KV);
  }, 60_000);

  it('GET (the fast path), @me and HEAD (through Fastify) answer the same bytes: the presence, canonical JSON', async () => {
    const h = service();
    const fast = await read(url(`/v1/users/${LARGE.id}`));
    expect(fast.status).toBe(200);
    expect(fast.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(fast.headers.get('content-length'))).toBe(fast.bytes.length);
    expect(fast.bytes.length).toBeGreaterThan(KV_JSON_BYTES);
    const presence = presenceIn(fast);
    expect(presence.kv).toEqual(KV);
    expect(presence).toMatchObject({
      discord_user: { id: LARGE.id, username: 'large' },
      discord_status: 'online',
    });

    const me = await read(url('/v1/users/@me'), { headers: { Authorization: await apiKeyFor(h, LARGE.id) } });
    expect(me.status).toBe(200);
    expect(me.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(me.bytes.equals(fast.bytes)).toBe(true);

    const head = await read(url(`/v1/users/${LARGE.id}`), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(fast.bytes.length));
    expect(head.bytes.length).toBe(0);
  });

  it('40 readers at once each get the whole presence, byte for byte', async () => {
    const reference = await read(url(`/v1/users/${LARGE.id}`));
    const answers = await Promise.all(Array.from({ length: 40 }, () => read(url(`/v1/users/${LARGE.id}`))));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.bytes.equals(reference.bytes)).toBe(true);
    }
  });

  it('a reader that stops reading gets the rest once it reads again, and others are answered meanwhile', async () => {
    const reference = await read(url(`/v1/users/${LARGE.id}`));
    const { hostname, port } = new URL(service().base);
    const slow = connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    slow.on('data', (chunk: Buffer) => {
      received.push(chunk);
      // Takes what the first read brings, then reads no more until told.
      slow.pause();
    });
    await once(slow, 'connect');
    slow.write(`GET /v1/users/${LARGE.id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    await eventually(() => expect(received.length).toBeGreaterThan(0));
    const meanwhile = await read(url(`/v1/users/${LARGE.id}`));
    expect(meanwhile.bytes.equals(reference.bytes)).toBe(true);
    const ended = once(slow, 'end');
    slow.on('data', () => slow.resume());
    slow.resume();
    await ended;
    const answer = Buffer.concat(received);
    const headEnd = answer.indexOf('\r\n\r\n') + 4;
    expect(answer.subarray(0, headEnd).toString('latin1')).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.subarray(headEnd).equals(reference.bytes)).toBe(true);
  });

  it('a change of the rest of the presence keeps the KV as it was; a KV write that changes nothing changes nothing', async () => {
    const h = service();
    const text = bump(h, LARGE.id, 'dnd');
    await eventually(async () => {
      const presence = presenceIn(await read(url(`/v1/users/${LARGE.id}`)));
      expect(presence).toMatchObject({ discord_status: 'dnd', custom_status: { text } });
      expect(presence.kv).toEqual(KV);
    });
    const before = await read(url(`/v1/users/${LARGE.id}`));
    const changes = h.changes.length;

    await changeKv(h, LARGE.id, KV);
    const barrier = bump(h, ERIN);
    await eventually(() => expect(h.app.registry.get(ERIN)?.json).toContain(barrier));
    expect(h.changes.slice(changes).map((change) => change.userId)).toEqual([ERIN]);
    expect((await read(url(`/v1/users/${LARGE.id}`))).bytes.equals(before.bytes)).toBe(true);
  });

  it('/stats, the card and the avatar link answer from the rest of the presence, parsing nothing of the KV', async () => {
    const h = service();
    const text = bump(h, LARGE.id, 'idle');
    await eventually(() => expect(h.app.registry.get(LARGE.id)?.status).toBe('idle'));
    await eventually(() => expect(h.app.registry.get(LARGE.id)?.summary().custom_status?.text).toBe(text));
    expect(h.app.registry.get(LARGE.id)?.body.length).toBeGreaterThan(LARGE_BODY_BYTES);

    // Each read parses at most the rest of the presence: a parse of the KV would be longer than its JSON.
    const readOf = async (path: string, init?: RequestInit): Promise<Read> => {
      const { result, longest } = await longestParsedDuring(() => read(url(path), init));
      expect(longest, path).toBeLessThan(KV_JSON.length);
      return result;
    };

    const stats = await readOf(`/v1/users/${LARGE.id}/stats`);
    expect(stats.status).toBe(200);
    expect(JSON.parse(stats.bytes.toString())).toMatchObject({ data: { current_status: 'idle' } });

    const card = await readOf(`/v1/users/${LARGE.id}/card.svg`);
    expect(card.status).toBe(200);
    expect(card.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(card.bytes.toString()).toContain('large');
    expect(card.bytes.toString()).toContain(text);

    const avatar = await readOf(`/${LARGE.id}.png`, { redirect: 'manual' });
    expect(avatar.status).toBe(302);
    expect(avatar.headers.get('cache-control')).toBe(AVATAR_CACHE_CONTROL);
    expect(avatar.headers.get('location')).toBe(
      `${h.simulator.cdnUrl}/avatars/${LARGE.id}/${LARGE.avatar}.png?size=1024`,
    );
  });
});
