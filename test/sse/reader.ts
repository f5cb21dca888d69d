import { connect, type Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';

/** An event as EventSource would dispatch it, with the last event id it then had. */
export interface ReadEvent {
  event: string;
  data: string;
  /** The event's own `id:`, when it carried one. */
  id: string | undefined;
  /** EventSource's `lastEventId` once it dispatched this event. */
  lastEventId: string;
}

/**
 * An event stream read by hand over one TCP connection on loopback: the request as written, the answer's
 * head, the chunked body undone, and the `text/event-stream` format parsed as the HTML standard says
 * (an `id:` alone moves the last event id without an event). What arrives is kept, to wait on.
 */
export class SseReader {
  status = 0;
  headers: Record<string, string> = {};
  /** The body as received (chunking undone), for a refusal's JSON or the stream's raw text. */
  body = '';
  readonly events: ReadEvent[] = [];
  readonly comments: string[] = [];
  retry: number | null = null;
  /** EventSource's last event id: the newest `id:` read. */
  lastEventId = '';
  readonly closed: Promise<void>;
  private isClosed = false;
  private head = '';
  private headDone = false;
  private chunked = false;
  private pending = Buffer.alloc(0);
  /** A large event's slices may end inside a character. */
  private readonly decoder = new StringDecoder('utf8');
  private text = '';
  private fields: { event: string; data: string[]; id: string | undefined } = {
    event: '',
    data: [],
    id: undefined,
  };

  /** Called after every arrival and on the close: the waiters of `waitFor` look again. */
  private readonly wakers = new Set<() => void>();

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received(chunk);
      for (const waker of [...this.wakers]) waker();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => {
      socket.once('close', () => {
        this.isClosed = true;
        resolve();
        for (const waker of [...this.wakers]) waker();
      });
    });
  }

  /** `GET path` with these headers (and `Host`), from `localAddress` when given. */
  static async open(
    base: string,
    path: string,
    headers: Record<string, string> = {},
    localAddress?: string,
  ): Promise<SseReader> {
    const url = new URL(base);
    const socket = connect({
      port: Number(url.port),
      host: url.hostname,
      ...(localAddress ? { localAddress } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const reader = new SseReader(socket);
    const lines = Object.entries({ host: url.host, accept: 'text/event-stream', ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`GET ${path} HTTP/1.1\r\n${lines}\r\n`);
    return reader;
  }

  /** Opens and waits for the answer's head. */
  static async connect(
    base: string,
    path: string,
    headers: Record<string, string> = {},
    localAddress?: string,
  ): Promise<SseReader> {
    const reader = await SseReader.open(base, path, headers, localAddress);
    await reader.answered();
    return reader;
  }

  get ended(): boolean {
    return this.isClosed;
  }

  /** Resolves once the head of the answer has arrived. */
  answered(timeoutMs = 5_000): Promise<void> {
    return this.waitFor(() => this.headDone, 'an answer', timeoutMs);
  }

  /** Resolves with the events once `count` have arrived. */
  async eventCount(count: number, timeoutMs = 5_000): Promise<ReadEvent[]> {
    await this.waitFor(() => this.events.length >= count, `${count} events`, timeoutMs);
    return this.events;
  }

  /** Resolves with the first event from index `from` on that matches. */
  async until(match: (event: ReadEvent) => boolean, from = 0, timeoutMs = 5_000): Promise<ReadEvent> {
    let found: ReadEvent | undefined;
    await this.waitFor(
      () => {
        found = this.events.slice(from).find(match);
        return found !== undefined;
      },
      'a matching event',
      timeoutMs,
    );
    return found as ReadEvent;
  }

  /** Resolves once `done()` holds: asked again as each piece arrives. */
  waitFor(done: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const look = (): void => {
        if (done()) settle(resolve);
        else if (this.isClosed) {
          settle(() => reject(new Error(`closed without ${what}; got ${this.describe()}`)));
        }
      };
      const timer = setTimeout(() => {
        settle(() => reject(new Error(`no ${what} within ${timeoutMs} ms; got ${this.describe()}`)));
      }, timeoutMs);
      const settle = (then: () => void): void => {
        clearTimeout(timer);
        this.wakers.delete(look);
        then();
      };
      this.wakers.add(look);
      look();
    });
  }

  /** The presences of the `presence` events, parsed. */
  presences(from = 0): { user_id: string; [field: string]: unknown }[] {
    return this.events
      .slice(from)
      .filter((event) => event.event === 'presence')
      .map((event) => JSON.parse(event.data) as { user_id: string });
  }

  close(): void {
    this.socket.destroy();
  }

  private describe(): string {
    return JSON.stringify(`${this.head}${this.body}`.slice(-600));
  }

  private received(chunk: Buffer): void {
    let data = chunk;
    if (!this.headDone) {
      this.head += data.toString('latin1');
      const end = this.head.indexOf('\r\n\r\n');
      if (end < 0) return;
      data = Buffer.from(this.head.slice(end + 4), 'latin1');
      this.head = this.head.slice(0, end);
      const [statusLine = '', ...headerLines] = this.head.split('\r\n');
      this.status = Number(statusLine.split(' ')[1]);
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        this.headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      this.chunked = this.headers['transfer-encoding'] === 'chunked';
      this.headDone = true;
    }
    this.pending = Buffer.concat([this.pending, data]);
    this.body += this.chunked ? this.unchunk() : this.takeAll();
  }

  private takeAll(): string {
    const text = this.decoder.write(this.pending);
    this.pending = Buffer.alloc(0);
    this.parse(text);
    return text;
  }

  /** The whole chunks received so far, their framing taken off. */
  private unchunk(): string {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = this.pending.indexOf('\r\n');
      if (lineEnd < 0) break;
      const size = Number.parseInt(this.pending.toString('latin1', 0, lineEnd), 16);
      if (this.pending.length < lineEnd + 2 + size + 2) break;
      parts.push(this.pending.subarray(lineEnd + 2, lineEnd + 2 + size));
      this.pending = this.pending.subarray(lineEnd + 2 + size + 2);
    }
    const text = this.decoder.write(Buffer.concat(parts));
    this.parse(text);
    return text;
  }

  private parse(text: string): void {
    this.text += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.text);
      if (!match) return;
      const line = this.text.slice(0, match.index);
      this.text = this.text.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.fields.id !== undefined) this.lastEventId = this.fields.id;
      if (this.fields.data.length > 0) {
        this.events.push({
          event: this.fields.event || 'message',
          data: this.fields.data.join('\n'),
          id: this.fields.id,
          lastEventId: this.lastEventId,
        });
      }
      this.fields = { event: '', data: [], id: undefined };
      return;
    }
    if (line.startsWith(':')) {
      this.comments.push(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'event') this.fields.event = value;
    else if (name === 'data') this.fields.data.push(value);
    else if (name === 'id') this.fields.id = value;
    else if (name === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}
