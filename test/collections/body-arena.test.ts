import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHUNK_BYTES } from '../../src/collections/body-arena.js';
import { arenaOf, arenaWithSlots } from './arena-slots.js';

/** ASCII text of up to `max` characters, mostly short, some near a large body's size. */
const text = (max: number) =>
  fc.oneof(
    fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
      maxLength: 64,
    }),
    fc.integer({ min: 0, max: max }).map((length) => 'x'.repeat(length)),
  );

describe('texts held side by side outside the heap', () => {
  it('reads back each slot’s last text, ASCII or UTF-8, whatever was written, rewritten and let go before', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.integer({ min: 0, max: 40 }), fc.option(text(40_000), { freq: 4 }), fc.boolean()),
          {
            maxLength: 300,
            size: 'max',
          },
        ),
        (operations) => {
          const arena = arenaOf(41);
          const model = new Map<number, { text: string; utf8: boolean }>();
          for (const [slot, written, utf8] of operations) {
            if (written === null) {
              arena.free(slot);
              model.delete(slot);
            } else if (utf8) {
              // Any text, held as UTF-8: a pending member's payload.
              const held = `${written}é🎧${written.slice(0, 5)}`;
              arena.writeUtf8(slot, held);
              model.set(slot, { text: held, utf8 });
            } else {
              arena.write(slot, written);
              model.set(slot, { text: written, utf8 });
            }
          }
          for (let slot = 0; slot <= 40; slot++) {
            const held = model.get(slot);
            expect(arena.holds(slot)).toBe(held !== undefined);
            expect(arena.holdsUtf8(slot)).toBe(held?.utf8 === true);
            if (held !== undefined) {
              expect(held.utf8 ? arena.utf8Text(slot) : arena.text(slot)).toBe(held.text);
            }
          }
          const live = [...model.values()].reduce((sum, held) => sum + Buffer.byteLength(held.text), 0);
          // Holes never hold more than the texts: chunks at least half full, but the one written into.
          expect(arena.bytes).toBeLessThanOrEqual(2 * live + 2 * CHUNK_BYTES);
        },
      ),
    );
  });

  it('keeps its memory to about the texts held while every text is rewritten many times over', () => {
    const users = 20_000;
    const arena = arenaOf(users);
    const body = (slot: number, round: number) => `{"user":${slot},"round":${round}}`.padEnd(900, ' ');
    for (let round = 0; round < 10; round++) {
      for (let slot = 0; slot < users; slot++) arena.write(slot, body(slot, round));
    }
    for (let slot = 0; slot < users; slot += 997) expect(arena.text(slot)).toBe(body(slot, 9));
    expect(arena.bytes).toBeLessThanOrEqual(2 * users * 900 + 2 * CHUNK_BYTES);
  });

  it('keeps each slot’s text as its slots grow, its texts move, and slots are let go and handed out again', () => {
    const { arena, slots } = arenaWithSlots();
    const body = (slot: number, round: number) => `{"user":${slot},"round":${round}}`.padEnd(20_000, ' ');
    // Written while there are few slots; the slots then grow many times over, their records moving.
    for (let n = 0; n < 100; n++) arena.write(slots.add(String(n + 1)), body(n, 0));
    for (let n = 100; n < 50_000; n++) slots.add(String(n + 1));
    // Rewritten after, until the chunks written before the slots grew are emptied out and their texts moved.
    for (let round = 1; round < 4; round++)
      for (let slot = 0; slot < 100; slot += 2) arena.write(slot, body(slot, round));
    for (let slot = 0; slot < 100; slot++) expect(arena.text(slot)).toBe(body(slot, slot % 2 === 0 ? 3 : 0));
    for (let slot = 100; slot < 50_000; slot += 499) expect(arena.holds(slot)).toBe(false);
    // A slot whose last text was UTF-8, let go and handed out to another id, holds nothing until written.
    arena.writeUtf8(6, 'née 🎧');
    arena.free(6);
    slots.remove('7');
    const again = slots.add('123456789012345678');
    expect(again).toBe(6);
    expect(arena.holds(again)).toBe(false);
    expect(arena.holdsUtf8(again)).toBe(false);
    arena.write(again, 'ascii');
    expect(arena.holdsUtf8(again)).toBe(false);
    expect(arena.text(again)).toBe('ascii');
    expect(arena.text(5)).toBe(body(5, 0));
  });
});
