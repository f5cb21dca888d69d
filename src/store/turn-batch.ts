/**
 * Items gathered over one turn of the event loop and handed over together at its end, or sooner once
 * `max` wait. A member chunk brings a thousand users in one turn; what is stored for them is read in one
 * query rather than one each.
 */
export class TurnBatch<T> {
  private items: T[] = [];

  constructor(
    private readonly handOver: (items: T[]) => void,
    private readonly max: number,
  ) {}

  add(item: T): void {
    this.items.push(item);
    if (this.items.length === 1) queueMicrotask(() => this.flush());
    else if (this.items.length >= this.max) this.flush();
  }

  /** Hands over what waits now, if anything does. */
  flush(): void {
    const items = this.items;
    if (items.length === 0) return;
    this.items = [];
    this.handOver(items);
  }
}
