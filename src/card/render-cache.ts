/** What one render made: the bytes and their tag, and the presence it was made from. */
export interface RenderedCard {
  body: Buffer;
  etag: string;
  /** The snapshot object rendered (undefined: the user was not monitored); a new one is a new card. */
  from: object | undefined;
}

/** Renders kept per second at most; a second with more distinct cards renders the rest each time. */
const LIMIT = 1_024;

/**
 * The cards rendered in the current second. A card's bytes depend only on the presence, the options, the
 * images and the second it is drawn for, so every request for one card within a second (a popular README,
 * a page with the card twice) is answered from the first render. Moving to a new second drops them all:
 * nothing is kept that could be stale by more than the card's own granularity, and an image that arrived
 * meanwhile shows from the next second on.
 */
export class CardRenderCache {
  private second = Number.NaN;
  private readonly cards = new Map<string, RenderedCard>();

  /** The card for `key` rendered this second from the snapshot `from`, if any. */
  get(second: number, key: string, from: object | undefined): RenderedCard | undefined {
    if (second !== this.second) {
      this.second = second;
      this.cards.clear();
      return undefined;
    }
    const card = this.cards.get(key);
    return card?.from === from ? card : undefined;
  }

  set(second: number, key: string, card: RenderedCard): void {
    if (second !== this.second) return;
    if (this.cards.size < LIMIT || this.cards.has(key)) this.cards.set(key, card);
  }
}
