import { DEFAULT_RECONNECT_DELAY, reconnectDelay } from './backoff.js';
import { answerError } from './errors.js';
import { EventStreamParser } from './event-stream.js';
import type { PresenceUpdate, UserId } from './types.js';
import { checkedUserId } from './user-id.js';

/** The part of EventSource the client uses: the browser's fits. */
export interface EventSourceLike {
  readonly readyState: number;
  addEventListener(type: string, listener: (event: { data?: unknown; lastEventId?: string }) => void): void;
  close(): void;
}

export type EventSourceConstructor = new (url: string) => EventSourceLike;

/** The part of a fetch Response the stream reader uses: a body read as it comes. */
export interface StreamResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  readonly body: { getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }> } } | null;
  text(): Promise<string>;
}

/** The part of `fetch` the stream reader uses: the global one fits. */
export type StreamFetch = (
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal },
) => Promise<StreamResponse>;

export interface PresentlyEventsOptions {
  /** Default: the global EventSource (browsers); where there is none, a reader over `fetch` (Node). `null`: that reader always. */
  EventSource?: EventSourceConstructor | null;
  /** The reader's fetch; default: the global one. */
  fetch?: StreamFetch;
  /** Back-off after a refusal or a failed connection: doubling from `minMs` to `maxMs`, jittered. Default 1 s to 30 s. */
  reconnectDelay?: { minMs?: number; maxMs?: number };
  /** A refusal (a PresentlyError), a broken connection, a presence a listener threw on: the stream goes on unless it was refused for good. */
  onError?: (error: Error) => void;
  /** The stream is open (again): a reopened stream sends only what was missed, which may be nothing. */
  onOpen?: () => void;
}

/** The events the service sends a presence as. */
const PRESENCE_EVENT = 'presence';
/** EventSource's readyState once it has given up. */
const CLOSED = 2;
/** Refusals the same request would get again (ids the server will not take): the client stops. */
const FINAL_STATUSES: ReadonlySet<number> = new Set([400, 404]);

/**
 * Presences as Server-Sent Events (`GET /v1/events?ids=`), kept live: first each monitored user's presence,
 * then every change (users not monitored yet come once they are). A dropped stream comes back with the
 * id of the last event it had, so the server sends what was missed: EventSource does this itself; after a
 * refusal (a 429, a 503, a proxy's page) the client opens a new one after a back-off, naming that id in
 * the query. `close()` ends it for good.
 */
export class PresentlyEvents {
  /** The id of the last event received: what a reconnect asks the server to send after. */
  lastEventId: string | null = null;
  private readonly url: string;
  private readonly delay: { minMs: number; maxMs: number };
  private attempt = 0;
  private ended = false;
  private source: EventSourceLike | null = null;
  private abort: AbortController | null = null;
  private wait: { timer: ReturnType<typeof setTimeout>; resolve: () => void } | null = null;

  constructor(
    baseUrl: string,
    ids: UserId | readonly UserId[],
    private readonly onPresence: (presence: PresenceUpdate) => void,
    private readonly options: PresentlyEventsOptions = {},
  ) {
    const list = [...new Set((typeof ids === 'string' ? [ids] : ids).map(checkedUserId))];
    if (list.length === 0) throw new TypeError('no user ids to stream');
    this.url = `${baseUrl.replace(/\/+$/, '')}/v1/events?ids=${list.join(',')}`;
    this.delay = { ...DEFAULT_RECONNECT_DELAY, ...options.reconnectDelay };
    const EventSourceImpl =
      options.EventSource === undefined
        ? (globalThis as { EventSource?: EventSourceConstructor }).EventSource
        : options.EventSource;
    if (EventSourceImpl) this.openSource(EventSourceImpl);
    else void this.read(options.fetch ?? ((url, init) => globalThis.fetch(url, init)));
  }

  /** Closed, or refused for good (ids the server will not take): nothing more will come. */
  get closed(): boolean {
    return this.ended;
  }

  /** Ends the stream for good: no reconnect, no timers left. */
  close(): void {
    this.ended = true;
    this.source?.close();
    this.abort?.abort();
    if (this.wait) {
      clearTimeout(this.wait.timer);
      this.wait.resolve();
    }
  }

  private openSource(EventSource: EventSourceConstructor): void {
    const last = this.lastEventId === null ? '' : `&last_event_id=${encodeURIComponent(this.lastEventId)}`;
    const source = new EventSource(`${this.url}${last}`);
    this.source = source;
    source.addEventListener('open', () => {
      this.attempt = 0;
      this.options.onOpen?.();
    });
    source.addEventListener(PRESENCE_EVENT, (event) => this.received(String(event.data), event.lastEventId));
    source.addEventListener('error', () => {
      // Until it gives up, EventSource reconnects by itself, sending Last-Event-ID.
      if (this.ended || this.source !== source || source.readyState !== CLOSED) return;
      this.report(new Error(`the event stream ${this.url} was refused or broke off`));
      void this.pause(this.backoff()).then(() => {
        if (!this.ended) this.openSource(EventSource);
      });
    });
  }

  /** Where there is no EventSource: the stream read over fetch, reconnected as EventSource would. */
  private async read(fetch: StreamFetch): Promise<void> {
    while (!this.ended) {
      let waitMs: number;
      try {
        const abort = new AbortController();
        this.abort = abort;
        const headers: Record<string, string> = { accept: 'text/event-stream' };
        if (this.lastEventId !== null) headers['last-event-id'] = this.lastEventId;
        const response = await fetch(this.url, { headers, signal: abort.signal });
        if (response.status === 200) {
          this.attempt = 0;
          this.options.onOpen?.();
          waitMs = (await this.consume(response)) ?? this.delay.minMs;
        } else {
          const text = await response.text();
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            // not the API's answer: answerError says so
          }
          const error = answerError(
            response.status,
            body,
            response.headers.get('retry-after'),
            `GET ${this.url}`,
          );
          this.report(error);
          if (FINAL_STATUSES.has(response.status)) {
            this.ended = true;
            return;
          }
          waitMs = Math.max(this.backoff(), (error.retryAfter ?? 0) * 1000);
        }
      } catch (error) {
        if (this.ended) return;
        this.report(error instanceof Error ? error : new Error(String(error)));
        waitMs = this.backoff();
      }
      await this.pause(waitMs);
    }
  }

  /** Reads a stream to its end; resolves with the `retry:` it asked for. */
  private async consume(response: StreamResponse): Promise<number | null> {
    const parser = new EventStreamParser((event) => {
      if (event.type === PRESENCE_EVENT) this.received(event.data, event.lastEventId);
    });
    const reader = response.body?.getReader();
    const decoder = new TextDecoder();
    for (let chunk = await reader?.read(); chunk && !chunk.done; chunk = await reader?.read()) {
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      // An id alone moves the last id without an event.
      if (parser.lastEventId !== '') this.lastEventId = parser.lastEventId;
    }
    return parser.retryMs;
  }

  private received(data: string, lastEventId: string | undefined): void {
    if (lastEventId) this.lastEventId = lastEventId;
    try {
      this.onPresence(JSON.parse(data) as PresenceUpdate);
    } catch (error) {
      this.report(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private report(error: Error): void {
    this.options.onError?.(error);
  }

  private backoff(): number {
    return reconnectDelay(this.attempt++, this.delay);
  }

  /** Waits `ms`, or until `close()`. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wait = { timer: setTimeout(resolve, ms), resolve };
    });
  }
}
