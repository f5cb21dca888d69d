import { setTimeout as sleep } from 'node:timers/promises';
import { HEARTBEAT_INTERVAL_MS } from '../../src/socket/protocol.js';
import { type BenchChild, type Message, startChild } from '../lib/child.js';
import { openFiles, raiseFileLimit } from '../lib/fd-limit.js';
import { MEMORY_FLAGS, type MemoryUsage, memoryOf } from '../lib/memory.js';
import type { Row } from '../lib/results.js';
import { startService } from '../lib/service.js';
import { formatNumber } from '../lib/stats.js';

const SOCKETS = 20_000;
/** Monitored users the sockets subscribe to, in turn: 20 sockets per user. */
const USERS = 1_000;
/** Client processes per server, each binding its sockets to ADDRESSES_PER_CLIENT loopback addresses. */
const CLIENTS = 2;
const ADDRESSES_PER_CLIENT = 8;
/**
 * How long every socket is held idle before the measurement: past twice the heartbeat interval and the
 * next sweep (every half interval), so each socket has heartbeated at least twice, and one that had not
 * would have been closed with 4007 before it.
 */
const HOLD_MS = 2 * HEARTBEAT_INTERVAL_MS + 20_000;
/** File descriptors left to a server besides its sockets and what it has open at rest. */
const FD_HEADROOM = 64;
const KB = 1_000;

interface Sockets extends Message {
  open: number;
  /** The service only: sockets holding a subscription. */
  subscribed?: number;
  /** The service only: whether the subscriptions of sockets gone are let go. */
  tidied?: boolean;
}

interface ClientStatus extends Message {
  done: number;
  open: number;
  closed: number;
  closeCodes: Record<string, number>;
  heartbeats: number;
}

interface Side {
  name: string;
  server: BenchChild;
  url: string;
  clients: BenchChild[];
  connectSeconds: number;
}

/**
 * `sockets` sockets to one server, from CLIENTS processes (fewer sockets each than a process may open),
 * each on loopback addresses of its own from `firstAddress` (127.0.0.<n>): one source address has
 * ~28,000 ephemeral ports, which stay in TIME_WAIT a minute after a run, and binding to an address slows
 * as its ports fill up, so 1,250 sockets per address. Resolves when every socket is subscribed (lanyard)
 * or open (bare).
 */
async function connect(side: Side, sockets: number, mode: 'lanyard' | 'bare', firstAddress: number) {
  const started = process.hrtime.bigint();
  const share = Math.ceil(sockets / CLIENTS);
  for (let c = 0; c < CLIENTS; c++) {
    const addresses = Array.from(
      { length: ADDRESSES_PER_CLIENT },
      (_, a) => `127.0.0.${firstAddress + c * ADDRESSES_PER_CLIENT + a}`,
    );
    const client = startChild('capacity-client', [], {
      URL: side.url,
      SOCKETS: String(Math.min(share, sockets - c * share)),
      FIRST: String(c * share),
      USERS: String(USERS),
      ADDRESSES: addresses.join(','),
      MODE: mode,
    });
    side.clients.push(client);
  }
  await Promise.all(side.clients.map((client) => client.next('ready', 300_000)));
  side.connectSeconds = Number(process.hrtime.bigint() - started) / 1e9;
}

/** Throws unless the server holds every socket (subscribed, for the service) and no client saw a close. */
async function check(side: Side, sockets: number, subscribed: boolean): Promise<string> {
  side.server.send({ type: 'sockets' });
  const held = await side.server.next<Sockets>('sockets');
  const statuses = await Promise.all(
    side.clients.map((client) => {
      client.send({ type: 'status' });
      return client.next<ClientStatus>('status');
    }),
  );
  const sum = (key: 'done' | 'open' | 'closed' | 'heartbeats') =>
    statuses.reduce((total, status) => total + status[key], 0);
  const codes = statuses.flatMap((status) => Object.entries(status.closeCodes));
  const heartbeats = sum('heartbeats');
  const problems = [
    held.open !== sockets && `the server holds ${held.open} sockets`,
    subscribed && held.subscribed !== sockets && `${held.subscribed} are subscribed`,
    sum('done') !== sockets && `${sum('done')} were subscribed at the client`,
    sum('open') !== sockets && `${sum('open')} are open at the client`,
    sum('closed') > 0 && `${sum('closed')} closed (${codes.map(([code, n]) => `${n}× ${code}`).join(', ')})`,
    heartbeats < 2 * sockets && `only ${heartbeats} heartbeats were sent`,
  ].filter((problem) => problem !== false);
  if (problems.length > 0) {
    throw new Error(`socket-capacity, ${side.name}: of ${sockets} sockets, ${problems.join('; ')}`);
  }
  return `${formatNumber(heartbeats / sockets)} heartbeats per socket`;
}

