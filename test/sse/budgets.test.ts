import { describe, expect, it, vi } from 'vitest';
import { ALICE, BOB, bump, CAROL } from '../socket/fixture.js';
import { eventually } from '../support/eventually.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { inOneReadWindow } from '../support/read-window.js';
import type { SseReader } from './reader.js';
import { many, service, stream } from './service.js';

/**
 * What opening event streams costs a client, over loopback: a stream of many ids is charged to the read
 * limit per id, a client opening streams in a tight loop is refused while one that reconnects now and then
 * is not, and a reconnect that missed too much is answered afresh rather than replayed.
 */

/** `count` distinct snowflakes, none of them monitored. */
const strangers = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => String(200_000_000_000_000_000n + BigInt(from + i)));

async function refusal(reader: SseReader): Promise<{ code: string; message: string }> {
  expect(reader.headers['content-type']).toBe('application/json; charset=utf-8');
  await eventually(() => expect(JSON.parse(reader.body)).toMatchObject({ success: false }));
  return (JSON.parse(reader.body) as { error: { code: string; message: string } }).error;
}

describe('a stream of many ids against the read limit', () => {
  const h = service({ env: { RATE_LIMIT_READ: '790' } });

  it('costs one read per id, as a bulk read does: 750 ids leave 40 reads, and a bulk read of 41 is refused', async () => {
    await inOneReadWindow();
    const ids = [ALICE, ...strangers(749)];
    const reader = await stream(h(), many(...ids));
    expect(reader.status).toBe(200);
    expect(reader.headers['ratelimit-remaining']).toBe('40');
    await reader.eventCount(1);

    const bulk = await fetch(`${h().base}/v1/users?ids=${strangers(41, 1_000).join(',')}`);
    expect(bulk.status).toBe(429);
    expect(Number(bulk.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await bulk.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
  });
});

describe('a stream of many ids past the read limit', () => {
  const h = service({ env: { RATE_LIMIT_READ: '790' } });

  it('a stream the budget cannot pay is refused 429 before it starts', async () => {
    await inOneReadWindow();
    const first = await stream(h(), many(...strangers(750)));
    expect(first.status).toBe(200);
    const second = await stream(h(), many(ALICE, ...strangers(749)));
    expect(second.status).toBe(429);
    expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
    expect((await refusal(second)).code).toBe('rate_limited');
    expect(second.events).toEqual([]);
    expect(h().app.sse.streamCount).toBe(1);
  });
});

describe('streams opened per client (SOCKETS_PER_IP=3: six in a row, then three a minute)', () => {
  const h = service({ env: { SOCKETS_PER_IP: '3' } });

  it('a client whose streams all reconnect is served; one opening them in a tight loop is refused 429 until its budget refills', async () => {
    // The clock stands still unless the test moves it: nothing refills while the test runs.
    vi.useFakeTimers({ toFake: ['Date'] });
    const before = sampleValue(await scrape(h().base), 'presently_rate_limited_total', {
      limit: 'stream_opens',
    });
    const paths = [many(ALICE), many(BOB), many(CAROL)];
    const first = await Promise.all(paths.map((path) => stream(h(), path)));
    await Promise.all(first.map((reader) => reader.waitFor(() => reader.lastEventId !== '', 'an id')));
    // Every stream cut at once (a proxy restarting, say): each comes back with its Last-Event-ID.
    for (const reader of first) reader.close();
    await eventually(() => expect(h().app.sse.streamCount).toBe(0));
    const again = await Promise.all(
      paths.map((path, i) => stream(h(), path, { 'last-event-id': first[i]?.lastEventId as string })),
    );
    expect(again.map((reader) => reader.status)).toEqual([200, 200, 200]);

    // One more opening than the budget holds, from a client holding no stream: refused in the envelope.
    for (const reader of again) reader.close();
    await eventually(() => expect(h().app.sse.streamCount).toBe(0));
    const flood = await stream(h(), many(ALICE));
    expect(flood.status).toBe(429);
    expect(flood.headers['retry-after']).toBe('20');
    expect(flood.headers['access-control-allow-origin']).toBe('*');
    expect(await refusal(flood)).toEqual({
      code: 'rate_limited',
      message: 'at most 6 event streams opened in a row per IP, then 3 a minute; retry in 20 seconds',
    });
    expect(h().app.sse.streamCount).toBe(0);
    expect(
      sampleValue(await scrape(h().base), 'presently_rate_limited_total', { limit: 'stream_opens' }),
    ).toBe(before + 1);

    // Twenty seconds on, one opening is back: the client that waited as told is served.
    vi.setSystemTime(Date.now() + 20_000);
    const waited = await stream(h(), many(ALICE));
    expect(waited.status).toBe(200);
    await waited.eventCount(1);
    expect((await stream(h(), many(BOB))).status).toBe(429);
  });
});

describe('a reconnect that missed more changes than one is sent again (2 here)', () => {
  const h = service({ sse: { replayPerReconnect: 2 } });

  /** A stream of Alice and Bob cut, Alice changing `changes` times meanwhile (streamed by a witness). */
  async function missed(changes: number): Promise<{ since: string; events: string[] }> {
    const witness = await stream(h(), many(ALICE));
    await witness.eventCount(1);
    const first = await stream(h(), many(ALICE, BOB));
    await first.waitFor(() => first.lastEventId !== '', 'an id');
    first.close();
    await eventually(() => expect(h().app.sse.streamCount).toBe(1));
    for (let i = 0; i < changes; i++) bump(h(), ALICE);
    await witness.eventCount(1 + changes);
    return { since: first.lastEventId, events: witness.events.slice(1).map((event) => event.id as string) };
  }

  it('within it, is sent each missed event again, with its id, in order', async () => {
    const { since, events } = await missed(2);
    const again = await stream(h(), many(ALICE, BOB), { 'last-event-id': since });
    await again.eventCount(2);
    expect(again.events.map((event) => event.id)).toEqual(events);
  });

  it('past it, is sent every presence afresh, as for an id too old', async () => {
    const { since, events } = await missed(3);
    const again = await stream(h(), many(ALICE, BOB), { 'last-event-id': since });
    await again.waitFor(() => again.lastEventId !== '', 'the newest id');
    expect(again.presences().map((presence) => presence.user_id)).toEqual([ALICE, BOB]);
    expect(again.events.map((event) => event.id)).toEqual([undefined, undefined]);
    expect(again.lastEventId).toBe(events.at(-1));
  });
});
