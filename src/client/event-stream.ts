/** An event of a `text/event-stream`, as EventSource dispatches it. */
export interface StreamEvent {
  type: string;
  data: string;
  /** The last event id once this event came: its own `id:`, or the one before it. */
  lastEventId: string;
}

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * The `text/event-stream` format as the HTML standard reads it, for a client without EventSource: fed
 * text as it arrives, it hands over each event that has data, and keeps the last event id (an `id:` alone
 * moves it too) and the `retry:` the server asked for.
 */
export class EventStreamParser {
  lastEventId = '';
  retryMs: number | null = null;
  private pending = '';
  private type = '';
  private data: string[] = [];
  /** The id buffer: it outlives the event that set it, as EventSource's does. */
  private id = '';

  constructor(private readonly onEvent: (event: StreamEvent) => void) {}

  feed(text: string): void {
    this.pending += text;
    for (let match = LINE_BREAK.exec(this.pending); match; match = LINE_BREAK.exec(this.pending)) {
      // A CR at the very end may be half of a CRLF whose LF is still on its way.
      if (match[0] === '\r' && match.index === this.pending.length - 1) return;
      const line = this.pending.slice(0, match.index);
      this.pending = this.pending.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
    if (field === 'event') this.type = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    else if (field === 'retry' && /^[0-9]+$/.test(value)) this.retryMs = Number(value);
  }

  private dispatch(): void {
    this.lastEventId = this.id;
    const { type, data } = this;
    this.type = '';
    this.data = [];
    if (data.length > 0)
      this.onEvent({ type: type || 'message', data: data.join('\n'), lastEventId: this.id });
  }
}
