import { inflateSync } from 'node:zlib';
import { expect } from 'vitest';
import { type Frame, SocketClient, socketUrl } from '../socket/client.js';
import { SseReader } from '../sse/reader.js';
import type { WebhookReceiver } from './webhook-receiver.js';

/**
 * Consumers of presences as a privacy test reads them: every byte each one received, from a point on, as
 * text to search for what must not be there, and the presences of one user among them, parsed. A socket's
 * bytes are the TCP stream as it came (text frames carry their JSON as it is) and each message as the
 * client decodes it (a zlib_json message inflated); an event stream's are the TCP stream too.
 */

/** A presence as it travels, parsed. */
export type PresenceJson = Record<string, unknown>;

/** A point in what a consumer received: what came before it is left out of what is read from it. */
export interface Mark {
  readonly messages: number;
  readonly wire: number;
}

const START: Mark = { messages: 0, wire: 0 };

export interface Tap {
  readonly name: string;
  mark(): Mark;
  /** Everything received since `from`, as text. */
  text(from?: Mark): string;
  /** The presences of `userId` received since `from`, in order. */
  presences(userId: string, from?: Mark): PresenceJson[];
  close(): void;
}

/** TCP bytes as they arrive on a connection, kept in order. */
class WireRecording {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;

  constructor(socket: NodeJS.EventEmitter) {
    socket.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.bytes += chunk.length;
    });
  }

  get length(): number {
    return this.bytes;
  }

  /** The bytes from offset `from` on, as Latin-1 text (each byte one character, nothing decoded away). */
  since(from: number): string {
    return Buffer.concat(this.chunks).subarray(from).toString('latin1');
  }
}

/** The presences of `userId` a socket frame carries: an update of theirs, or an INIT_STATE holding them. */
function presencesInFrame(frame: Frame, userId: string): PresenceJson[] {
  const d = frame.d as Record<string, unknown> | undefined;
  if (d === undefined || d === null) return [];
  if (frame.t === 'PRESENCE_UPDATE') return d.user_id === userId ? [d] : [];
  if (frame.t !== 'INIT_STATE') return [];
  const single = (d.discord_user as { id?: string } | undefined)?.id;
  if (single !== undefined) return single === userId ? [d] : [];
  const ofUser = d[userId];
  return ofUser === undefined ? [] : [ofUser as PresenceJson];
}

/** A Lanyard socket (the real `ws` client), subscribed, its every byte recorded. */
export class SocketTap implements Tap {
  private readonly wire: WireRecording;
  /** The INIT_STATE that answered the subscription. */
  init: Frame = { op: -1 };

  private constructor(
    readonly name: string,
    readonly client: SocketClient,
    private readonly zlib: boolean,
  ) {
    this.wire = new WireRecording(client.tcp);
  }

  /** Opens a socket (zlib_json when `zlib`), subscribes with `d` (op 2) and takes its INIT_STATE. */
  static async open(
    base: string,
    name: string,
    zlib: boolean,
    d: Record<string, unknown>,
  ): Promise<SocketTap> {
    const client = await SocketClient.open(socketUrl(base, zlib ? '?compression=zlib_json' : ''));
    const hello = await client.next();
    expect(hello.op, `${name}: Hello first`).toBe(1);
    // Heartbeats well inside the interval, so a socket that lives through the whole file stays open.
    client.keepAlive(10_000);
    // The TCP stream is recorded from here: Hello came before, nothing of anyone's presence did.
    const tap = new SocketTap(name, client, zlib);
    tap.init = await client.subscribe(d);
    return tap;
  }

  mark(): Mark {
    return { messages: this.client.raw.length, wire: this.wire.length };
  }

  /**
   * Each message since `from` as the client decodes it (inflated for zlib), then, for a plain JSON socket,
   * the TCP bytes as they came (a zlib socket's are deflated: searching them would prove nothing, and a
   * short marker could turn up in them by chance).
   */
  text(from: Mark = START): string {
    const messages = this.client.raw
      .slice(from.messages)
      .map((message) => (message.binary ? inflateSync(message.data) : message.data).toString('utf8'));
    return `${messages.join('\n')}\n${this.zlib ? '' : this.wire.since(from.wire)}`;
  }

