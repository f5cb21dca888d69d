import type { ServerResponse } from 'node:http';
import type { Snowflake } from '../presence/model.js';
import { FRAGMENT_AT_BYTES } from '../socket/frames.js';
import { drained, STREAM_HIGH_WATER_BYTES, turnWithRoom } from '../socket/outbound.js';
import type { SseChunk } from './wire.js';

/** A chunk waiting behind a large one, and whose presence it carries (null: no presence). */
interface Waiting {
  chunk: SseChunk;
  userId: Snowflake | null;
}

/**
 * One client's event stream. A small chunk is written at once; a chunk with a large piece (a large
 * presence's shared bytes) is written as the connection drains, in slices spread over turns of the event
 * loop with every socket's (outbound.ts), and what comes meanwhile waits behind it, in order, one event per
 * user: a newer event of a user replaces the one waiting, as the socket gateway sends a user's presence as
 * it is then. Memory stays bounded: a stream whose unsent bytes are past its cap when the next chunk comes
 * is cut.
 */
export class SseStream {
  private readonly waiting: Waiting[] = [];
  private waitingBytes = 0;
  private pumping = false;
  /** Ended, cut or gone: nothing more is written. */
  closed = false;
  /** Since when its connection has held bytes it does not take; null while it takes them. */
  stalledSince: number | null = null;

  constructor(
    readonly response: ServerResponse,
    /** Whose it is (clientKey): its slot is theirs. */
    readonly client: string,
    private readonly capBytes: number,
  ) {
    response.once('close', () => {
      this.closed = true;
    });
  }

  /** A large chunk is being written: anything sent now waits behind it. */
  get busy(): boolean {
    return this.pumping;
  }

  /**
   * Bytes given to the stream that its connection has not taken yet: written, or waiting behind the chunk
   * being written (which counts only as far as it is written, so one large presence never condemns a
   * stream that reads).
   */
  get unsentBytes(): number {
    return this.response.writableLength + this.waitingBytes;
  }

  /** Sends the chunk (the event of `userId`'s presence, if it is one) after what waits; or cuts a stream too slow for it. */
  send(chunk: SseChunk, userId: Snowflake | null = null): void {
    if (this.closed) return;
    if (this.unsentBytes > this.capBytes) {
      this.cut();
      return;
    }
    if (!this.pumping && chunk.bytes < FRAGMENT_AT_BYTES) {
      for (const piece of chunk.pieces) this.write(piece);
      return;
    }
    const older = userId === null ? -1 : this.waiting.findIndex((waiting) => waiting.userId === userId);
    if (older >= 0) this.waitingBytes -= this.waiting.splice(older, 1)[0]?.chunk.bytes ?? 0;
    this.waiting.push({ chunk, userId });
    this.waitingBytes += chunk.bytes;
    if (!this.pumping) void this.pump();
  }

  /** The server is going away: what was written is delivered, then the connection closes. */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.response.end();
  }

  /** A client that does not read: what waits for it is let go at once. */
  cut(): void {
    if (this.closed) return;
    this.closed = true;
    this.response.destroy();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    for (let next = this.waiting.shift(); next && !this.closed; next = this.waiting.shift()) {
      this.waitingBytes -= next.chunk.bytes;
      for (const piece of next.chunk.pieces) await this.writeSliced(piece);
    }
    this.waiting.length = 0;
    this.waitingBytes = 0;
    this.pumping = false;
  }

  /** A large piece as views of at most STREAM_HIGH_WATER_BYTES, each once the connection has room. */
  private async writeSliced(piece: Buffer): Promise<void> {
    if (piece.length < FRAGMENT_AT_BYTES) {
      this.write(piece);
      return;
    }
    for (let from = 0; from < piece.length && !this.closed; from += STREAM_HIGH_WATER_BYTES) {
      if (this.response.writableLength >= STREAM_HIGH_WATER_BYTES) await this.drained();
      const slice = piece.subarray(from, from + STREAM_HIGH_WATER_BYTES);
      await turnWithRoom(slice.length, () => this.closed);
      this.write(slice);
    }
  }

  private write(piece: Buffer): void {
    if (this.closed || this.response.write(piece) || this.stalledSince !== null) return;
    this.stalledSince = Date.now();
    this.response.once('drain', () => {
      this.stalledSince = null;
    });
  }

  private drained(): Promise<void> {
    return this.closed ? Promise.resolve() : drained(this.response);
  }
}
