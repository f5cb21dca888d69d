import { digestInto } from './body-digest.js';
import { grown } from './snowflake-slots.js';

/** Bytes of a chunk: every text held is shorter than this. */
export const CHUNK_BYTES = 1024 * 1024;
const NOWHERE = -1;
const FIRST_CAPACITY = 1024;

/**
 * ASCII texts, one per slot, side by side in chunks of memory outside the JS heap: a million texts are a
 * few hundred buffers, not a million strings for the garbage collector to visit.
 *
 * A text is written after the last one, and a changed text is written anew, leaving a hole. A chunk
 * that is no longer written into and has become at least half holes has its texts copied to the end and
 * is let go, so the holes never hold more than the texts. Readers get copies (`text`), never a view: a
 * text can move at any time.
 */
export class BodyArena {
  private readonly chunks: (Buffer | null)[] = [];
  /** Per chunk, the bytes of its texts still held. */
  private readonly live: number[] = [];
  /** Per chunk, the slots written into it, to find its texts when it is emptied out. */
  private readonly written: Int32Array[] = [];
  private readonly writtenCount: number[] = [];
  /** Chunks let go, whose numbers are free for new ones. */
  private readonly spare: number[] = [];
  private current = NOWHERE;
  private at = CHUNK_BYTES;
  private chunkOf = new Int32Array(FIRST_CAPACITY).fill(NOWHERE);
  private startOf = new Int32Array(FIRST_CAPACITY);
  private lengthOf = new Int32Array(FIRST_CAPACITY);

  /** Makes room for slots below `capacity`. */
  reserve(capacity: number): void {
    if (capacity <= this.chunkOf.length) return;
    const from = this.chunkOf.length;
    this.chunkOf = grown(this.chunkOf, capacity);
    this.chunkOf.fill(NOWHERE, from);
    this.startOf = grown(this.startOf, capacity);
    this.lengthOf = grown(this.lengthOf, capacity);
  }

  /** Whether the slot holds a text. */
  holds(slot: number): boolean {
    return slot < this.chunkOf.length && this.chunkOf[slot] !== NOWHERE;
  }

  /** Holds `text`, ASCII shorter than CHUNK_BYTES, as the slot's, in place of any it had. */
  write(slot: number, text: string): void {
    this.free(slot);
    if (this.current === NOWHERE || this.at + text.length > CHUNK_BYTES) this.open();
    const chunk = this.chunks[this.current] as Buffer;
    const length = chunk.write(text, this.at, 'latin1');
    this.place(slot, this.at, length);
  }

  /** A copy of the slot's text. */
  text(slot: number): string {
    const chunk = this.chunks[this.chunkOf[slot] as number] as Buffer;
    const start = this.startOf[slot] as number;
    return chunk.toString('latin1', start, start + (this.lengthOf[slot] as number));
  }

  /** Writes the digest of the slot's text (`bodyDigest`) into `out` at `at`, from the bytes held. */
  digest(slot: number, out: Uint8Array, at: number): void {
    const chunk = this.chunks[this.chunkOf[slot] as number] as Buffer;
    digestInto(chunk, this.startOf[slot] as number, this.lengthOf[slot] as number, out, at);
  }

  /** Lets the slot's text go, if it has one. */
  free(slot: number): void {
    const chunk = this.chunkOf[slot] as number;
    if (chunk === NOWHERE) return;
    this.chunkOf[slot] = NOWHERE;
    const live = (this.live[chunk] as number) - (this.lengthOf[slot] as number);
    this.live[chunk] = live;
    if (chunk !== this.current && live <= CHUNK_BYTES / 2) this.empty(chunk);
  }

  /** Bytes the arena has taken: its chunks. */
  get bytes(): number {
    return (this.chunks.length - this.spare.length) * CHUNK_BYTES;
  }

  private place(slot: number, start: number, length: number): void {
    const chunk = this.current;
    this.chunkOf[slot] = chunk;
    this.startOf[slot] = start;
    this.lengthOf[slot] = length;
    this.at = start + length;
    this.live[chunk] = (this.live[chunk] as number) + length;
    let log = this.written[chunk] as Int32Array;
    const count = this.writtenCount[chunk] as number;
    if (count === log.length) {
      log = grown(log, log.length * 2);
      this.written[chunk] = log;
    }
    log[count] = slot;
    this.writtenCount[chunk] = count + 1;
  }

  /** A new chunk to write into: the one written into so far may be emptied out from now on. */
  private open(): void {
    const previous = this.current;
    const chunk = this.spare.pop() ?? this.chunks.length;
    this.chunks[chunk] = Buffer.allocUnsafeSlow(CHUNK_BYTES);
    this.live[chunk] = 0;
    this.written[chunk] = new Int32Array(1024);
    this.writtenCount[chunk] = 0;
    this.current = chunk;
    this.at = 0;
    if (previous !== NOWHERE && (this.live[previous] as number) <= CHUNK_BYTES / 2) this.empty(previous);
  }

  /** Copies the chunk's texts to the end and lets it go. */
  private empty(chunk: number): void {
    const source = this.chunks[chunk] as Buffer;
    const log = this.written[chunk] as Int32Array;
    const count = this.writtenCount[chunk] as number;
    this.chunks[chunk] = null;
    this.written[chunk] = new Int32Array(0);
    this.writtenCount[chunk] = 0;
    this.live[chunk] = 0;
    for (let i = 0; i < count; i++) {
      const slot = log[i] as number;
      if (this.chunkOf[slot] !== chunk) continue;
      const start = this.startOf[slot] as number;
      const length = this.lengthOf[slot] as number;
      if (this.at + length > CHUNK_BYTES) this.open();
      source.copy(this.chunks[this.current] as Buffer, this.at, start, start + length);
      this.place(slot, this.at, length);
    }
    // Only now: a chunk opened while copying must not take this one's number.
    this.spare.push(chunk);
  }
}
