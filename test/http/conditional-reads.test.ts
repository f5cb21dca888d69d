import { describe, expect, it } from 'vitest';
import { ALICE, apiKeyFor, BOB, bump, NOBODY, seededHarness } from '../socket/fixture.js';
import { comparableHeaders } from '../support/comparable-headers.js';
import { eventually } from '../support/eventually.js';

/**
 * Presence reads carry a strong ETag of their bytes; `If-None-Match` with it answers 304 without a body, on
 * the fast path (a plain GET), through Fastify (HEAD, an id spelled with escapes, `@me`) and for a bulk read.
 */

const STRONG_TAG = /^"[A-Za-z0-9_-]+"$/;

/** ALICE's id with its first digit percent-encoded: the same user, but no plain path, so Fastify answers. */
const ALICE_ESCAPED = `%3${ALICE[0]}${ALICE.slice(1)}`;

describe('ETag and If-None-Match', () => {
  const service = seededHarness();
  const url = (path: string) => `${service().base}${path}`;
  const tagOf = async (path: string, init: RequestInit = {}): Promise<string> => {
    const response = await fetch(url(path), init);
    await response.arrayBuffer();
    expect(response.status, path).toBe(200);
    return response.headers.get('etag') ?? '';
  };

  it('a presence has one strong tag, whichever path answers it, while nothing changes', async () => {
    const fast = await tagOf(`/v1/users/${ALICE}`);
    expect(fast).toMatch(STRONG_TAG);
    expect(await tagOf(`/v1/users/${ALICE}`)).toBe(fast);
    expect(await tagOf(`/v1/users/${ALICE}`, { method: 'HEAD' })).toBe(fast);
    expect(await tagOf(`/v1/users/${ALICE_ESCAPED}`)).toBe(fast);
    expect(
      await tagOf('/v1/users/@me', { headers: { authorization: await apiKeyFor(service(), ALICE) } }),
    ).toBe(fast);
    expect(await tagOf(`/v1/users/${BOB}`)).not.toBe(fast);
  });

  it('answers 304 with no body and the same tag, for the tag, a list holding it, its weak form and *', async () => {
    const tag = await tagOf(`/v1/users/${ALICE}`);
    const key = await apiKeyFor(service(), ALICE);
    const conditions = [tag, `"elsewhere", ${tag}`, `W/${tag}`, '*'];
    const reads: [string, RequestInit][] = [
      [`/v1/users/${ALICE}`, {}],
      [`/v1/users/${ALICE}`, { method: 'HEAD' }],
      [`/v1/users/${ALICE_ESCAPED}`, {}],
      ['/v1/users/@me', { headers: { authorization: key } }],
    ];
    for (const condition of conditions) {
      for (const [path, init] of reads) {
        const response = await fetch(url(path), {
          ...init,
          headers: { ...(init.headers as Record<string, string>), 'if-none-match': condition },
        });
        expect(response.status, `${path} ${condition}`).toBe(304);
        expect(response.headers.get('etag')).toBe(tag);
        expect(await response.text()).toBe('');
      }
    }
    const other = await fetch(url(`/v1/users/${ALICE}`), { headers: { 'if-none-match': '"elsewhere"' } });
    expect(other.status).toBe(200);
    expect(other.headers.get('etag')).toBe(tag);
  });

  it('answers a 304 with the same headers on the fast path as through Fastify', async () => {
    const tag = await tagOf(`/v1/users/${ALICE}`);
    const fast = await fetch(url(`/v1/users/${ALICE}`), { headers: { 'if-none-match': tag } });
    const routed = await fetch(url(`/v1/users/${ALICE_ESCAPED}`), { headers: { 'if-none-match': tag } });
    expect(fast.status).toBe(304);
    expect(routed.status).toBe(304);
    expect(comparableHeaders(fast)).toEqual(comparableHeaders(routed));
    expect(comparableHeaders(fast)).toMatchObject({
      'access-control-allow-origin': '*',
      'x-content-type-options': 'nosniff',
    });
    expect(fast.headers.get('content-type')).toBeNull();
  });

  it('a change makes a new tag: the old one gets the new presence, the new one 304', async () => {
    const h = service();
    const before = await tagOf(`/v1/users/${BOB}`);
    const text = bump(h, BOB, 'dnd');
    await eventually(() => expect(h.app.view.get(BOB)?.json).toContain(text));
    const stale = await fetch(url(`/v1/users/${BOB}`), { headers: { 'if-none-match': before } });
    expect(stale.status).toBe(200);
    const after = stale.headers.get('etag') ?? '';
    expect(after).toMatch(STRONG_TAG);
    expect(after).not.toBe(before);
    expect(await stale.text()).toContain(text);
    const fresh = await fetch(url(`/v1/users/${BOB}`), { headers: { 'if-none-match': after } });
    expect(fresh.status).toBe(304);
  });

  it('a bulk read has a tag of its parts: stable, 304, new when one presence changes or the order does', async () => {
    const h = service();
    const path = `/v1/users?ids=${ALICE},${NOBODY},${BOB}`;
    const tag = await tagOf(path);
    expect(tag).toMatch(STRONG_TAG);
    expect(await tagOf(path)).toBe(tag);
    expect(await tagOf(`/v1/users?ids=${BOB},${ALICE}`)).not.toBe(tag);

    for (const method of ['GET', 'HEAD']) {
      const same = await fetch(url(path), { method, headers: { 'if-none-match': `W/${tag}` } });
      expect(same.status, method).toBe(304);
      expect(same.headers.get('etag')).toBe(tag);
      expect(await same.text()).toBe('');
    }

    const text = bump(h, ALICE, 'idle');
    await eventually(() => expect(h.app.view.get(ALICE)?.json).toContain(text));
    const changed = await fetch(url(path), { headers: { 'if-none-match': tag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(tag);
    expect(await changed.text()).toContain(text);
  });
});