/** After the last socket is gone, how long a server's stall is still looked for: the work its closes left. */
const AFTER_HANG_UP_MS = 2_000;

/**
 * Every client of the side closes all its sockets at once: destroyed, as a machine or a proxy going away
 * does, or each with a closing handshake. The longest the server's event loop was held up from then until
 * it holds none and has let go of their subscriptions, and AFTER_HANG_UP_MS more, in ms.
 */
async function hangUp(side: Side, how: 'destroy' | 'close'): Promise<number> {
  await side.server.loopDelay();
  for (const client of side.clients) client.send({ type: 'hang-up', how });
  await Promise.all(side.clients.map((client) => client.next('hung-up', 120_000)));
  for (;;) {
    side.server.send({ type: 'sockets' });
    const held = await side.server.next<Sockets>('sockets');
    if (held.open === 0 && held.tidied !== false) break;
    await sleep(50);
  }
  await sleep(AFTER_HANG_UP_MS);
  return (await side.server.loopDelay()).maxMs;
}

/** A row of the longest stalls while the service's and the bare server's sockets closed: `[service, bare]`. */
function stallRow(figure: string, stalls: readonly [number, number], how: string): Row {
  return {
    scenario: 'socket-capacity',
    figure,
    value: stalls[0],
    unit: 'ms',
    baseline: { label: 'bare ws, the same sockets closing', value: stalls[1] },
    target: { text: '≤ 1×', met: stalls[0] <= stalls[1] },
    notes:
      `${how}; the stall is the longest gap between turns of the server's event loop (monitorEventLoopDelay) ` +
      `from then until it holds no socket and has let go of their subscriptions, and ` +
      `${AFTER_HANG_UP_MS / 1000} s more; the service's side first, then the bare server's`,
  };
}

/** What holding the sockets added, per socket, in KB. */
const perSocket = (idle: MemoryUsage, held: MemoryUsage, key: 'rss' | 'heapUsed', sockets: number) =>
  (held[key] - idle[key]) / sockets / KB;
const mb = (bytes: number) => `${formatNumber(bytes / 1e6)} MB`;

/**
 * 20,000 idle sockets in one service process, each subscribed to one of 1,000 monitored users and
 * heartbeating as Lanyard's protocol asks, against a bare `ws` server holding as many idle sockets: what
 * one more connected client costs the service in memory. RSS and heap are read settled after full GCs, once
 * before any socket and once after every socket has been held idle through two heartbeats; the figure is
 * the difference over the sockets. Both servers hold their sockets at the same time, each with client
 * processes of its own.
 *
 * A process needs an fd per socket, so the scenario raises its open-file limit (the children inherit it)
 * with prlimit. Where the hard limit is below what 20,000 sockets need and cannot be raised, both servers
 * hold as many sockets as the limit leaves room for, and the row says so.
 */
