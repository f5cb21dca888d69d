import { describe, expect, it, vi } from 'vitest';
import { refusedUpgrade, SocketClient, socketUrl } from '../socket/client.js';
import {
  ALICE,
  BOB,
  bump,
  CAROL,
  changeKv,
  DAVE,
  ERIN,
  fixtureReady,
  GUILD_A,
  NOBODY,
  restPresence,
  seed,
} from '../socket/fixture.js';
import { eventually, within } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { type ReadEvent, SseReader } from './reader.js';
import { many, one, service, stream } from './service.js';

/**
 * Server-Sent Events over loopback, read by hand: what a stream starts with, the changes it is sent, how a
 * reconnect with `Last-Event-ID` is answered, keep-alives, slow readers, the caps shared with sockets, and
 * requests refused before any stream starts.
 */

/** The number in an event id (`<run>-<n>`). */
const seqOf = (id: string | undefined) => Number(id?.split('-')[1]);
const isFor = (userId: string) => (event: ReadEvent) =>
  (JSON.parse(event.data) as { user_id: string }).user_id === userId;

/** The presence as REST answers it, with the `user_id` events carry. */
async function withUserId(h: Harness, userId: string) {
  return { user_id: userId, ...(await restPresence(h, userId)) };
}

/** Waits until REST shows the custom status text: the change has gone through the registry. */
async function applied(h: Harness, userId: string, text: string): Promise<void> {
  await eventually(async () => expect((await restPresence(h, userId)).custom_status?.text).toBe(text));
}

