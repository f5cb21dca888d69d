import { connect, type Socket } from 'node:net';

/**
 * A TCP connection that speaks HTTP by hand, for the clients `fetch` will not play: one that sends its
 * headers a line at a time, a body that never ends, or half a request and then waits.
 */
export class RawConnection {
  private received = '';
  private readonly opened: Promise<void>;
  /** Resolves when the server (or anything) closes the connection, with the time it happened. */
  readonly closed: Promise<number>;
  private closedAt: number | null = null;
  private trickle: NodeJS.Timeout | null = null;
  /** Called on every arrival and on the close: the waiters of `waitFor` look again. */
  private readonly wakers = new Set<() => void>();

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received += chunk.toString('latin1');
      this.wake();
    });
    // A write racing the server's close fails with EPIPE or ECONNRESET; the close is what tests look at.
    socket.on('error', () => undefined);
    this.opened = new Promise((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    this.closed = new Promise((resolve) => {
      socket.once('close', () => {
        this.stopTrickle();
        this.closedAt = Date.now();
        resolve(this.closedAt);
        this.wake();
      });
    });
  }

  /**
   * `localAddress`: the loopback address to connect from (Linux answers on all of 127.0.0.0/8).
   * `halfOpen`: the connection stays open for writing once the server has ended its side, as a client
   * that ignores the end of an answer and keeps sending does.
   */
  static async open(base: string, localAddress?: string, halfOpen = false): Promise<RawConnection> {
    const url = new URL(base);
    const connection = new RawConnection(
      connect({
        port: Number(url.port),
        host: url.hostname,
        allowHalfOpen: halfOpen,
        ...(localAddress ? { localAddress } : {}),
      }),
    );
    await connection.opened;
    return connection;
  }

  /** Everything the server sent so far, as text. */
  get text(): string {
    return this.received;
  }

  get isClosed(): boolean {
    return this.closedAt !== null;
  }

  write(data: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.socket.destroyed) {
        reject(new Error('the connection is closed'));
        return;
      }
      this.socket.write(data, 'latin1', (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Writes `next()` every `everyMs` until the connection closes (or `next` returns null). */
  startTrickle(everyMs: number, next: () => string | null): void {
    this.trickle = setInterval(() => {
      const data = next();
      if (data === null || this.socket.destroyed) {
        this.stopTrickle();
        return;
      }
      this.socket.write(data, 'latin1');
    }, everyMs);
  }

  stopTrickle(): void {
    if (this.trickle) clearInterval(this.trickle);
    this.trickle = null;
  }

  /** Resolves once the server has sent something that matches: looked for as each piece arrives. */
  waitFor(pattern: RegExp, timeoutMs = 5_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const look = (): void => {
        if (pattern.test(this.received)) done(() => resolve(this.received));
        else if (this.isClosed) {
          done(() => reject(new Error(`closed without ${pattern}; got ${JSON.stringify(this.received)}`)));
        }
      };
      const timer = setTimeout(() => {
        done(() =>
          reject(new Error(`no ${pattern} within ${timeoutMs} ms; got ${JSON.stringify(this.received)}`)),
        );
      }, timeoutMs);
      const done = (settle: () => void): void => {
        clearTimeout(timer);
        this.wakers.delete(look);
        settle();
      };
      this.wakers.add(look);
      look();
    });
  }

  private wake(): void {
    for (const waker of [...this.wakers]) waker();
  }

  destroy(): void {
    this.stopTrickle();
    this.socket.destroy();
  }
}

/** The status lines of every response in what a connection received (several when kept alive). */
export function statusLines(text: string): string[] {
  return text.match(/HTTP\/1\.1 \d{3} [^\r\n]*/g) ?? [];
}

/** The body of the last response received, parsed as JSON. */
export function lastJsonBody(text: string): unknown {
  const start = text.lastIndexOf('\r\n\r\n');
  return JSON.parse(text.slice(start + 4));
}
