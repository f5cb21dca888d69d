import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  framePace,
  SOCKET_COMMAND_BURST,
  SOCKET_FRAME_BURST_BEYOND_COMMANDS,
  SocketBudgets,
} from '../../src/limits/socket-budgets.js';
import type { TokenBucket } from '../../src/limits/token-bucket.js';

/** The budgets of what sockets send, on a clock the test moves. */

afterEach(() => {
  vi.useRealTimers();
});

/** How many commands `own` and its client's budget let through right now, taking them. */
function drain(budgets: SocketBudgets, own: TokenBucket, client: string): number {
  let taken = 0;
  while (budgets.takeCommand(own, client)) taken++;
  return taken;
}

describe('the budgets of what sockets send', () => {
  it('a socket: a burst of commands, then refused; its client refused new sockets until it would be whole', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const budgets = new SocketBudgets(60, 30_000, 3);
    expect(drain(budgets, budgets.commandBucket(), '192.0.2.1')).toBe(SOCKET_COMMAND_BURST);
    // A burst of 10 at 60 a minute fills again in 10 s.
    expect(budgets.refusedFor('192.0.2.1')).toBe(10_000);
    expect(budgets.refusedFor('192.0.2.2')).toBeLessThanOrEqual(0);
    vi.advanceTimersByTime(10_000);
    expect(budgets.refusedFor('192.0.2.1')).toBe(0);
  });

  it('a client: what SOCKETS_PER_IP sockets may send together, however many it opens', () => {
    const budgets = new SocketBudgets(60, 30_000, 2);
    const sent = [0, 1, 2, 3].map(() => drain(budgets, budgets.commandBucket(), '192.0.2.1'));
    expect(sent).toEqual([SOCKET_COMMAND_BURST, SOCKET_COMMAND_BURST, 0, 0]);
    expect(drain(budgets, budgets.commandBucket(), '192.0.2.2')).toBe(SOCKET_COMMAND_BURST);
  });

  it('frames: the commands’ burst and some more, per socket and per client alike', () => {
    const budgets = new SocketBudgets(60, 30_000, 1);
    const own = budgets.frameBucket();
    let taken = 0;
    while (budgets.takeFrame(own, '192.0.2.1')) taken++;
    expect(taken).toBe(SOCKET_COMMAND_BURST + SOCKET_FRAME_BURST_BEYOND_COMMANDS);
    expect(budgets.refusedFor('192.0.2.1')).toBeGreaterThan(0);
  });

  it('no budget with SOCKET_COMMANDS_PER_MINUTE=0, nor a client’s with SOCKETS_PER_IP=0', () => {
    expect(framePace(0, 30_000)).toEqual({ burst: 0, perMinute: 0 });
    const off = new SocketBudgets(0, 30_000, 3);
    const own = off.commandBucket();
    for (let i = 0; i < 100; i++) expect(off.takeCommand(own, '192.0.2.1')).toBe(true);
    const perSocketOnly = new SocketBudgets(60, 30_000, 0);
    const sent = [0, 1, 2].map(() => drain(perSocketOnly, perSocketOnly.commandBucket(), '192.0.2.1'));
    expect(sent).toEqual([SOCKET_COMMAND_BURST, SOCKET_COMMAND_BURST, SOCKET_COMMAND_BURST]);
  });
});