describe('a stream', () => {
  const h = service();

  it('answers text/event-stream, uncached and unbuffered, open to every origin, and starts with retry:', async () => {
    const reader = await stream(h(), many(ALICE));
    expect(reader.status).toBe(200);
    expect(reader.headers).toMatchObject({
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'access-control-allow-origin': '*',
      'x-content-type-options': 'nosniff',
      // No chunked framing: the stream's body ends with its connection.
      connection: 'close',
    });
    expect(reader.headers['transfer-encoding']).toBeUndefined();
    await reader.eventCount(1);
    expect(reader.body.startsWith('retry: 2000\n\n')).toBe(true);
    expect(reader.retry).toBe(2000);
  });

  it('starts with the presence of each monitored id, as REST has it with user_id, the unmonitored left out', async () => {
    const reader = await stream(h(), many(BOB, NOBODY, ALICE, CAROL));
    const events = await reader.eventCount(3);
    expect(events.map((event) => event.event)).toEqual(['presence', 'presence', 'presence']);
    expect(reader.presences()).toEqual([
      await withUserId(h(), BOB),
      await withUserId(h(), ALICE),
      await withUserId(h(), CAROL),
    ]);
    // The presences carry no id of their own; an id alone follows them, the newest.
    expect(events.map((event) => event.id)).toEqual([undefined, undefined, undefined]);
    await reader.waitFor(() => reader.lastEventId !== '', 'an id');
    expect(reader.lastEventId).toMatch(/^[0-9a-f]{12}-\d+$/);
  });

  it('the single-user route starts with that user’s presence', async () => {
    const reader = await stream(h(), one(ALICE));
    await reader.eventCount(1);
    expect(reader.presences()).toEqual([await withUserId(h(), ALICE)]);
  });

  it('then sends each change, presence and KV alike, with ids that grow', async () => {
    const reader = await stream(h(), many(ALICE, BOB));
    await reader.eventCount(2);
    const text = bump(h(), ALICE);
    const first = await reader.until((event) => event.id !== undefined);
    expect(JSON.parse(first.data)).toEqual(await withUserId(h(), ALICE));
    expect(JSON.parse(first.data).custom_status.text).toBe(text);

    await changeKv(h(), BOB, { mood: 'sleepy' });
    const kv = await reader.until(isFor(BOB), 3);
    expect(JSON.parse(kv.data)).toMatchObject({ user_id: BOB, kv: { mood: 'sleepy' } });
    expect(JSON.parse(kv.data)).toEqual(await withUserId(h(), BOB));

    bump(h(), BOB);
    bump(h(), ALICE);
    await reader.eventCount(6);
    const ids = reader.events.slice(2).map((event) => seqOf(event.id));
    expect(ids.every((seq, i) => i === 0 || seq > (ids[i - 1] as number))).toBe(true);
    // Changes of users the stream does not name are not sent.
    bump(h(), CAROL);
    bump(h(), ALICE);
    const last = await reader.until(isFor(ALICE), 6);
    expect(reader.events.slice(2).every((event) => !isFor(CAROL)(event))).toBe(true);
    expect(reader.events.at(-1)).toBe(last);
  });

  it('waits for an id not monitored yet: its first event comes when it is', async () => {
    const newcomer = '80351110224678999';
    const reader = await stream(h(), many(ALICE, newcomer));
    await reader.eventCount(1);
    h().simulator.addMember(GUILD_A, {
      user: { id: newcomer, username: 'newcomer' },
      presence: { status: 'online', activities: [] },
    });
    // Monitored first as a member (offline), then their presence: events of both, each with its id.
    const arrived = await reader.until(
      (event) => isFor(newcomer)(event) && JSON.parse(event.data).discord_status === 'online',
    );
    expect(arrived.id).toBeDefined();
    expect(JSON.parse(arrived.data)).toEqual(await withUserId(h(), newcomer));
    h().simulator.removeMember(GUILD_A, newcomer);
  });

  it('a pending member, not rendered yet, is rendered for the stream and sent once, in its opening', async () => {
    const listed = '80351110224678998';
    // As a member chunk has it: the service's pending renderer is not told, so it waits for this stream.
    h().app.registry.memberListed(
      GUILD_A,
      { id: listed, username: 'listed' },
      { status: 'idle', client_status: { web: 'idle' }, activities: [] },
    );
    const reader = await stream(h(), many(listed, ALICE));
    await reader.eventCount(2);
    expect(reader.presences()[0]).toEqual(await withUserId(h(), listed));
    expect(reader.presences()[0]).toMatchObject({ discord_status: 'idle', active_on_discord_web: true });
    bump(h(), ALICE);
    await reader.until((event) => event.id !== undefined && isFor(ALICE)(event));
    expect(reader.events.filter(isFor(listed))).toHaveLength(1);
    h().app.registry.memberRemoved(GUILD_A, listed);
  });

  it('is counted by the metrics: open streams and the events sent', async () => {
    const before = await scrape(h().base);
    const sent = sampleValue(before, 'presently_sse_events_sent_total');
    const reader = await stream(h(), many(ALICE, BOB));
    await reader.eventCount(2);
    bump(h(), ALICE);
    await reader.eventCount(3);
    const after = await scrape(h().base);
    expect(sampleValue(after, 'presently_sse_streams')).toBe(1);
    expect(sampleValue(after, 'presently_sse_events_sent_total')).toBe(sent + 3);
  });
});

