import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { framePace } from '../../src/limits/socket-budgets.js';
import { SocketCommands } from '../../src/socket/commands.js';
import { HEARTBEAT_INTERVAL_MS } from '../../src/socket/protocol.js';
import type { Harness } from '../support/harness.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { type Frame, refusedUpgrade, SocketClient, socketUrl, wireFrame } from './client.js';
import { ALICE, BOB, bump, presenceOf, seededHarness, updateFor } from './fixture.js';

/**
 * The socket's frame budget, as a client sees it: every frame counts, heartbeats and pings included, so a
 * flood of them is closed 4009 on one socket or on many of one address, while a client heartbeating at its
 * interval is never closed and everyone else is served meanwhile.
 *
 * The gateway judges the budget and its sweep by Date.now() and setInterval: both are the tests' to move,
 * so what a client has sent in a given time is what the test makes it, whatever the machine's load.
 */

const INTERVAL_MS = 200;
const { burst: FRAME_BURST } = framePace(60, HEARTBEAT_INTERVAL_MS);
/** A heartbeat padded to just under 1 KiB: never taken for a command by its size. */
const paddedHeartbeat = JSON.stringify({ op: 3, d: 'x'.repeat(1000) });
const bareHeartbeat = JSON.stringify({ op: 3 });
const inOneWrite = (frames: string[]): Buffer => Buffer.concat(frames.map((frame) => wireFrame(frame)));
const times = <T>(count: number, item: T): T[] => Array.from({ length: count }, () => item);

let lastAddress = 0;
const nextAddress = () => `203.0.113.${++lastAddress % 250}`;
const connect = (base: string, address = nextAddress()) =>
  SocketClient.connect(base, '', { 'x-forwarded-for': address });

async function refusals(h: Harness): Promise<number> {
  return sampleValue(await scrape(h.base), 'presently_rate_limited_total', { limit: 'socket_frames' });
}

/** Moves the clock on by one heartbeat interval: two sweeps of the gateway. */
const interval = (): void => {
  vi.advanceTimersByTime(INTERVAL_MS / 2);
  vi.advanceTimersByTime(INTERVAL_MS / 2);
};

/** A change of Bob the client hears, as it is. */
async function hearsChange(h: Harness, client: SocketClient): Promise<void> {
  const text = bump(h, BOB, 'idle');
  const update = (await client.until(updateFor(BOB))).at(-1) as Frame;
  expect(presenceOf(update).custom_status?.text).toBe(text);
}

function withFakeClock(env: Record<string, string>): () => Harness {
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
  });
  afterAll(() => {
    vi.useRealTimers();
  });
  return seededHarness({
    env: { TRUST_PROXY: '127.0.0.1', ...env },
    socket: { heartbeatIntervalMs: INTERVAL_MS },
  });
}

describe('the frame budget, with the default limits', () => {
  const service = withFakeClock({});

  it('a flood read in one go is handed over only up to the refusal: the rest of what was read is dropped', async () => {
    const h = service();
    const handed = vi.spyOn(SocketCommands.prototype as unknown as { arrived(): void }, 'arrived');
    try {
      const flooder = await connect(h.base);
      flooder.writeRaw(inOneWrite(times(5_000, bareHeartbeat)));
      expect(await flooder.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
      // The budget's frames, the one refused, and none of the thousands read with them.
      expect(handed.mock.calls.length).toBeLessThanOrEqual(FRAME_BURST + 1);
    } finally {
      handed.mockRestore();
    }
  });

  it.each([
    ['bare heartbeats', bareHeartbeat],
    ['heartbeats padded to 1 KiB', paddedHeartbeat],
  ])('a flood of %s from one socket is closed 4009 rate_limited, counted once', async (_, heartbeat) => {
    const h = service();
    const before = await refusals(h);
    const address = nextAddress();
    const flooder = await connect(h.base, address);
    flooder.writeRaw(inOneWrite(times(1000, heartbeat)));
    expect(await flooder.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
    expect(await refusals(h)).toBe(before + 1);
    // Reconnecting is no way to a new budget.
    const refused = await refusedUpgrade(socketUrl(h.base), { 'x-forwarded-for': address });
    expect(refused.statusCode).toBe(429);
    expect(JSON.parse(refused.body).error.code).toBe('rate_limited');
  });

  it('so is a flood of pings, and no pong is sent past the budget', async () => {
    const h = service();
    const flooder = await connect(h.base);
    let pongs = 0;
    flooder.ws.on('pong', () => pongs++);
    for (let i = 0; i < 1000; i++) flooder.ws.ping();
    expect(await flooder.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
    expect(pongs).toBeLessThanOrEqual(FRAME_BURST);
  });

  it('a flood spread over many sockets of one address closes every one of them; other clients are served', async () => {
    const h = service();
    const bystander = await connect(h.base);
    await bystander.subscribe({ subscribe_to_id: BOB });
    const address = nextAddress();
    const flooders = await Promise.all(Array.from({ length: 20 }, () => connect(h.base, address)));
    for (const flooder of flooders) flooder.writeRaw(inOneWrite(times(200, paddedHeartbeat)));
    for (const flooder of flooders) expect((await flooder.closedWith()).code).toBe(4009);
    expect((await refusedUpgrade(socketUrl(h.base), { 'x-forwarded-for': address })).statusCode).toBe(429);

    await hearsChange(h, bystander);
    expect((await bystander.subscribe({ subscribe_to_id: ALICE })).t).toBe('INIT_STATE');
    expect(bystander.closeEvent).toBeUndefined();
  });

  it('a client heartbeating at its interval is never closed, while a flood from another address is', async () => {
    const h = service();
    const steady = await connect(h.base);
    await steady.subscribe({ subscribe_to_id: BOB });
    const flooder = await connect(h.base);
    flooder.writeRaw(inOneWrite(times(1000, bareHeartbeat)));
    expect((await flooder.closedWith()).code).toBe(4009);

    // Ten times its burst of heartbeats (and of pings, which count too), one of each an interval.
    for (let i = 0; i < 10 * FRAME_BURST; i++) {
      steady.send({ op: 3 });
      expect(await steady.ping()).toBe('pong');
      interval();
    }
    expect(steady.closeEvent).toBeUndefined();
    await hearsChange(h, steady);
    expect((await steady.subscribe({ subscribe_to_id: ALICE })).t).toBe('INIT_STATE');
  });
});

describe('the frame budget of a client over all its sockets (SOCKETS_PER_IP=2)', () => {
  const service = withFakeClock({ SOCKETS_PER_IP: '2' });

  it('gets no fresh budget from a new socket once what two sockets may send together is spent', async () => {
    const h = service();
    const address = nextAddress();
    // Each socket keeps within its own budget: a burst of heartbeats, then a command, answered.
    for (let round = 0; round < 2; round++) {
      const socket = await connect(h.base, address);
      socket.writeRaw(inOneWrite(times(FRAME_BURST - 1, bareHeartbeat)));
      expect((await socket.subscribe({ subscribe_to_id: ALICE })).t).toBe('INIT_STATE');
      socket.ws.terminate();
      await socket.closed;
    }
    const third = await connect(h.base, address);
    third.send({ op: 2, d: { subscribe_to_id: ALICE } });
    expect(await third.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
    expect(third.pending).toEqual([]);
    // Another client is not touched.
    const other = await connect(h.base);
    expect((await other.subscribe({ subscribe_to_id: ALICE })).t).toBe('INIT_STATE');
  });
});
