import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Snowflake } from '../../src/presence/model.js';
import { type Missed, ReplayRing } from '../../src/sse/replay.js';
import { chunkOf, type SseChunk } from '../../src/sse/wire.js';

/**
 * The replay ring's answer to a reconnect, against a model that keeps every change and scans all of them:
 * the ring must find the same events, in the same order, and the same users to send afresh, for any
 * history, any ids and any Last-Event-ID (ids the ring no longer reaches included).
 */

/** A change as pushed: whose, and its event's size (null: nobody streamed it). */
type Change = [user: number, bytes: number | null];

const USERS = ['100000000000000001', '100000000000000002', '100000000000000003', '100000000000000004'];

/** The ring's rules over a plain list: which changes it still holds, and what a scan of them finds. */
class ScanModel {
  private readonly held: [seq: number, Snowflake, SseChunk | null][] = [];
  private newest = 0;

  constructor(
    private readonly maxChanges: number,
    private readonly maxBytes: number,
  ) {}

  push(userId: Snowflake, event: SseChunk | null): void {
    const seq = ++this.newest;
    this.held.push([seq, userId, event]);
    if (this.held.length > this.maxChanges) this.held.shift();
    const bytes = () => this.held.reduce((sum, [, , held]) => sum + (held?.bytes ?? 0), 0);
    while (bytes() > this.maxBytes && this.held.length > 1) this.held.shift();
  }

  /** The changes of `ids` after `seq`; null when the held changes do not reach back to it. */
  changesSince(seq: number, ids: ReadonlySet<Snowflake>): [number, Snowflake, SseChunk | null][] | null {
    const oldest = this.held[0]?.[0] ?? this.newest + 1;
    if (seq < oldest - 1 || seq > this.newest) return null;
    return this.held.filter(([at, userId]) => at > seq && ids.has(userId));
  }

  since(seq: number, ids: ReadonlySet<Snowflake>): Missed | null {
    const changes = this.changesSince(seq, ids);
    if (changes === null) return null;
    const fresh = new Set<Snowflake>();
    const found: [Snowflake, SseChunk][] = [];
    for (const [, userId, event] of changes) {
      if (event) found.push([userId, event]);
      else fresh.add(userId);
    }
    return { events: found.filter(([userId]) => !fresh.has(userId)), fresh: [...fresh] };
  }
}

const history = fc.record({
  maxChanges: fc.integer({ min: 1, max: 24 }),
  maxBytes: fc.integer({ min: 1, max: 400 }),
  changes: fc.array(
    fc.tuple(fc.integer({ min: 0, max: USERS.length - 1 }), fc.option(fc.integer({ min: 1, max: 60 }))),
    { maxLength: 80 },
  ),
  ids: fc.subarray(USERS),
  // From before the first change to past the newest, so ids too old and ids not given yet are asked too.
  lastSeq: fc.integer({ min: -2, max: 90 }),
  perReconnect: fc.integer({ min: 0, max: 30 }),
});

function build(maxChanges: number, maxBytes: number, changes: Change[], perReconnect = Infinity) {
  const ring = new ReplayRing(maxChanges, maxBytes, perReconnect);
  const model = new ScanModel(maxChanges, maxBytes);
  for (const [user, bytes] of changes) {
    const userId = USERS[user] as Snowflake;
    const event = bytes === null ? null : chunkOf([Buffer.alloc(bytes)]);
    ring.push(userId, event);
    model.push(userId, event);
  }
  return { ring, model };
}

describe('the replay ring', () => {
  it('finds what a scan of every change it holds finds, in order', () => {
    fc.assert(
      fc.property(history, ({ maxChanges, maxBytes, changes, ids, lastSeq }) => {
        const { ring, model } = build(maxChanges, maxBytes, changes as Change[]);
        const wanted = new Set(ids as Snowflake[]);
        expect(ring.since(lastSeq, wanted)).toEqual(model.since(lastSeq, wanted));
      }),
      { numRuns: 2_000 },
    );
  });

  it('past its bound of changes per reconnect answers as for an id too old, and otherwise as the scan', () => {
    fc.assert(
      fc.property(history, ({ maxChanges, maxBytes, changes, ids, lastSeq, perReconnect }) => {
        const { ring, model } = build(maxChanges, maxBytes, changes as Change[], perReconnect);
        const wanted = new Set(ids as Snowflake[]);
        const missed = model.changesSince(lastSeq, wanted);
        const expected = missed && missed.length > perReconnect ? null : model.since(lastSeq, wanted);
        expect(ring.since(lastSeq, wanted)).toEqual(expected);
      }),
      { numRuns: 2_000 },
    );
  });

  it('bounds a reconnect by the changes of its own users, however many others the ring holds', () => {
    const ring = new ReplayRing(65_536, 16 * 1024 * 1024, 2);
    const event = chunkOf([Buffer.from('x')]);
    ring.push('1', event);
    // Everybody else's changes fill the ring; the stream's user changed once, long ago.
    for (let i = 0; i < 60_000; i++) ring.push('2', event);
    ring.push('1', event);
    expect(ring.since(0, new Set(['1']))).toEqual({
      events: [
        ['1', event],
        ['1', event],
      ],
      fresh: [],
    });
  });
});