describe('Last-Event-ID', () => {
  const h = service();

  it('replays exactly the events missed, with their ids, and nothing else; then the stream goes on', async () => {
    const witness = await stream(h(), many(ALICE, BOB, CAROL));
    await witness.eventCount(3);
    const first = await stream(h(), many(ALICE, BOB));
    await first.eventCount(2);
    await first.waitFor(() => first.lastEventId !== '', 'an id');
    const since = first.lastEventId;
    first.close();
    await eventually(() => expect(h().app.sse.streamCount).toBe(1));

    const texts = [bump(h(), ALICE), bump(h(), CAROL), bump(h(), BOB), bump(h(), ALICE)];
    await witness.eventCount(3 + texts.length);
    const missed = witness.events.slice(3).filter((event) => !isFor(CAROL)(event));

    const again = await stream(h(), many(ALICE, BOB), { 'last-event-id': since });
    await again.eventCount(3);
    expect(again.events.map((event) => event.id)).toEqual(missed.map((event) => event.id));
    expect(again.events.map((event) => event.data)).toEqual(missed.map((event) => event.data));
    expect(again.presences().map((presence) => presence.user_id)).toEqual([ALICE, BOB, ALICE]);
    expect(again.lastEventId).toBe(missed.at(-1)?.id);

    bump(h(), BOB);
    const live = await again.until(isFor(BOB), 3);
    expect(seqOf(live.id)).toBeGreaterThan(seqOf(missed.at(-1)?.id));
  });

  it('with nothing missed, sends no event, only the newest id', async () => {
    const first = await stream(h(), many(ALICE));
    await first.waitFor(() => first.lastEventId !== '', 'an id');
    const again = await stream(h(), many(ALICE), { 'last-event-id': first.lastEventId });
    await again.waitFor(() => again.lastEventId !== '', 'an id');
    expect(again.lastEventId).toBe(first.lastEventId);
    expect(again.events).toEqual([]);
  });

  it('a user who changed while nobody streamed them is sent as they are now', async () => {
    const first = await stream(h(), many(DAVE, ERIN));
    await first.waitFor(() => first.lastEventId !== '', 'an id');
    const since = first.lastEventId;
    first.close();
    await eventually(() => expect(h().app.sse.streamCount).toBe(0));
    await applied(h(), DAVE, bump(h(), DAVE, 'dnd'));
    await applied(h(), DAVE, bump(h(), DAVE, 'dnd'));

    const again = await stream(h(), many(DAVE, ERIN), { 'last-event-id': since });
    await again.waitFor(() => again.lastEventId !== since && again.lastEventId !== '', 'a new id');
    expect(again.presences()).toEqual([await withUserId(h(), DAVE)]);
    expect(again.events[0]?.id).toBeUndefined();
    expect(seqOf(again.lastEventId)).toBeGreaterThan(seqOf(since));
  });

  it('as a query parameter, for a client that cannot send the header', async () => {
    const first = await stream(h(), many(ALICE));
    await first.waitFor(() => first.lastEventId !== '', 'an id');
    const since = first.lastEventId;
    first.close();
    const witness = await stream(h(), many(ALICE));
    await witness.eventCount(1);
    bump(h(), ALICE);
    const missed = await witness.until((event) => event.id !== undefined);
    const again = await stream(h(), `${many(ALICE)}&last_event_id=${since}`);
    await again.eventCount(1);
    expect(again.events).toEqual([missed]);
  });

  it('of another run (a restart, another node) starts the stream afresh', async () => {
    const reader = await stream(h(), one(ALICE), { 'last-event-id': '0123456789ab-1' });
    await reader.eventCount(1);
    expect(reader.presences()).toEqual([await withUserId(h(), ALICE)]);
  });
});

describe('Last-Event-ID too old for the replay ring', () => {
  const h = service({ sse: { replayChanges: 3 } });

  it('is answered with every presence afresh', async () => {
    const first = await stream(h(), many(ALICE, BOB));
    await first.waitFor(() => first.lastEventId !== '', 'an id');
    const since = first.lastEventId;
    first.close();
    for (let i = 0; i < 4; i++) await applied(h(), CAROL, bump(h(), CAROL));

    const again = await stream(h(), many(ALICE, BOB), { 'last-event-id': since });
    await again.eventCount(2);
    expect(again.presences()).toEqual([await withUserId(h(), ALICE), await withUserId(h(), BOB)]);
    await again.waitFor(() => seqOf(again.lastEventId) >= seqOf(since) + 4, 'the newest id');
  });
});

describe('keep-alive', () => {
  const h = service({ sse: { keepAliveMs: 50 } });

  it('a comment comes every keep-alive interval, between events too', async () => {
    const reader = await stream(h(), many(ALICE));
    await reader.waitFor(() => reader.comments.length >= 3, 'three keep-alives');
    expect(new Set(reader.comments)).toEqual(new Set(['keep-alive']));
    expect(reader.events).toHaveLength(1);
  });
});

describe('HTTP timeouts', () => {
  const h = service({
    env: { HTTP_HEADERS_TIMEOUT_MS: '200', HTTP_REQUEST_TIMEOUT_MS: '300' },
    sse: { keepAliveMs: 100 },
  });

  it('do not end a stream: they are for the request, which has arrived', async () => {
    const reader = await stream(h(), many(ALICE));
    await reader.waitFor(() => reader.comments.length >= 10, 'ten keep-alives (a second)');
    bump(h(), ALICE);
    await reader.eventCount(2);
    expect(reader.ended).toBe(false);
  });
});

