/**
 * What each client (a clientKey) holds at once, connections or sockets, against a cap per client: a count
 * of things held, given back as they end, not a budget that refills with time.
 */
export class PerClientCap {
  private readonly held = new Map<string, number>();

  /** `cap`: what one client may hold at once; 0: no cap. */
  constructor(readonly cap: number) {}

  /** Whether the client holds as many as it may. */
  full(client: string): boolean {
    return this.cap > 0 && (this.held.get(client) ?? 0) >= this.cap;
  }

  take(client: string): void {
    this.held.set(client, (this.held.get(client) ?? 0) + 1);
  }

  release(client: string): void {
    const left = (this.held.get(client) ?? 1) - 1;
    if (left > 0) this.held.set(client, left);
    else this.held.delete(client);
  }
}
