import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import {
  type Presence,
  type PresenceUpdate,
  PresentlyClient,
  type PresentlySocket,
  type SocketClose,
} from '../../src/client/index.js';
import { ALICE, BOB, bump, CAROL, ERIN, fixtureReady, NOBODY, seed } from '../socket/fixture.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { freePort, runToExit } from '../support/node-process.js';

/**
 * `presently/client`'s socket against the real socket gateway: Node 20 has no global WebSocket, so `ws`
 * is passed in, as the README tells Node users to.
 */

const HEARTBEAT_MS = 300;
const FAST_RECONNECT = { minMs: 50, maxMs: 200 };

let h: Harness;
let client: PresentlyClient;
/** Server-side ends of every socket upgrade, to cut them as a network drop would. */
const serverSockets: Duplex[] = [];
const sockets: PresentlySocket[] = [];

/** A `ws` that records what it is opened with and what it receives, and can be told to stop heartbeating. */
class RecordingWebSocket extends WebSocket {
  static opened: string[] = [];
  static binaryFrames = 0;
  static textFrames = 0;
  static muteHeartbeats = false;
  /** Heartbeats (op 3) sent, by every socket. */
  static heartbeats = 0;

  constructor(url: string) {
    super(url);
    RecordingWebSocket.opened.push(url);
    this.on('message', (_data, isBinary) => {
      if (isBinary) RecordingWebSocket.binaryFrames++;
      else RecordingWebSocket.textFrames++;
    });
  }

  override send(data: string): void {
    if (JSON.parse(data).op === 3) {
      if (RecordingWebSocket.muteHeartbeats) return;
      RecordingWebSocket.heartbeats++;
    }
    super.send(data);
  }
}

interface Recorded {
  socket: PresentlySocket;
  opens: number;
  inits: Record<string, Presence>[];
  updates: PresenceUpdate[];
  closes: SocketClose[];
  errors: Error[];
}

function open(options: Parameters<PresentlyClient['socket']>[0] = {}): Recorded {
  const socket = client.socket({ WebSocket: RecordingWebSocket, reconnectDelay: FAST_RECONNECT, ...options });
  sockets.push(socket);
  const recorded: Recorded = { socket, opens: 0, inits: [], updates: [], closes: [], errors: [] };
  socket.on('open', () => recorded.opens++);
  socket.on('init', (presences) => recorded.inits.push(presences));
  socket.on('update', (presence) => recorded.updates.push(presence));
  socket.on('close', (close) => recorded.closes.push(close));
  socket.on('error', (error) => recorded.errors.push(error));
  return recorded;
}

/** Changes the user's custom status and waits for the socket to see that very change. */
async function expectUpdate(recorded: Recorded, userId: string): Promise<PresenceUpdate> {
  const text = bump(h, userId);
  return eventually(() => {
    const update = recorded.updates.find(
      (presence) => presence.user_id === userId && presence.custom_status?.text === text,
    );
    if (!update) throw new Error(`no update of ${userId} with "${text}"`);
    return update;
  });
}

beforeAll(async () => {
  h = await startHarness({
    setup: seed,
    socket: { heartbeatIntervalMs: HEARTBEAT_MS },
    env: { SUBSCRIPTIONS_PER_SOCKET: '3' },
  });
  await fixtureReady(h);
  h.app.http.server.on('upgrade', (_request, socket: Duplex) => serverSockets.push(socket));
  client = new PresentlyClient({ baseUrl: h.base });
});

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(sockets.splice(0).map((socket) => socket.close()));
  RecordingWebSocket.opened = [];
  RecordingWebSocket.muteHeartbeats = false;
  serverSockets.length = 0;
});

afterAll(async () => {
  await h?.close();
});

