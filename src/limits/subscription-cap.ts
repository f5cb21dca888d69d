/**
 * The subscriptions to ids the process holds, sockets' and event streams' together, against
 * `MAX_SUBSCRIPTIONS`: each costs memory however many sockets hold them, so the process caps their sum.
 */
export class SubscriptionCap {
  private held = 0;

  /** `max`: subscriptions the process holds at most; 0: no cap. */
  constructor(readonly max: number) {}

  get count(): number {
    return this.held;
  }

  /** Whether `more` subscriptions fit beside those held. */
  fits(more: number): boolean {
    return this.max === 0 || this.held + more <= this.max;
  }

  take(subscriptions: number): void {
    this.held += subscriptions;
  }

  give(subscriptions: number): void {
    this.held -= subscriptions;
  }
}
