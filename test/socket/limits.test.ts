import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SOCKET_COMMAND_BURST } from '../../src/limits/socket-budgets.js';
import { createLogger } from '../../src/log.js';
import { SocketCommands } from '../../src/socket/commands.js';
import { eventually } from '../support/eventually.js';
import type { Harness } from '../support/harness.js';
import { sampleValue, scrape } from '../support/prometheus.js';
import { RawConnection } from '../support/raw-http.js';
import { type Frame, refusedUpgrade, SocketClient, socketUrl, wireFrame } from './client.js';
import {
  ALICE,
  BOB,
  bump,
  CAROL,
  changeKv,
  largeKv,
  NOBODY,
  presenceOf,
  restPresence,
  seededHarness,
  updateFor,
} from './fixture.js';

/**
 * The socket gateway's defences, as a client and an operator see them: a budget of op 2 / op 4 frames per
 * socket (close 4009), `subscribe_to_all` that can be turned off, a cap on the sockets of the process
 * (close 1013), a frame whose handling fails closing that socket alone (1011), and a socket on its way out
 * hearing nothing more.
 */

const ZLIB = '?compression=zlib_json';
const subscribeTo = (id: string) => ({ op: 2, d: { subscribe_to_id: id } });
const inits = (frames: Frame[]) => frames.filter((frame) => frame.t === 'INIT_STATE');
/** Client frames, each as JSON (or as it is, for text), in one TCP write: the server reads them in one go. */
const inOneWrite = (frames: unknown[]): Buffer =>
  Buffer.concat(frames.map((frame) => wireFrame(typeof frame === 'string' ? frame : JSON.stringify(frame))));

let lastAddress = 0;
/** A client address of its own for every socket, unless told (a 4009 keeps its address out for a while). */
const nextAddress = () => `198.51.100.${++lastAddress % 250}`;
const connect = (base: string, query = '', address = nextAddress()) =>
  SocketClient.connect(base, query, { 'x-forwarded-for': address });

/** The refusals the rate-limit counter shows for `limit`. */
async function refusals(h: Harness, limit: string): Promise<number> {
  return sampleValue(await scrape(h.base), 'presently_rate_limited_total', { limit });
}

