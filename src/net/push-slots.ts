/**
 * The long-lived pushes a client and the process hold: WebSockets and Server-Sent Events streams count
 * together against `SOCKETS_PER_IP` and `MAX_SOCKETS`, so neither is a way around the other's cap.
 */
export class PushSlots {
  private readonly byClient = new Map<string, number>();
  private held = 0;

  constructor(
    /** Concurrent pushes per client (see clientKey); 0: no cap. */
    readonly perClient: number,
    /** Pushes this process holds at most; 0: no cap. */
    readonly max: number,
  ) {}

  /** Whether the client holds as many as it may. */
  clientFull(client: string): boolean {
    return this.perClient > 0 && (this.byClient.get(client) ?? 0) >= this.perClient;
  }

  /** Whether the process holds as many as it may. */
  get full(): boolean {
    return this.max > 0 && this.held >= this.max;
  }

  /** Pushes the process holds (or is setting up). */
  get count(): number {
    return this.held;
  }

  /** One of the client's slots and one of the process's. */
  take(client: string): void {
    this.takeClient(client);
    this.held++;
  }

  release(client: string): void {
    this.releaseClient(client);
    this.held--;
  }

  /** The client's slot alone: a push refused for the process's cap holds it until its connection ends. */
  takeClient(client: string): void {
    this.byClient.set(client, (this.byClient.get(client) ?? 0) + 1);
  }

  releaseClient(client: string): void {
    const left = (this.byClient.get(client) ?? 1) - 1;
    if (left > 0) this.byClient.set(client, left);
    else this.byClient.delete(client);
  }
}