  /** The INIT_STATE as it was sent (inflated when zlib). */
  initText(): string {
    const first = this.client.raw.find((_, index) => this.client.frames[index]?.t === 'INIT_STATE');
    if (!first) throw new Error(`${this.name}: no INIT_STATE`);
    return (first.binary ? inflateSync(first.data) : first.data).toString('utf8');
  }

  presences(userId: string, from: Mark = START): PresenceJson[] {
    return this.client.frames.slice(from.messages).flatMap((frame) => presencesInFrame(frame, userId));
  }

  /** Frames since `from` (parsed), for a message on failure. */
  frames(from: Mark = START): Frame[] {
    return this.client.frames.slice(from.messages);
  }

  /**
   * Resolves once the server has taken a ping sent now: every frame it wrote before reading it (an update
   * caused by a request answered before this was called) has arrived by then.
   */
  async barrier(): Promise<void> {
    expect(await this.client.ping()).toBe('pong');
  }

  close(): void {
    this.client.ws.terminate();
  }
}

/** A Server-Sent Events stream read over its own TCP connection, every byte recorded. */
export class SseTap implements Tap {
  private constructor(
    readonly name: string,
    readonly reader: SseReader,
    private readonly wire: WireRecording,
  ) {}

  /** Opens `path` and waits for the answer's head (the status may be a refusal: see `reader.status`). */
  static async open(base: string, name: string, path: string): Promise<SseTap> {
    const reader = await SseReader.open(base, path);
    // Attached in the turn the request was written: no byte of the answer can have been emitted yet.
    const tap = new SseTap(name, reader, new WireRecording(reader.socket));
    await reader.answered();
    return tap;
  }

  /** Opens a stream and waits until its opening has ended (the `id:` that closes it, or an event's). */
  static async opened(base: string, name: string, path: string): Promise<SseTap> {
    const tap = await SseTap.open(base, name, path);
    expect(tap.reader.status, `${name}: ${tap.reader.body}`).toBe(200);
    await tap.reader.waitFor(() => tap.reader.lastEventId !== '', 'the end of the opening');
    return tap;
  }

  mark(): Mark {
    return { messages: this.reader.events.length, wire: this.wire.length };
  }

  text(from: Mark = START): string {
    return this.wire.since(from.wire);
  }

  presences(userId: string, from: Mark = START): PresenceJson[] {
    return this.reader.presences(from.messages).filter((presence) => presence.user_id === userId);
  }

  close(): void {
    this.reader.close();
  }
}

/** The deliveries a loopback receiver took for one user's webhooks. */
export class WebhookTap implements Tap {
  constructor(
    readonly name: string,
    private readonly receiver: WebhookReceiver,
    private readonly userId: string,
  ) {}

  mark(): Mark {
    return { messages: this.receiver.received.length, wire: 0 };
  }

  private since(from: Mark) {
    return this.receiver.received.slice(from.messages).filter((entry) => entry.body.user_id === this.userId);
  }

  /** Every delivery's raw body and headers since `from`. */
  text(from: Mark = START): string {
    return this.since(from)
      .map((entry) => `${JSON.stringify(entry.headers)}\n${entry.raw}`)
      .join('\n');
  }

  presences(userId: string, from: Mark = START): PresenceJson[] {
    return this.since(from)
      .filter((entry) => entry.body.type === 'presence' && entry.body.user_id === userId)
      .map((entry) => entry.body.data as PresenceJson);
  }

  /** The `data` of the `kv` events since `from`. */
  kvEvents(from: Mark = START): unknown[] {
    return this.since(from)
      .filter((entry) => entry.body.type === 'kv')
      .map((entry) => entry.body.data);
  }

  close(): void {}
}

/** The markers found in `text`: none may be, where the data they stand for is hidden. */
export function expectNone(where: string, text: string, markers: readonly string[]): void {
  const found = markers.filter((marker) => text.includes(marker));
  expect(found, `${where} carries hidden data`).toEqual([]);
}

/** The positive control: every marker is in `text`, or the test would prove nothing. */
export function expectAll(where: string, text: string, markers: readonly string[]): void {
  const missing = markers.filter((marker) => !text.includes(marker));
  expect(missing, `${where} should carry the data before it is hidden (positive control)`).toEqual([]);
}
