import type { Socket } from 'node:net';
import { type BenchChild, type Message, onMessage, report } from './child.js';

/** What a client did, counted by name: requests answered 429, sockets closed 4009, bytes received… */
export type Tally = Record<string, number>;

export function bump(tally: Tally, name: string, by = 1): void {
  tally[name] = (tally[name] ?? 0) + by;
}

/** Adds `from` into `into`. */
export function addTally(into: Tally, from: Readonly<Tally>): Tally {
  for (const [name, count] of Object.entries(from)) bump(into, name, count);
  return into;
}

/** An attack in a process of its own: started and stopped by the driver, as many times as it likes. */
export interface Attack {
  /** Resolves once every client of the attack is connected and at work. */
  start(): Promise<void>;
  /** Stops every client; resolves with what they did since the start. */
  stop(): Promise<Tally>;
}

/**
 * In an attack process, once it has set up: says `ready`; then `start` answers `engaged`, `stop` answers
 * `stopped` with the tally.
 */
export function serveAttack(attack: Attack): void {
  onMessage('start', () => void attack.start().then(() => report({ type: 'engaged' })));
  onMessage('stop', () => void attack.stop().then((tally) => report({ type: 'stopped', tally })));
  report({ type: 'ready' });
}

/** What a flood served by `serveFlood` did since it was last started, and whether it is at work. */
export interface Flood {
  tally: Tally;
  active: boolean;
}

/**
 * In an attack process of `count` clients that go on until stopped: `start` starts each as `startEach`
 * does, and `stop` ends them, given what `start` returned for each. Says `ready` as serveAttack does.
 */
export function serveFlood<T>(
  count: number,
  start: (i: number, settled: () => void) => T,
  stop: (clients: T[]) => Promise<void>,
): Flood {
  const flood: Flood = { tally: {}, active: false };
  let clients: T[] = [];
  serveAttack({
    start: async () => {
      flood.tally = {};
      flood.active = true;
      const started = startEach(count, start);
      clients = started.clients;
      await started.settled;
    },
    stop: async () => {
      flood.active = false;
      await stop(clients);
      return flood.tally;
    },
  });
  return flood;
}

/**
 * In an attack process: starts `count` clients with `start(i, settled)`; `settled` resolves once each has
 * called its own (at work, or refused: either way done starting), however many times it calls it.
 */
export function startEach<T>(
  count: number,
  start: (i: number, settled: () => void) => T,
): { clients: T[]; settled: Promise<void> } {
  let done = 0;
  let resolve: () => void = () => undefined;
  const settled = new Promise<void>((resolved) => {
    resolve = resolved;
  });
  const clients = Array.from({ length: count }, (_, i) => {
    let once = false;
    return start(i, () => {
      if (once) return;
      once = true;
      if (++done === count) resolve();
    });
  });
  if (count === 0) resolve();
  return { clients, settled };
}

/** In an attack process: ends every connection and waits until each is closed. */
export async function hangUp(sockets: Iterable<Socket>): Promise<void> {
  await Promise.all(
    [...sockets].map(
      (socket) =>
        new Promise<void>((resolve) => {
          if (socket.closed) resolve();
          else socket.once('close', () => resolve()).destroy();
        }),
    ),
  );
}

/**
 * How long an attack may take to be at work: tens of thousands of sockets, each subscribing to a thousand
 * ids, are set up in tens of seconds on a machine shared with the service.
 */
const ENGAGE_TIMEOUT_MS = 300_000;

/** In the driver: starts the attacks and waits until all of them are at work. */
export async function engage(attackers: readonly BenchChild[]): Promise<void> {
  for (const attacker of attackers) attacker.send({ type: 'start' });
  await Promise.all(attackers.map((attacker) => attacker.next('engaged', ENGAGE_TIMEOUT_MS)));
}

/** In the driver: stops the attacks; their tallies, added up. */
export async function disengage(attackers: readonly BenchChild[]): Promise<Tally> {
  for (const attacker of attackers) attacker.send({ type: 'stop' });
  const stopped = await Promise.all(
    attackers.map((attacker) => attacker.next<Message & { tally: Tally }>('stopped', 60_000)),
  );
  return stopped.reduce<Tally>((sum, { tally }) => addTally(sum, tally), {});
}
