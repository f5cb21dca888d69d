import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HistoryMemories } from '../../src/history/memories.js';
import { type HistoryMemory, memoryOf } from '../../src/model/history.js';
import type { DiscordStatus } from '../../src/presence/model.js';

const STATUSES: (DiscordStatus | null)[] = [null, 'online', 'idle', 'dnd', 'offline'];
/** A few snowflakes (leading digits alike, so they share buckets), and ids that are none. */
const IDS = [
  ...Array.from({ length: 40 }, (_, n) => String(80351110224678912n + BigInt(n) * 1024n)),
  '1',
  '0012',
  'not-an-id',
  '',
];

const memory: fc.Arbitrary<HistoryMemory> = fc
  .record({
    status: fc.constantFrom(...STATUSES),
    live: fc.boolean(),
    play: fc.option(
      fc.record({
        identity: fc.string(),
        start: fc.option(fc.nat(), { nil: null }),
        end: fc.option(fc.nat(), { nil: null }),
        paused: fc.boolean(),
      }),
      { nil: null },
    ),
  })
  .map(({ status, live, play }) => memoryOf(status, play, live));

const operation = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), id: fc.constantFrom(...IDS), memory }),
  fc.record({ kind: fc.constant('delete' as const), id: fc.constantFrom(...IDS) }),
);

describe('HistoryMemories', () => {
  it('holds what a map by id would, whatever is set and deleted, in any order', () => {
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 300 }), (operations) => {
        const memories = new HistoryMemories();
        const model = new Map<string, HistoryMemory>();
        for (const op of operations) {
          if (op.kind === 'set') {
            memories.set(op.id, op.memory);
            model.set(op.id, op.memory);
          } else {
            memories.delete(op.id);
            model.delete(op.id);
          }
        }
        expect(memories.size).toBe(model.size);
        for (const id of IDS) expect(memories.get(id)).toEqual(model.get(id));
        expect(new Map(memories.entries())).toEqual(model);
      }),
      { numRuns: 300 },
    );
  });

  it('gives back the shared memory of a status alone, and the very object of a play', () => {
    const memories = new HistoryMemories();
    const id = '80351110224678912';
    memories.set(id, memoryOf('idle', null, true));
    expect(memories.get(id)).toBe(memoryOf('idle', null, true));
    const playing = memoryOf('online', { identity: 't', start: 1, end: 2, paused: false }, true);
    memories.set(id, playing);
    expect(memories.get(id)).toBe(playing);
    memories.set(id, memoryOf('offline', null, false));
    expect(memories.get(id)).toBe(memoryOf('offline', null, false));
  });

  it('holds a hundred thousand users', () => {
    const memories = new HistoryMemories();
    const ids = Array.from({ length: 100_000 }, (_, n) => String(90000000000000000n + BigInt(n) * 7n));
    ids.forEach((id, n) => {
      memories.set(id, memoryOf(STATUSES[n % 5] as DiscordStatus | null, null, n % 2 === 0));
    });
    ids.forEach((id, n) => {
      if (n % 3 === 0) memories.delete(id);
    });
    expect(memories.size).toBe(100_000 - Math.ceil(100_000 / 3));
    ids.forEach((id, n) => {
      expect(memories.get(id)).toEqual(
        n % 3 === 0 ? undefined : memoryOf(STATUSES[n % 5] as DiscordStatus | null, null, n % 2 === 0),
      );
    });
  });
});
