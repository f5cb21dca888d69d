import type { Duplex, Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { WebSocket } from 'ws';
import { FRAGMENT_AT_BYTES, type Fragments, type MessageStream, type SharedEvent } from './frames.js';

/** A stream waits for the socket to drain once this much is buffered: memory per socket stays bounded. */
export const STREAM_HIGH_WATER_BYTES = 256 * 1024;
/** A stream lets other work run after producing this much in one go, so one socket never holds the loop. */
const STREAM_SLICE_BYTES = 256 * 1024;
/**
 * Large fragments (a large presence's shared bytes) all sockets together write in one turn of the event
 * loop: a presence of a megabyte fanned out to a hundred sockets is written over four hundred turns, with
 * every other client served in between, not in one long stall.
 */
export const TURN_WRITE_BYTES = 256 * 1024;

let writtenThisTurn = 0;
let turnEndScheduled = false;
/**
 * Writes waiting for a turn with room, first come first served: each waits once, where asking again every
 * turn would make hundreds of waiting writes allocate a promise each turn, and the garbage collections
 * that follow would stall every client.
 */
const waiting: Array<{ bytes: number; go: () => void; gone: () => boolean }> = [];

/**
 * Waits for a turn with room for `bytes` more, after every write that waited before, then counts them in it
 * (sockets, event streams and REST bodies share the budget). A turn with nothing written yet takes any size.
 * `gone`: whether the connection has closed meanwhile; its write then goes without taking room from others.
 */
export function turnWithRoom(bytes: number, gone: () => boolean): Promise<void> {
  if (waiting.length === 0 && hasRoom(bytes)) {
    count(bytes);
    return Promise.resolve();
  }
  return new Promise((go) => {
    waiting.push({ bytes, go, gone });
    endTurnSoon();
  });
}

const hasRoom = (bytes: number): boolean =>
  writtenThisTurn === 0 || writtenThisTurn + bytes <= TURN_WRITE_BYTES;

function count(bytes: number): void {
  writtenThisTurn += bytes;
  endTurnSoon();
}

function endTurnSoon(): void {
  if (turnEndScheduled) return;
  turnEndScheduled = true;
  setImmediate(endTurn);
}

/** A new turn: the writes that waited go, in order, while it has room. */
function endTurn(): void {
  turnEndScheduled = false;
  writtenThisTurn = 0;
  let admitted = 0;
  for (; admitted < waiting.length; admitted++) {
    const { bytes, go, gone } = waiting[admitted] as (typeof waiting)[number];
    if (gone()) {
      go();
      continue;
    }
    if (!hasRoom(bytes)) break;
    count(bytes);
    go();
  }
  waiting.splice(0, admitted);
}

/** Resolves once `response` has drained what it holds, or has closed. */
export function drained(response: Pick<Writable, 'on' | 'off'>): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}

export interface OutboundHooks {
  /** The seq of the stream about to start: taken when it starts, so seqs go out in order. */
  nextSeq(): number;
  /** Every queued stream has been sent and the socket is free: what waited for them may go now. */
  idle(): void;
  closed(): boolean;
  failed(error: unknown): void;
}

/**
 * What one socket sends. Whole messages go out at once; a message of fragments goes out fragment after
 * fragment, the shared ones as they are; a stream (a large INIT_STATE, a presence waiting to be deflated)
 * is produced as the socket drains, one at a time, in order. While a stream is under way nothing else is
 * sent on the socket (a fragmented message must not be interleaved): the caller holds what comes meanwhile.
 */
export class Outbound {
  private readonly streams: MessageStream[] = [];
  private running = false;
  /** When the socket began waiting for its buffer to drain; null while it is not waiting. */
  waitingSince: number | null = null;

  constructor(
    private readonly ws: WebSocket,
    /** The connection under `ws`: its `drain` paces streams. */
    private readonly socket: Duplex,
    private readonly binary: boolean,
    private readonly hooks: OutboundHooks,
  ) {}

  /** A stream is being sent (or waits to be). */
  get busy(): boolean {
    return this.running;
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  send(message: Buffer | string | Fragments): void {
    if (typeof message === 'string' || Buffer.isBuffer(message)) {
      this.ws.send(message, { binary: this.binary });
      return;
    }
    const last = message.length - 1;
    for (let i = 0; i <= last; i++) {
      this.ws.send(message[i] as Buffer, { binary: this.binary, fin: i === last });
    }
  }

  /** An event shared with other sockets, at this socket's `seq`, its shared bytes written as held. */
  sendShared(event: SharedEvent, seq: number): void {
    if (this.binary) event.writeZlib(this.socket, seq);
    else event.writeText(this.socket, seq);
  }

  stream(stream: MessageStream): void {
    this.streams.push(stream);
    if (!this.running) void this.run();
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      for (let next = this.streams.shift(); next && !this.hooks.closed(); next = this.streams.shift()) {
        await this.pump(next(this.hooks.nextSeq()));
      }
    } catch (error) {
      this.streams.length = 0;
      this.running = false;
      this.hooks.failed(error);
      return;
    }
    this.streams.length = 0;
    this.running = false;
    // No longer busy: what waited is sent now (and may start a stream of its own).
    if (!this.hooks.closed()) this.hooks.idle();
  }

  /** Sends the fragments one behind the other; the last one, once known, ends the message. */
  private async pump(fragments: AsyncIterable<Buffer>): Promise<void> {
    let held: Buffer | null = null;
    let produced = 0;
    for await (const fragment of fragments) {
      if (this.hooks.closed()) return;
      if (held) await this.write(held, false);
      held = fragment;
      produced += fragment.length;
      if (this.ws.bufferedAmount >= STREAM_HIGH_WATER_BYTES) {
        await this.drained();
        produced = 0;
      } else if (produced >= STREAM_SLICE_BYTES) {
        await nextTurn();
        produced = 0;
      }
    }
    if (held) await this.write(held, true);
  }

  /**
   * Writes a fragment, a large one as views of at most STREAM_HIGH_WATER_BYTES each, paced like the rest:
   * however large a presence, what waits for a socket stays about that size.
   */
  private async write(fragment: Buffer, fin: boolean): Promise<void> {
    for (let from = 0; from < fragment.length || from === 0; from += STREAM_HIGH_WATER_BYTES) {
      const piece =
        fragment.length > STREAM_HIGH_WATER_BYTES
          ? fragment.subarray(from, from + STREAM_HIGH_WATER_BYTES)
          : fragment;
      const last = from + STREAM_HIGH_WATER_BYTES >= fragment.length;
      if (from > 0 && this.ws.bufferedAmount >= STREAM_HIGH_WATER_BYTES) await this.drained();
      if (piece.length >= FRAGMENT_AT_BYTES) await turnWithRoom(piece.length, () => this.hooks.closed());
      if (this.hooks.closed()) return;
      this.ws.send(piece, { binary: this.binary, fin: fin && last });
    }
  }

  private drained(): Promise<void> {
    if (this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.waitingSince = Date.now();
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        this.waitingSince = null;
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }
}
