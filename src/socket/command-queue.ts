/** Work of socket commands done in one turn of the event loop, across every socket, before the rest waits. */
export const COMMAND_SLICE_MS = 2;

/**
 * The work of socket commands (a frame of a thousand ids parsed, subscribed to, answered with an
 * INIT_STATE) in the order it came, done a slice per turn of the event loop: a hundred sockets flooding
 * large commands at once are handled over many turns, with every other client served in between.
 */
export class CommandQueue {
  private items: Array<(() => void) | undefined> = [];
  private next = 0;
  private scheduled = false;

  constructor(private readonly sliceMs: number = COMMAND_SLICE_MS) {}

  push(work: () => void): void {
    this.items.push(work);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.drain);
  }

  private readonly drain = (): void => {
    const until = performance.now() + this.sliceMs;
    while (this.next < this.items.length) {
      const work = this.items[this.next] as () => void;
      this.items[this.next++] = undefined;
      work();
      if (performance.now() >= until) break;
    }
    if (this.next < this.items.length) {
      setImmediate(this.drain);
      return;
    }
    this.items = [];
    this.next = 0;
    this.scheduled = false;
  };
}
