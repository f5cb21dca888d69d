import { describe, expect, it } from 'vitest';
import { CardRenderCache, type RenderedCard } from '../../src/card/render-cache.js';

const cardFrom = (from: object | undefined, text = 'card'): RenderedCard => ({
  body: Buffer.from(text),
  etag: `"${text}"`,
  from,
});

describe('CardRenderCache', () => {
  it('answers a card again within its second, for the same presence', () => {
    const cache = new CardRenderCache();
    const snapshot = {};
    expect(cache.get(1_000, 'u?theme=light', snapshot)).toBeUndefined();
    const card = cardFrom(snapshot);
    cache.set(1_000, 'u?theme=light', card);
    expect(cache.get(1_000, 'u?theme=light', snapshot)).toBe(card);
    expect(cache.get(1_000, 'u', snapshot)).toBeUndefined();
  });

  it('never answers a card made from an older presence', () => {
    const cache = new CardRenderCache();
    const before = {};
    cache.get(1_000, 'u', before);
    cache.set(1_000, 'u', cardFrom(before));
    expect(cache.get(1_000, 'u', {})).toBeUndefined();
    expect(cache.get(1_000, 'u', undefined)).toBeUndefined();
  });

  it('keeps the card of a user who is not monitored, until they are', () => {
    const cache = new CardRenderCache();
    cache.get(1_000, 'u', undefined);
    const card = cardFrom(undefined);
    cache.set(1_000, 'u', card);
    expect(cache.get(1_000, 'u', undefined)).toBe(card);
    expect(cache.get(1_000, 'u', {})).toBeUndefined();
  });

  it('forgets every card when the second moves on, and takes none for a second gone by', () => {
    const cache = new CardRenderCache();
    const snapshot = {};
    cache.get(1_000, 'u', snapshot);
    cache.set(1_000, 'u', cardFrom(snapshot));
    expect(cache.get(2_000, 'u', snapshot)).toBeUndefined();
    // A render that started in the second before finishes late: it must not be served as this second's.
    cache.set(1_000, 'u', cardFrom(snapshot, 'late'));
    expect(cache.get(2_000, 'u', snapshot)).toBeUndefined();
  });

  it('holds a bounded number of cards a second; a card already held is still replaced', () => {
    const cache = new CardRenderCache();
    const snapshot = {};
    cache.get(1_000, 'first', snapshot);
    for (let n = 0; n < 5_000; n++) cache.set(1_000, `u${n}`, cardFrom(snapshot));
    expect(cache.get(1_000, 'u1023', snapshot)).toBeDefined();
    expect(cache.get(1_000, 'u1024', snapshot)).toBeUndefined();
    const replaced = cardFrom(snapshot, 'new');
    cache.set(1_000, 'u0', replaced);
    expect(cache.get(1_000, 'u0', snapshot)).toBe(replaced);
  });
});
