import type { Bus, BusHandler, BusMessages, Topic } from './ports.js';

/** The bus of a single process: delivery is synchronous, so a write is visible once publish resolves. */
export class LocalBus implements Bus {
  private readonly handlers = new Map<Topic, Set<BusHandler<Topic>>>();

  async publish<T extends Topic>(topic: T, message: BusMessages[T]): Promise<void> {
    for (const handler of this.handlers.get(topic) ?? []) handler(message);
  }

  subscribe<T extends Topic>(topic: T, handler: BusHandler<T>): () => void {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
    }
    set.add(handler as BusHandler<Topic>);
    return () => set.delete(handler as BusHandler<Topic>);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}
