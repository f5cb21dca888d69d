/**
 * What a card reads from the store, shared by the requests of one second: a card is drawn for whole
 * seconds, so a README proxy revalidating it, or many readers at once, cost one store read a second.
 */
export class PerSecond<T> {
  private second = Number.NaN;
  private readonly values = new Map<string, Promise<T>>();

  /** The value of `key` for the second starting at `at`, made once (a failure is not kept). */
  get(key: string, at: number, make: () => Promise<T>): Promise<T> {
    if (at !== this.second) {
      this.values.clear();
      this.second = at;
    }
    let value = this.values.get(key);
    if (value === undefined) {
      const made = make();
      made.catch(() => {
        if (this.values.get(key) === made) this.values.delete(key);
      });
      this.values.set(key, made);
      value = made;
    }
    return value;
  }
}
