import { PerClientCap } from './per-client-cap.js';

/**
 * The sockets a client and the process hold open: WebSockets and Server-Sent Events streams count
 * together against `SOCKETS_PER_IP` and `MAX_SOCKETS`, so neither is a way around the other's cap.
 */
export class SocketSlots {
  private readonly byClient: PerClientCap;
  private held = 0;

  constructor(
    /** Concurrent sockets and streams per client (see clientKey); 0: no cap. */
    readonly perClient: number,
    /** Sockets and streams this process holds at most; 0: no cap. */
    readonly max: number,
  ) {
    this.byClient = new PerClientCap(perClient);
  }

  /** Whether the client holds as many as it may. */
  clientFull(client: string): boolean {
    return this.byClient.full(client);
  }

  /** Whether the process holds as many as it may. */
  get full(): boolean {
    return this.max > 0 && this.held >= this.max;
  }

  /** Sockets and streams the process holds (or is setting up). */
  get count(): number {
    return this.held;
  }

  /** One of the client's slots and one of the process's. */
  take(client: string): void {
    this.byClient.take(client);
    this.held++;
  }

  release(client: string): void {
    this.byClient.release(client);
    this.held--;
  }

  /** The client's slot alone: a socket refused for the process's cap holds it until its connection ends. */
  takeClient(client: string): void {
    this.byClient.take(client);
  }

  releaseClient(client: string): void {
    this.byClient.release(client);
  }
}