describe.each([
  ['plain JSON', 'none'],
  ['zlib_json', 'zlib_json'],
] as const)('PresentlySocket (%s)', (_name, compression) => {
  it('receives INIT_STATE and live updates, typed', async () => {
    const binaryBefore = RecordingWebSocket.binaryFrames;
    const textBefore = RecordingWebSocket.textFrames;
    const recorded = open({ compression, subscribe: [ALICE, NOBODY] });
    await eventually(() => expect(recorded.inits).toHaveLength(1));
    expect(Object.keys(recorded.inits[0] ?? {})).toEqual([ALICE]);
    expect(recorded.inits[0]?.[ALICE]?.discord_user.id).toBe(ALICE);

    const update = await expectUpdate(recorded, ALICE);
    expect(update.discord_status).toBe('online');
    expect(recorded.updates.every((presence) => presence.user_id === ALICE)).toBe(true);
    expect(recorded.errors).toEqual([]);
    const url = RecordingWebSocket.opened[0] ?? '';
    if (compression === 'zlib_json') {
      expect(url).toBe(`${h.base.replace('http', 'ws')}/socket?compression=zlib_json`);
      expect(RecordingWebSocket.binaryFrames - binaryBefore).toBeGreaterThanOrEqual(3);
      expect(RecordingWebSocket.textFrames).toBe(textBefore);
    } else {
      expect(url).toBe(`${h.base.replace('http', 'ws')}/socket`);
      expect(RecordingWebSocket.binaryFrames).toBe(binaryBefore);
    }
  });

  it('reconnects after the connection is cut, subscribes again and gets the next update', async () => {
    const recorded = open({ compression, subscribe: ALICE });
    await eventually(() => expect(recorded.inits).toHaveLength(1));
    recorded.socket.subscribe(BOB);
    await eventually(() => expect(recorded.inits).toHaveLength(2));

    // What a network drop looks like from the server: the TCP connection is gone, no close frame.
    for (const socket of serverSockets.splice(0)) socket.destroy();
    await eventually(() => expect(recorded.inits).toHaveLength(3));
    expect(recorded.closes).toHaveLength(1);
    expect(recorded.closes[0]?.code).toBe(1006);
    expect(recorded.closes[0]?.reconnectInMs).toBeGreaterThanOrEqual(FAST_RECONNECT.minMs / 2);
    expect(recorded.opens).toBe(2);
    expect(Object.keys(recorded.inits[2] ?? {}).sort()).toEqual([ALICE, BOB].sort());
    expect(RecordingWebSocket.opened).toHaveLength(2);

    await expectUpdate(recorded, BOB);
    await expectUpdate(recorded, ALICE);
  });
});