describe('with the default limits', () => {
  // Behind a trusted proxy, so that each socket can come from an address of its own.
  const service = seededHarness({ env: { TRUST_PROXY: '127.0.0.1' } });

  describe('SOCKET_COMMANDS_PER_MINUTE (60 a minute after a burst of 10)', () => {
    it('10 op 2 frames in a row each get their INIT_STATE; the 11th closes 4009 rate_limited, counted once', async () => {
      const h = service();
      const before = await refusals(h, 'socket_commands');
      const client = await connect(h.base);
      client.writeRaw(inOneWrite(Array.from({ length: SOCKET_COMMAND_BURST + 1 }, () => subscribeTo(ALICE))));
      expect(await client.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
      const answered = inits(client.pending);
      expect(answered.map((frame) => frame.seq)).toEqual(
        Array.from({ length: SOCKET_COMMAND_BURST }, (_, i) => i + 1),
      );
      expect(answered[0]?.d).toEqual(await restPresence(h, ALICE));
      expect(await refusals(h, 'socket_commands')).toBe(before + 1);
    });

    it('heartbeats spend no command: with one between each of the 10 commands, the 11th command is refused', async () => {
      const h = service();
      const before = await refusals(h, 'socket_commands');
      const client = await connect(h.base);
      const frames: unknown[] = [];
      for (let i = 0; i < SOCKET_COMMAND_BURST; i++) {
        if (i > 0) frames.push({ op: 3 });
        frames.push(subscribeTo(i % 2 === 0 ? ALICE : BOB));
      }
      // The command budget is spent by the ten commands, not by the heartbeats (which the frame budget has
      // room for): the next command is the one refused.
      frames.push(subscribeTo(ALICE));
      client.writeRaw(inOneWrite(frames));
      expect(await client.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
      expect(inits(client.pending)).toHaveLength(SOCKET_COMMAND_BURST);
      expect(await refusals(h, 'socket_commands')).toBe(before + 1);
    });

    it('op 4 counts as op 2 does', async () => {
      const h = service();
      const client = await connect(h.base);
      const frames: unknown[] = [];
      for (let i = 0; i < SOCKET_COMMAND_BURST / 2; i++) {
        frames.push(subscribeTo(ALICE), { op: 4, d: { unsubscribe_from_id: ALICE } });
      }
      frames.push({ op: 4, d: { unsubscribe_from_all: true } });
      client.writeRaw(inOneWrite(frames));
      expect(await client.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
      expect(inits(client.pending)).toHaveLength(SOCKET_COMMAND_BURST / 2);
    });

    it('the budget is per socket: another socket of the same client is unaffected', async () => {
      const h = service();
      const address = nextAddress();
      const bystander = await connect(h.base, '', address);
      await bystander.subscribe({ subscribe_to_id: BOB });
      const flooder = await connect(h.base, '', address);
      flooder.writeRaw(
        inOneWrite(Array.from({ length: SOCKET_COMMAND_BURST + 1 }, () => subscribeTo(ALICE))),
      );
      expect((await flooder.closedWith()).code).toBe(4009);

      // Its own budget whole: nine more commands, then updates as ever.
      for (let i = 1; i < SOCKET_COMMAND_BURST; i++) {
        expect((await bystander.subscribe({ subscribe_to_ids: [ALICE, BOB] })).seq).toBe(i + 1);
      }
      const text = bump(h, BOB, 'idle');
      const update = (await bystander.until(updateFor(BOB))).at(-1) as Frame;
      expect(presenceOf(update).custom_status?.text).toBe(text);
      expect(bystander.closeEvent).toBeUndefined();
      // A new socket from that address is refused until a budget would have filled up again, so
      // reconnecting is no way around it; from any other address, a socket has a whole budget.
      const refused = await refusedUpgrade(socketUrl(h.base), { 'x-forwarded-for': address });
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(10);
      expect(JSON.parse(refused.body)).toEqual({
        success: false,
        error: { code: 'rate_limited', message: expect.stringContaining('try again in') },
      });
      const newcomer = await connect(h.base);
      for (let i = 0; i < SOCKET_COMMAND_BURST; i++) await newcomer.subscribe({ subscribe_to_id: CAROL });
    });
  });

  describe('a socket on its way out hears nothing more', () => {
    it.each([
      ['unknown_opcode', '{"op":7}', 4004],
      ['requires_data_object', '{"op":2}', 4005],
      ['invalid_payload', 'not json', 4006],
    ])(
      'a bad frame (%s) and a subscribe in one TCP write: closed with the bad frame’s code, no INIT_STATE',
      async (reason, bad, code) => {
        const h = service();
        const client = await connect(h.base);
        client.writeRaw(inOneWrite([bad, subscribeTo(ALICE), { op: 2, d: { subscribe_to_all: true } }]));
        expect(await client.closedWith()).toEqual({ code, reason });
        expect(client.pending).toEqual([]);
      },
    );
    it('frames that came with the one that spent the budget are not heard: the refusal is counted once', async () => {
      const h = service();
      const before = await refusals(h, 'socket_commands');
      const client = await connect(h.base);
      client.writeRaw(inOneWrite(Array.from({ length: 3 * SOCKET_COMMAND_BURST }, () => subscribeTo(ALICE))));
      expect((await client.closedWith()).code).toBe(4009);
      expect(inits(client.pending)).toHaveLength(SOCKET_COMMAND_BURST);
      expect(await refusals(h, 'socket_commands')).toBe(before + 1);
    });
  });
});

describe('SOCKET_COMMANDS_PER_MINUTE=0', () => {
  const service = seededHarness({ env: { SOCKET_COMMANDS_PER_MINUTE: '0' } });

  it('never closes: 50 commands in a row are all answered, and updates still come', async () => {
    const h = service();
    const client = await connect(h.base, ZLIB);
    client.writeRaw(
      inOneWrite(Array.from({ length: 50 }, () => ({ op: 2, d: { subscribe_to_ids: [ALICE, NOBODY] } }))),
    );
    const answered = await client.until((received) => received.seq === 50);
    expect(inits(answered)).toHaveLength(50);
    bump(h, ALICE);
    expect((await client.next()).seq).toBe(51);
    expect(client.closeEvent).toBeUndefined();
    expect(await refusals(h, 'socket_commands')).toBe(0);
  });
});

describe('SUBSCRIBE_TO_ALL=false', () => {
  const service = seededHarness({ env: { SUBSCRIBE_TO_ALL: 'false' } });

  it('subscribe_to_all closes 4006 with a reason saying it is turned off', async () => {
    const h = service();
    for (const query of ['', ZLIB]) {
      const client = await connect(h.base, query);
      client.send({ op: 2, d: { subscribe_to_all: true } });
      expect(await client.closedWith()).toEqual({
        code: 4006,
        reason: 'invalid_payload: subscribe_to_all is turned off on this server',
      });
      expect(client.pending).toEqual([]);
    }
  });

  it('also alongside ids, and after subscriptions that worked', async () => {
    const h = service();
    const client = await connect(h.base);
    await client.subscribe({ subscribe_to_id: ALICE });
    client.send({ op: 2, d: { subscribe_to_ids: [BOB], subscribe_to_all: true } });
    expect((await client.closedWith()).code).toBe(4006);
    expect(client.pending).toEqual([]);
  });

  it('subscribe_to_id and subscribe_to_ids work as ever, so do subscribe_to_all: false and unsubscribe_from_all', async () => {
    const h = service();
    const client = await connect(h.base);
    expect((await client.subscribe({ subscribe_to_id: ALICE })).d).toEqual(await restPresence(h, ALICE));
    const map = await client.subscribe({ subscribe_to_ids: [BOB, CAROL, NOBODY], subscribe_to_all: false });
    expect(map.d).toEqual({ [BOB]: await restPresence(h, BOB), [CAROL]: await restPresence(h, CAROL) });
    bump(h, BOB);
    expect((await client.until(updateFor(BOB))).at(-1)?.seq).toBe(3);
    client.send({ op: 4, d: { unsubscribe_from_all: true } });
    expect((await client.subscribe({ subscribe_to_ids: [] })).d).toEqual({});
    expect(client.closeEvent).toBeUndefined();
  });
});

describe('MAX_SOCKETS=2', () => {
  const service = seededHarness({ env: { MAX_SOCKETS: '2' } });

  it('a third socket is accepted, then closed 1013 try_again_later; once one of the two closes, a new one is accepted', async () => {
    const h = service();
    const before = await refusals(h, 'max_sockets');
    const first = await connect(h.base);
    const second = await connect(h.base, ZLIB);
    const third = await SocketClient.open(socketUrl(h.base));
    expect(await third.closedWith()).toEqual({ code: 1013, reason: 'try_again_later' });
    expect(third.frames).toEqual([]); // not even Hello
    expect(await refusals(h, 'max_sockets')).toBe(before + 1);
    expect(h.app.sockets.socketCount).toBe(2);

    // The two it holds are untouched.
    await first.subscribe({ subscribe_to_id: ALICE });
    await second.subscribe({ subscribe_to_id: ALICE });

    await first.close();
    const replacement = await eventually(() => connect(h.base));
    expect((await replacement.subscribe({ subscribe_to_id: ALICE })).d).toEqual(await restPresence(h, ALICE));
    const again = await SocketClient.open(socketUrl(h.base));
    expect((await again.closedWith()).code).toBe(1013);
  });

  it('a refused socket that sends a broken frame at once does not bring the process down', async () => {
    const h = service();
    await connect(h.base);
    await connect(h.base);
    // The upgrade and a frame with a reserved opcode in one TCP write: ws reads the frame as the close
    // is under way, and reports it as an error event on a socket nobody listens to otherwise.
    const raw = await RawConnection.open(h.base);
    await raw.write(
      'GET /socket HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' +
        wireFrame('{"op":2}', 0x3).toString('latin1'),
    );
    await raw.waitFor(/^HTTP\/1\.1 101 /);
    await raw.closed;
    expect((await fetch(`${h.base}/v1/users/${ALICE}`)).status).toBe(200);
    expect(h.app.sockets.socketCount).toBe(2);
  });
});

describe('a frame whose handling fails', () => {
  const lines: string[] = [];
  /** Asking the presence source for this user throws. */
  const BROKEN = '90000000000000666';
  const service = seededHarness({
    logger: createLogger('info', false, { write: (line: string) => void lines.push(line) }),
  });

  beforeAll(() => {
    const { registry } = service().app;
    const get = registry.get.bind(registry);
    vi.spyOn(registry, 'get').mockImplementation((userId: string) => {
      if (userId === BROKEN) throw new Error('the presence source failed');
      return get(userId);
    });
  });

  afterAll(() => {
    vi.restoreAllMocks();
  });

  const errorLines = () =>
    lines
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((line) => line.level >= 50);

  it('closes that socket 1011 internal_error, logs one error, and every other socket goes on', async () => {
    const h = service();
    const logged = errorLines().length;
    const bystander = await connect(h.base);
    await bystander.subscribe({ subscribe_to_ids: [ALICE, BOB] });
    const failing = await connect(h.base);
    await failing.subscribe({ subscribe_to_id: ALICE });

    failing.send(subscribeTo(BROKEN));
    expect(await failing.closedWith()).toEqual({ code: 1011, reason: 'internal_error' });
    expect(failing.pending).toEqual([]);

    const text = bump(h, ALICE);
    const update = (await bystander.until(updateFor(ALICE))).at(-1) as Frame;
    expect(presenceOf(update).custom_status?.text).toBe(text);
    const fresh = await connect(h.base);
    expect((await fresh.subscribe({ subscribe_to_id: ALICE })).d).toEqual(await restPresence(h, ALICE));

    const errors = errorLines().slice(logged);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      msg: expect.stringMatching(/^socket failed/),
      err: { message: 'the presence source failed' },
    });
  });

  it('the same when it fails while a large INIT_STATE is being written', async () => {
    const h = service();
    await changeKv(h, BOB, largeKv(200_000, 'bob'));
    await eventually(() => expect(h.app.registry.get(BOB)?.body.length).toBeGreaterThan(200_000));
    const logged = errorLines().length;
    const bystander = await connect(h.base, ZLIB);
    await bystander.subscribe({ subscribe_to_id: ALICE });
    for (const query of ['', ZLIB]) {
      const failing = await connect(h.base, query);
      // Bob's presence is written first, in fragments; the source fails on the next id.
      failing.send({ op: 2, d: { subscribe_to_ids: [BOB, BROKEN] } });
      expect(await failing.closedWith()).toEqual({ code: 1011, reason: 'internal_error' });
      expect(failing.pending).toEqual([]);
    }
    bump(h, ALICE);
    await bystander.until(updateFor(ALICE));
    expect(errorLines().slice(logged)).toHaveLength(2);
    await changeKv(h, BOB, {});
  });
});

describe('a client that keeps opening sockets after its 4009', () => {
  const service = seededHarness({ env: { TRUST_PROXY: '127.0.0.1' }, abuseRefusalDelayMs: 1_000 });

  it('waits for each refusal, while every other client is served meanwhile', async () => {
    const h = service();
    const address = nextAddress();
    const flooder = await connect(h.base, '', address);
    flooder.writeRaw(inOneWrite(Array.from({ length: SOCKET_COMMAND_BURST + 1 }, () => subscribeTo(ALICE))));
    expect((await flooder.closedWith()).code).toBe(4009);

    const order: string[] = [];
    const held = refusedUpgrade(socketUrl(h.base), { 'x-forwarded-for': address }).then((refused) => {
      order.push(`refused ${refused.statusCode}`);
      return refused;
    });
    const other = await connect(h.base);
    await other.subscribe({ subscribe_to_id: BOB });
    order.push('served');
    expect((await held).statusCode).toBe(429);
    expect(order).toEqual(['served', 'refused 429']);
  });
});

describe('large commands from many sockets at once', () => {
  const service = seededHarness({ env: { TRUST_PROXY: '127.0.0.1' } });
  /** An op 2 of more than a kilobyte: it waits its turn in the command queue. */
  const large = (n: number) => ({
    op: 2,
    d: {
      subscribe_to_ids: [
        ALICE,
        ...Array.from({ length: 80 }, (_, i) => String(10n ** 17n + BigInt(n * 100 + i))),
      ],
    },
  });

  it('are answered in order, each socket its burst and then 4009, while a small subscription is answered at once', async () => {
    const h = service();
    const flooders = await Promise.all(Array.from({ length: 5 }, () => connect(h.base)));
    for (const flooder of flooders) {
      flooder.writeRaw(inOneWrite(Array.from({ length: 3 * SOCKET_COMMAND_BURST }, (_, n) => large(n))));
    }
    const bystander = await connect(h.base);
    expect(Object.keys((await bystander.subscribe({ subscribe_to_ids: [BOB] })).d as object)).toEqual([BOB]);
    for (const flooder of flooders) {
      expect(await flooder.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
      const answered = inits(flooder.pending);
      expect(answered.map((frame) => frame.seq)).toEqual(
        Array.from({ length: SOCKET_COMMAND_BURST }, (_, i) => i + 1),
      );
      for (const frame of answered) expect(Object.keys(frame.d as object)).toEqual([ALICE]);
    }
    expect(bystander.closeEvent).toBeUndefined();
  });

  it('are read in their turns of the queue, none in the turn it arrives', async () => {
    const h = service();
    const proto = SocketCommands.prototype as unknown as { arrived(...args: unknown[]): void };
    const arrived = proto.arrived;
    const parse = JSON.parse;
    let arriving = false;
    let readOnArrival = 0;
    const arrivals = vi.spyOn(proto, 'arrived').mockImplementation(function (this: unknown, ...args) {
      arriving = true;
      try {
        arrived.apply(this, args);
      } finally {
        arriving = false;
      }
    });
    const parses = vi.spyOn(JSON, 'parse').mockImplementation((...args: Parameters<typeof JSON.parse>) => {
      if (arriving) readOnArrival++;
      return parse(...args);
    });
    try {
      const flooders = await Promise.all(Array.from({ length: 5 }, () => connect(h.base)));
      for (const flooder of flooders) {
        flooder.writeRaw(inOneWrite(Array.from({ length: 3 * SOCKET_COMMAND_BURST }, (_, n) => large(n))));
      }
      for (const flooder of flooders) {
        expect(await flooder.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
        expect(inits(flooder.pending)).toHaveLength(SOCKET_COMMAND_BURST);
      }
      expect(arrivals.mock.calls.length).toBeGreaterThanOrEqual(5 * SOCKET_COMMAND_BURST);
      expect(readOnArrival).toBe(0);
    } finally {
      arrivals.mockRestore();
      parses.mockRestore();
    }
  });
});

describe('a client that opens a new socket for every burst of commands', () => {
  const service = seededHarness({ env: { TRUST_PROXY: '127.0.0.1', SOCKETS_PER_IP: '2' } });

  it('gets no fresh budget: over all its sockets, what SOCKETS_PER_IP sockets may send together', async () => {
    const h = service();
    const address = nextAddress();
    for (let round = 0; round < 2; round++) {
      const socket = await connect(h.base, '', address);
      for (let i = 0; i < SOCKET_COMMAND_BURST; i++) await socket.subscribe({ subscribe_to_id: ALICE });
      socket.ws.terminate();
      await socket.closed;
    }
    const third = await connect(h.base, '', address);
    third.send(subscribeTo(ALICE));
    expect(await third.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
    // Another client is not touched.
    const other = await connect(h.base);
    expect((await other.subscribe({ subscribe_to_id: ALICE })).t).toBe('INIT_STATE');
  });
});

describe('frames larger than a heartbeat', () => {
  const service = seededHarness({ env: { TRUST_PROXY: '127.0.0.1' } });
  const bigHeartbeat = JSON.stringify({ op: 3, d: 'x'.repeat(60_000) });

  it('count as commands, heartbeat or not: the eleventh large heartbeat closes 4009', async () => {
    const h = service();
    const client = await connect(h.base);
    client.writeRaw(inOneWrite(Array.from({ length: SOCKET_COMMAND_BURST + 1 }, () => bigHeartbeat)));
    expect(await client.closedWith()).toEqual({ code: 4009, reason: 'rate_limited' });
  });

  it('nested deeper than any command are refused 4006 unparsed; a small heartbeat is no command', async () => {
    const h = service();
    const client = await connect(h.base);
    client.writeRaw(inOneWrite(Array.from({ length: SOCKET_COMMAND_BURST + 1 }, () => ({ op: 3 }))));
    expect((await client.subscribe({ subscribe_to_id: ALICE })).t).toBe('INIT_STATE');
    client.writeRaw(wireFrame(`{"op":3,"d":${'['.repeat(30_000)}${']'.repeat(30_000)}}`));
    expect(await client.closedWith()).toEqual({ code: 4006, reason: 'invalid_payload' });
  });
});

describe('commands waiting in the queue for a socket that goes away', () => {
  const service = seededHarness({ env: { TRUST_PROXY: '127.0.0.1' } });
  const many = (n: number) => ({
    op: 2,
    d: {
      subscribe_to_ids: Array.from({ length: 1000 }, (_, i) => String(10n ** 17n + BigInt(n * 1000 + i))),
    },
  });

  it('subscribe it to nothing: what it held is let go with it', async () => {
    const h = service();
    const busy = await Promise.all(Array.from({ length: 5 }, () => connect(h.base)));
    const leaving = await Promise.all(Array.from({ length: 5 }, () => connect(h.base)));
    // The queue is full of the busy sockets' work when the others' commands come, and their closes after.
    for (const socket of busy) socket.writeRaw(inOneWrite(Array.from({ length: 8 }, (_, n) => many(n))));
    for (const socket of leaving) {
      socket.writeRaw(inOneWrite([many(9), { op: 2, d: { subscribe_to_all: true } }]));
      // Closed as a client closes: its frames, then its close, while its commands still wait their turn.
      socket.ws.close();
    }
    await Promise.all(leaving.map((socket) => socket.closed));
    for (const socket of busy) socket.ws.terminate();
    await eventually(() => {
      expect(h.app.sockets.socketCount).toBe(0);
      expect(h.app.sockets.subscriptions.count).toBe(0);
      expect(h.app.sockets.subscriptions.subscriberCount).toBe(0);
    });
    // A later command of another socket proves the queue has been worked through.
    const probe = await connect(h.base);
    expect((await probe.subscribe(many(1).d)).t).toBe('INIT_STATE');
    probe.ws.terminate();
    await eventually(() => expect(h.app.sockets.subscriptions.count).toBe(0));
  });
});