describe('slow readers', () => {
  /** Alice's presence carries ~700 KB of KV: a few of her updates fill any connection that does not read. */
  async function largeAlice(h: Harness): Promise<number> {
    const big = Object.fromEntries(
      Array.from({ length: 24 }, (_, i) => [`k${i}`, Buffer.alloc(22_000, i + 1).toString('base64')]),
    );
    await changeKv(h, ALICE, big);
    await eventually(() => expect(h.app.registry.get(ALICE)?.json.length).toBeGreaterThan(700_000));
    return h.app.registry.get(ALICE)?.body.length ?? 0;
  }

  describe('past the send buffer cap', () => {
    const CAP = 64 * 1024;
    const h = service({ sse: { sendBufferCapBytes: CAP, pacedBytesPerSecond: 0 } });

    it('is cut once its unsent bytes pass the cap; what it holds stays bounded; a reader goes on', async () => {
      const size = await largeAlice(h());
      const slow = await stream(h(), many(ALICE));
      const reading = await stream(h(), many(ALICE));
      await reading.eventCount(1, 10_000);
      slow.socket.pause();
      let pushed = 0;
      let mostHeld = 0;
      // The server's own count, to stop pushing as soon as it gave up on the slow one.
      while (h().app.sse.streamCount === 2) {
        if (pushed === 150) throw new Error('the slow stream was never cut');
        bump(h(), ALICE);
        pushed++;
        await reading.eventCount(1 + pushed, 10_000);
        mostHeld = Math.max(mostHeld, h().app.sse.bufferedBytes());
      }
      // A paused connection hears of its end once it reads again.
      slow.socket.resume();
      await slow.closed;
      expect(pushed).toBeGreaterThan(1);
      // The slow one held at most the cap and one presence; the reader, one presence at most.
      expect(mostHeld).toBeLessThanOrEqual(CAP + 2 * size + 64 * 1024);
      bump(h(), ALICE);
      await reading.eventCount(2 + pushed, 10_000);
      expect(reading.ended).toBe(false);
      expect(h().app.sse.streamCount).toBe(1);
    });
  });

  describe('that stops reading', () => {
    const h = service({
      sse: {
        sendBufferCapBytes: 256 * 1024 * 1024,
        pacedBytesPerSecond: 0,
        stalledStreamMs: 300,
        keepAliveMs: 50,
      },
    });

    it('is cut once its connection has taken nothing for the stall time', async () => {
      await largeAlice(h());
      const slow = await stream(h(), many(ALICE));
      await slow.eventCount(1, 10_000);
      slow.socket.pause();
      // Enough to fill the kernel's buffers on both ends; then the server holds the rest, and waits.
      let pushed = 0;
      while (h().app.sse.streamCount === 1) {
        if (pushed === 150) throw new Error('the stalled stream was never cut');
        await applied(h(), ALICE, bump(h(), ALICE));
        pushed++;
      }
      expect(pushed).toBeGreaterThan(1);
      slow.socket.resume();
      await slow.closed;
    });
  });
});

