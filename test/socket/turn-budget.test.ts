import { describe, expect, it } from 'vitest';
import { TURN_WRITE_BYTES, turnWithRoom } from '../../src/socket/outbound.js';

/** Counts turns of the event loop until stopped: which turn something happened in. */
function turnCounter() {
  let turn = 0;
  let running = true;
  const tick = (): void => {
    if (!running) return;
    turn++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    now: () => turn,
    stop: () => {
      running = false;
    },
  };
}

describe('the per-turn budget of large writes', () => {
  it('lets waiting writes go first come first served, each turn up to the budget', async () => {
    const turns = turnCounter();
    // This turn is full.
    await turnWithRoom(TURN_WRITE_BYTES, () => false);
    const went: Array<{ name: string; turn: number }> = [];
    const write = (name: string, bytes: number) =>
      turnWithRoom(bytes, () => false).then(() => went.push({ name, turn: turns.now() }));
    await Promise.all([
      write('half', TURN_WRITE_BYTES / 2),
      write('whole', TURN_WRITE_BYTES),
      // Would fit beside the first, but the whole one came before it.
      write('small', 1),
    ]);
    turns.stop();
    expect(went.map(({ name }) => name)).toEqual(['half', 'whole', 'small']);
    const [half, whole, small] = went.map(({ turn }) => turn) as [number, number, number];
    expect(whole).toBeGreaterThan(half);
    expect(small).toBeGreaterThan(whole);
  });

  it('lets a write whose connection closed while it waited go without taking room from the rest', async () => {
    const turns = turnCounter();
    await turnWithRoom(TURN_WRITE_BYTES, () => false);
    let closed = false;
    const went: Array<{ name: string; turn: number }> = [];
    const write = (name: string, gone: () => boolean) =>
      turnWithRoom(TURN_WRITE_BYTES, gone).then(() => went.push({ name, turn: turns.now() }));
    const writes = [write('closed', () => closed), write('open', () => false)];
    closed = true;
    await Promise.all(writes);
    turns.stop();
    // Both go in the next turn: the closed one's room went to the open one behind it.
    expect(went.map(({ name }) => name)).toEqual(['closed', 'open']);
    expect(went[0]?.turn).toBe(went[1]?.turn);
  });

  it('takes a write at once while nothing waits and the turn has room', async () => {
    await new Promise((resolve) => setImmediate(resolve));
    let went = false;
    const writing = turnWithRoom(1, () => false).then(() => {
      went = true;
    });
    await Promise.resolve();
    expect(went).toBe(true);
    await writing;
  });
});
