interface Waiter<T> {
  predicate(value: T): boolean;
  resolve(value: T): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/** Pending waits for a value to come, each with its own timeout; the oldest is offered a value first. */
export class Waiters<T> {
  private pending: Waiter<T>[] = [];

  /** Settles when a matching value is offered; rejects with timedOut() after timeoutMs. */
  wait(predicate: (value: T) => boolean, timeoutMs: number, timedOut: () => Error): Promise<T> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter<T> = {
        predicate,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.drop(waiter);
          reject(timedOut());
        }, timeoutMs),
      };
      this.pending.push(waiter);
    });
  }

  /** The oldest wait the value matches gets it; false when none matched. */
  resolveFirst(value: T): boolean {
    const waiter = this.pending.find((candidate) => candidate.predicate(value));
    if (!waiter) return false;
    this.settle(waiter).resolve(value);
    return true;
  }

  /** Every wait the value matches gets it, each as copy() makes it. */
  resolveEach(value: T, copy: (value: T) => T = (same) => same): void {
    for (const waiter of this.pending.filter((candidate) => candidate.predicate(value))) {
      this.settle(waiter).resolve(copy(value));
    }
  }

  rejectAll(error: Error): void {
    for (const waiter of this.pending.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }

  private settle(waiter: Waiter<T>): Waiter<T> {
    clearTimeout(waiter.timer);
    this.drop(waiter);
    return waiter;
  }

  private drop(waiter: Waiter<T>): void {
    this.pending = this.pending.filter((other) => other !== waiter);
  }
}
