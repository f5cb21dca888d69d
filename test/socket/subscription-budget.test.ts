import { afterEach, describe, expect, it } from 'vitest';
import { SseReader } from '../sse/reader.js';
import { eventually } from '../support/eventually.js';
import type { Harness } from '../support/harness.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { SocketClient, wireFrame } from './client.js';
import { ALICE, BOB, bump, CAROL, DAVE, ERIN, presenceOf, seededHarness, updateFor } from './fixture.js';

/**
 * MAX_SUBSCRIPTIONS, over loopback: the ids every socket and event stream of the process subscribe to
 * together are capped. Past it a socket's subscribe is closed 1013 and a stream refused 503
 * try_again_later, while every subscription already held goes on hearing its changes.
 */

const BUDGET = 1_002;
/** Ids nobody monitors: what a flood subscribes to. */
const unmonitored = (count: number) =>
  Array.from({ length: count }, (_, n) => String(300000000000000000n + BigInt(n)));
const FULL = { code: 1013, reason: 'try_again_later: the server holds as many subscriptions as it may' };

const streams = new Set<SseReader>();
async function stream(h: Harness, path: string): Promise<SseReader> {
  const reader = await SseReader.connect(h.base, path);
  streams.add(reader);
  return reader;
}

async function refusals(h: Harness): Promise<number> {
  return sampleValue(await scrape(h.base), 'presently_rate_limited_total', { limit: 'max_subscriptions' });
}

describe(`MAX_SUBSCRIPTIONS=${BUDGET}`, () => {
  const service = seededHarness({
    env: { MAX_SUBSCRIPTIONS: String(BUDGET), SOCKET_COMMANDS_PER_MINUTE: '0' },
  });
  afterEach(() => {
    for (const reader of streams) reader.close();
    streams.clear();
  });

  it('past it a subscribe closes 1013 and a stream is refused 503, while the subscriptions held keep hearing changes', async () => {
    const h = service();
    const before = await refusals(h);
    const held = await SocketClient.connect(h.base);
    const ids = [ALICE, ...unmonitored(999)];
    expect(Object.keys((await held.subscribe({ subscribe_to_ids: ids })).d as object)).toEqual([ALICE]);
    const events = await stream(h, `/v1/events?ids=${BOB},${CAROL}`);
    expect(events.status).toBe(200);
    await events.eventCount(2);

    // Full: one id more is refused, over a socket or a stream.
    const late = await SocketClient.connect(h.base);
    late.send({ op: 2, d: { subscribe_to_id: ERIN } });
    expect(await late.closedWith()).toEqual(FULL);
    for (const path of [`/v1/events?ids=${DAVE}`, `/v1/users/${DAVE}/events`]) {
      const refused = await stream(h, path);
      expect(refused.status).toBe(503);
      await eventually(() =>
        expect(JSON.parse(refused.body)).toEqual({
          success: false,
          error: {
            code: 'try_again_later',
            message: `this server holds as many subscriptions as it may (${BUDGET}); try again later`,
          },
        }),
      );
    }
    expect(await refusals(h)).toBe(before + 3);

    // What was held goes on: ids a socket holds already need no room, and changes reach both.
    expect(
      Object.keys((await held.subscribe({ subscribe_to_ids: [ALICE, ...unmonitored(5)] })).d as object),
    ).toEqual([ALICE]);
    const text = bump(h, ALICE);
    const update = (await held.until(updateFor(ALICE))).at(-1);
    expect(update && presenceOf(update).custom_status?.text).toBe(text);
    const bobText = bump(h, BOB);
    await eventually(() => expect(events.events.some((event) => event.data.includes(bobText))).toBe(true));

    // Ids let go are room again.
    held.send({ op: 4, d: { unsubscribe_from_ids: unmonitored(999) } });
    await eventually(async () => {
      const socket = await SocketClient.connect(h.base);
      expect(presenceOf(await socket.subscribe({ subscribe_to_id: ERIN })).discord_user.id).toBe(ERIN);
    });
  });
});

describe('a socket closed for its subscribe', () => {
  const service = seededHarness({ env: { MAX_SUBSCRIPTIONS: '1001', SOCKET_COMMANDS_PER_MINUTE: '0' } });

  it('gives its ids back at once, though its client never lets the connection go', async () => {
    const h = service();
    const attacker = await SocketClient.connect(h.base);
    const ids = unmonitored(1_001);
    await attacker.subscribe({ subscribe_to_ids: ids.slice(0, 600) });
    // A client that reads what comes but never answers the close, nor ends its side of the connection.
    const tcp = attacker.tcp;
    tcp.allowHalfOpen = true;
    tcp.removeAllListeners('data');
    tcp.removeAllListeners('end');
    const received: Buffer[] = [];
    tcp.on('data', (chunk: Buffer) => received.push(chunk));
    // Together one id past SUBSCRIPTIONS_PER_SOCKET (1,000): closed 4006, all 1,001 within MAX_SUBSCRIPTIONS.
    attacker.writeRaw(wireFrame(JSON.stringify({ op: 2, d: { subscribe_to_ids: ids.slice(600) } })));
    const closeFrame = Buffer.from([0x88]);
    await eventually(() => expect(Buffer.concat(received).includes(closeFrame)).toBe(true));

    const socket = await SocketClient.connect(h.base);
    expect(presenceOf(await socket.subscribe({ subscribe_to_id: ALICE })).discord_user.id).toBe(ALICE);
    tcp.destroy();
  });
});