describe('caps shared with sockets', () => {
  describe('SOCKETS_PER_IP=2', () => {
    const h = service({ env: { SOCKETS_PER_IP: '2' } });

    it('a socket and a stream fill it: a second stream is refused 429 in the envelope, and so is a socket', async () => {
      const before = sampleValue(await scrape(h().base), 'presently_rate_limited_total', {
        limit: 'sockets_per_ip',
      });
      await SocketClient.connect(h().base);
      const first = await stream(h(), many(ALICE));
      await first.eventCount(1);

      const refused = await stream(h(), many(ALICE));
      expect(refused.status).toBe(429);
      expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(refused.headers['retry-after']).toBe('60');
      expect(refused.headers['access-control-allow-origin']).toBe('*');
      await eventually(() => expect(JSON.parse(refused.body)).toMatchObject({ success: false }));
      expect(JSON.parse(refused.body).error).toEqual({
        code: 'rate_limited',
        message: 'at most 2 sockets and event streams per IP',
      });
      expect((await refusedUpgrade(socketUrl(h().base))).statusCode).toBe(429);
      expect(
        sampleValue(await scrape(h().base), 'presently_rate_limited_total', { limit: 'sockets_per_ip' }),
      ).toBe(before + 2);

      first.close();
      await eventually(() => expect(h().app.sse.streamCount).toBe(0));
      await SocketClient.connect(h().base);
      expect((await stream(h(), many(ALICE))).status).toBe(429);
    });
  });

  describe('MAX_SOCKETS=2', () => {
    const h = service({ env: { MAX_SOCKETS: '2' } });

    it('a stream and a socket fill it: a stream is refused 503 try_again_later, a socket closed 1013', async () => {
      const first = await stream(h(), many(ALICE));
      await first.eventCount(1);
      await SocketClient.connect(h().base);

      const refused = await stream(h(), one(ALICE));
      expect(refused.status).toBe(503);
      await eventually(() => expect(JSON.parse(refused.body).error.code).toBe('try_again_later'));
      const socket = await SocketClient.open(socketUrl(h().base));
      expect((await socket.closedWith()).code).toBe(1013);

      first.close();
      const replacement = await eventually(async () => {
        const next = await stream(h(), many(BOB));
        expect(next.status).toBe(200);
        return next;
      });
      await replacement.eventCount(1);
    });
  });

  describe('CONNECTIONS_PER_IP=2', () => {
    const h = service({ env: { CONNECTIONS_PER_IP: '2' } });

    it('streams leave the count of HTTP connections, as accepted sockets do', async () => {
      const streams = [await stream(h(), many(ALICE)), await stream(h(), many(BOB))];
      await Promise.all(streams.map((reader) => reader.eventCount(1)));
      const third = await stream(h(), many(CAROL));
      await third.eventCount(1);
      expect((await fetch(`${h().base}/v1/users/${ALICE}`)).status).toBe(200);
    });
  });
});

describe('requests refused before any stream starts', () => {
  const h = service({ env: { SUBSCRIPTIONS_PER_SOCKET: '3' } });

  const cases: [string, string, number, string][] = [
    ['no ids', '/v1/events', 400, 'invalid_query'],
    ['empty ids', '/v1/events?ids=', 400, 'invalid_query'],
    ['an empty item', `/v1/events?ids=${ALICE},,${BOB}`, 400, 'invalid_query'],
    ['an item that is no id', `/v1/events?ids=${ALICE},abc`, 400, 'invalid_query'],
    ['an id of 2^64', '/v1/events?ids=18446744073709551616', 400, 'invalid_query'],
    ['more ids than SUBSCRIPTIONS_PER_SOCKET', many(ALICE, BOB, CAROL, DAVE), 400, 'invalid_query'],
    ['a path id that is no id', '/v1/users/abc/events', 400, 'invalid_user_id'],
    ['a user not monitored', one(NOBODY), 404, 'user_not_monitored'],
  ];

  it.each(cases)('%s: %s %s in the envelope', async (_name, path, status, code) => {
    const reader = await stream(h(), path);
    expect(reader.status).toBe(status);
    expect(reader.headers['content-type']).toBe('application/json; charset=utf-8');
    await eventually(() =>
      expect(JSON.parse(reader.body)).toMatchObject({ success: false, error: { code } }),
    );
    expect(h().app.sse.streamCount).toBe(0);
  });

  it('repeated ids count once against the limit', async () => {
    const reader = await stream(h(), many(ALICE, BOB, ALICE, CAROL, BOB));
    expect(reader.status).toBe(200);
    await reader.eventCount(3);
  });
});

describe('shutdown', () => {
  it('ends every stream at once, so the process does not wait for them', async () => {
    const h = await startHarness({ setup: seed });
    await fixtureReady(h);
    const reader = await SseReader.connect(h.base, many(ALICE));
    await reader.eventCount(1);
    // A stream left open would hold the shutdown until the drain timer cut it. With the timers the test's,
    // none can fire: the shutdown ends only if the streams were ended without one.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await within(h.close(), 10_000, 'the shutdown with no timer firing');
    } finally {
      vi.useRealTimers();
    }
    await reader.closed;
  });
});