describe('PresentlySocket protocol', () => {
  it('heartbeats at the interval Hello gives, so the server keeps it (no 4007)', async () => {
    const recorded = open({ subscribe: ALICE });
    await eventually(() => expect(recorded.opens).toBe(1));
    // Four heartbeats on (the server closes a socket silent for two intervals), it is the same socket.
    const from = RecordingWebSocket.heartbeats;
    await eventually(
      () => expect(RecordingWebSocket.heartbeats - from).toBeGreaterThanOrEqual(4),
      10 * HEARTBEAT_MS,
    );
    expect(recorded.closes).toEqual([]);
    expect(recorded.socket.connected).toBe(true);
    await expectUpdate(recorded, ALICE);
  });

  it('reconnects after the server closes it with 4007 (heartbeat timeout)', async () => {
    const recorded = open({ subscribe: ALICE });
    await eventually(() => expect(recorded.opens).toBe(1));
    RecordingWebSocket.muteHeartbeats = true;
    await eventually(() => expect(recorded.closes[0]?.code).toBe(4007), 5_000);
    expect(recorded.closes[0]?.reconnectInMs).not.toBeNull();
    RecordingWebSocket.muteHeartbeats = false;
    await eventually(() => expect(recorded.inits).toHaveLength(2));
    await expectUpdate(recorded, ALICE);
  });

  it('subscribes to all, unsubscribes from ids and from all', async () => {
    const recorded = open({ subscribe: [ALICE, BOB] });
    await eventually(() => expect(recorded.inits).toHaveLength(1));
    recorded.socket.unsubscribe(BOB);
    // An update of Bob now reaches nobody here; Alice's, sent after it, proves it would have arrived.
    const bobText = bump(h, BOB);
    await expectUpdate(recorded, ALICE);
    expect(recorded.updates.some((p) => p.user_id === BOB && p.custom_status?.text === bobText)).toBe(false);

    recorded.socket.subscribeAll();
    await eventually(() => expect(recorded.inits).toHaveLength(2));
    expect(Object.keys(recorded.inits[1] ?? {})).toEqual(expect.arrayContaining([ALICE, BOB, CAROL, ERIN]));
    await expectUpdate(recorded, ERIN);

    recorded.socket.unsubscribeAll();
    const erinText = bump(h, ERIN);
    recorded.socket.subscribe(ALICE);
    await expectUpdate(recorded, ALICE);
    expect(recorded.updates.some((p) => p.custom_status?.text === erinText)).toBe(false);
  });

  it('refuses an id that is not a snowflake without sending it', () => {
    const recorded = open();
    expect(() => recorded.socket.subscribe('not-an-id')).toThrow(TypeError);
    // Twenty digits, but not below 2^64: the server would close the socket over it.
    expect(() => recorded.socket.subscribe('18446744073709551616')).toThrow(TypeError);
    expect(() => recorded.socket.subscribe(['18446744073709551615'])).not.toThrow();
  });

  it('stops, without looping, when the server refuses what it sent (4006)', async () => {
    // A reconnect is a timer of the socket's: with the timers the test's, any it set runs when told.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // SUBSCRIPTIONS_PER_SOCKET is 3 here: a fourth id is a payload the server refuses.
    const recorded = open({ subscribe: [ALICE, BOB, CAROL, ERIN] });
    await eventually(() => expect(recorded.closes).toHaveLength(1));
    expect(recorded.closes[0]).toMatchObject({ code: 4006, reason: 'invalid_payload', reconnectInMs: null });
    expect(recorded.errors.map((error) => error.message).join()).toContain('4006');
    vi.advanceTimersByTime(FAST_RECONNECT.maxMs);
    expect(RecordingWebSocket.opened).toHaveLength(1);
    expect(recorded.socket.connected).toBe(false);
  });

  it('close() ends it for good: no reconnect afterwards', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const recorded = open({ subscribe: ALICE });
    await eventually(() => expect(recorded.opens).toBe(1));
    await recorded.socket.close();
    expect(recorded.closes).toEqual([{ code: 1000, reason: '', reconnectInMs: null }]);
    // Every timer the socket could have set runs now: none opens a socket.
    vi.advanceTimersByTime(FAST_RECONNECT.maxMs);
    expect(RecordingWebSocket.opened).toHaveLength(1);
  });

  it('without a WebSocket given, uses the global one or says what to pass', () => {
    const global = globalThis as { WebSocket?: unknown };
    const before = global.WebSocket;
    try {
      global.WebSocket = undefined;
      expect(() => client.socket()).toThrow(/pass one/);
      global.WebSocket = RecordingWebSocket;
      const socket = client.socket();
      sockets.push(socket);
      expect(RecordingWebSocket.opened).toEqual([`${h.base.replace('http', 'ws')}/socket`]);
    } finally {
      global.WebSocket = before;
    }
  });
});

describe('PresentlySocket in a Node process', () => {
  it('close() leaves nothing behind: the process exits by itself, live or waiting to reconnect', async () => {
    const script = fileURLToPath(new URL('./close-and-exit.ts', import.meta.url));
    const dead = `http://127.0.0.1:${await freePort()}`;
    const { code, signal, output } = await runToExit([script, h.base, dead, ALICE]);
    expect({ code, signal, output: output.trim() }).toEqual({ code: 0, signal: null, output: 'closed' });
  }, 30_000);
});
