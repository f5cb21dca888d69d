type Listeners<Events> = { [E in keyof Events]?: Set<Events[E]> };

/** A minimal typed event emitter that runs in browsers and Node alike (no `node:events`). */
export class Emitter<Events extends { [E in keyof Events]: (...args: never[]) => void }> {
  private readonly listeners: Listeners<Events> = {};

  /** Adds a listener; returns the function that removes it. */
  on<E extends keyof Events>(event: E, listener: Events[E]): () => void {
    let set = this.listeners[event];
    if (!set) {
      set = new Set();
      this.listeners[event] = set;
    }
    set.add(listener);
    return () => this.listeners[event]?.delete(listener);
  }

  protected emit<E extends keyof Events>(event: E, ...args: Parameters<Events[E]>): void {
    for (const listener of this.listeners[event] ?? []) {
      (listener as (...args: Parameters<Events[E]>) => void)(...args);
    }
  }
}