export async function socketCapacity(): Promise<Row[]> {
  const { limit, shortBecause } = raiseFileLimit(process.pid, SOCKETS + 1_024);
  const sides: Side[] = [];
  // The service and its simulated Discord.
  const services: BenchChild[] = [];
  try {
    const { child: service, ready } = await startService(services, { users: USERS, nodeFlags: MEMORY_FLAGS });
    sides.push({ name: 'service', server: service, url: ready.url, clients: [], connectSeconds: 0 });
    const bare = startChild('idle-ws', [], {}, MEMORY_FLAGS);
    sides.push({ name: 'bare ws', server: bare, url: '', clients: [], connectSeconds: 0 });
    (sides[1] as Side).url = (await bare.next<Message & { url: string }>('ready')).url;
    const [served, floor] = sides as [Side, Side];
    // Start-up leaves work behind (the registry's first snapshots, lazy compilation); let it finish.
    await sleep(3_000);
    const idle = [await memoryOf(served.server), await memoryOf(floor.server)] as const;
    const atRest = Math.max(...sides.map((side) => openFiles(side.server.process.pid as number)));
    const sockets = Math.min(SOCKETS, limit - atRest - FD_HEADROOM);
    // With far fewer sockets the figure would be the process's fixed costs more than a socket's.
    if (sockets < SOCKETS / 10) {
      throw new Error(
        `socket-capacity: an open-file limit of ${limit} leaves room for ${sockets} sockets (${shortBecause})`,
      );
    }

    await connect(served, sockets, 'lanyard', 2);
    await connect(floor, sockets, 'bare', 2 + CLIENTS * ADDRESSES_PER_CLIENT);
    await sleep(HOLD_MS);
    const held = [await memoryOf(served.server), await memoryOf(floor.server)] as const;
    const heartbeats = await check(served, sockets, true);
    await check(floor, sockets, false);
    // One side at a time: the other's closes would share the cores.
    const destroyed = [await hangUp(served, 'destroy'), await hangUp(floor, 'destroy')] as const;
    const connectSeconds = [served.connectSeconds, floor.connectSeconds] as const;
    for (const side of sides) {
      for (const client of side.clients.splice(0)) await client.stop();
    }
    await connect(served, sockets, 'lanyard', 2);
    await connect(floor, sockets, 'bare', 2 + CLIENTS * ADDRESSES_PER_CLIENT);
    const handshaken = [await hangUp(served, 'close'), await hangUp(floor, 'close')] as const;

    const rss = perSocket(idle[0], held[0], 'rss', sockets);
    const count = formatNumber(sockets);
    const limitNote =
      sockets < SOCKETS
        ? `only ${count} sockets, not ${formatNumber(SOCKETS)}: the open-file limit is ${formatNumber(limit)} ` +
          `and could not be raised (${shortBecause}); the servers hold ${atRest} fds at rest. `
        : '';
    const change = (key: 'rss' | 'heapUsed', i: 0 | 1) => `${mb(idle[i][key])} idle → ${mb(held[i][key])}`;
    const heapTotal = (i: 0 | 1) => `${mb(idle[i].heapTotal)} → ${mb(held[i].heapTotal)}`;
    return [
      {
        scenario: 'socket-capacity',
        figure: `RSS per idle subscribed socket above the idle process, ${count} sockets`,
        value: rss,
        unit: 'KB',
        baseline: { label: 'bare ws, same idle sockets', value: perSocket(idle[1], held[1], 'rss', sockets) },
        target: { text: '≤ 20 KB', met: rss <= 20 },
        notes:
          limitNote +
          `RSS settled after full GCs: service ${change('rss', 0)}, bare ws ${change('rss', 1)} (1 KB = 1,000 B); ` +
          `each socket subscribed to one of ${formatNumber(USERS)} users, then held idle ${HOLD_MS / 1000} s ` +
          `(${heartbeats}, none closed); connecting and subscribing them took ${formatNumber(connectSeconds[0])} s ` +
          `(bare: connecting ${formatNumber(connectSeconds[1])} s), clients and servers sharing the cores`,
      },
      {
        scenario: 'socket-capacity',
        figure: 'JS heap used per idle subscribed socket',
        value: perSocket(idle[0], held[0], 'heapUsed', sockets),
        unit: 'KB',
        baseline: { label: 'bare ws', value: perSocket(idle[1], held[1], 'heapUsed', sockets) },
        target: null,
        notes:
          `heap used settled after full GCs: service ${change('heapUsed', 0)}, bare ws ${change('heapUsed', 1)}; ` +
          `heap total service ${heapTotal(0)}, bare ws ${heapTotal(1)}: heap pages the idle process already ` +
          'had count in its idle RSS, so RSS can grow by less than the heap',
      },
      stallRow(
        `longest event-loop stall while ${count} idle subscribed sockets are destroyed at once`,
        destroyed,
        'the client processes destroy every socket in one go (no closing handshake), as a machine or a proxy going away does',
      ),
      stallRow(
        `longest event-loop stall while ${count} idle subscribed sockets close at once with a closing handshake`,
        handshaken,
        'the same sockets connected again, then each closed by its client with a close frame (1000) in one go',
      ),
    ];
  } finally {
    // Clients first: a server going away first would close its sockets at them.
    for (const side of sides) for (const client of side.clients) await client.stop();
    for (const side of sides) await side.server.stop();
    // The service went above; its simulated Discord after it.
    for (const child of services) await child.stop();
  }
}
