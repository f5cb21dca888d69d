import { DIGEST_BYTES, digestInto } from './body-digest.js';
import { grown } from './snowflake-slots.js';

/** Bytes of a chunk: every text held, with its digest, is shorter than this. */
export const CHUNK_BYTES = 1024 * 1024;
const NOWHERE = -1;
const FIRST_CAPACITY = 1024;
/**
 * Numbers per slot in `where`: its chunk, where its digest starts, its text's length, and one unused, so a
 * record is 16 bytes and never spans two cache lines.
 */
const WHERE = 4;
/**
 * Chunks emptied out that are kept to be written into again, at most: a chunk allocated anew is memory
 * mapped anew, its pages faulted in one by one as texts are first written into them.
 */
const SPARE_BUFFERS = 4;

/**
 * ASCII texts, one per slot, side by side in chunks of memory outside the JS heap: a few buffers, not a
 * string per text for the garbage collector to visit. Each text is held after its digest (`bodyDigest`),
 * and where a slot's are is one record, so a read of one slot among many goes to memory in few places.
 * A slot may hold UTF-8 instead (`writeUtf8`), with the room for a digest left unused.
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
  /** Buffers of chunks let go, to hold new chunks. */
  private readonly spareBuffers: Buffer[] = [];
  private current = NOWHERE;
  private at = CHUNK_BYTES;
  /** Per slot, WHERE numbers: its chunk (NOWHERE when it holds no text), start, length. */
  private where = new Int32Array(FIRST_CAPACITY * WHERE).fill(NOWHERE);

  /** Makes room for slots below `capacity`. */
  reserve(capacity: number): void {
    const from = this.where.length;
    if (capacity * WHERE <= from) return;
    this.where = grown(this.where, capacity * WHERE);
    this.where.fill(NOWHERE, from);
  }

  /** Whether the slot holds a text. */
  holds(slot: number): boolean {
    return slot * WHERE < this.where.length && this.where[slot * WHERE] !== NOWHERE;
  }

  /**
   * Holds `text`, ASCII shorter than CHUNK_BYTES less a digest, as the slot's, in place of any it had, and
   * its digest, made from the bytes as written.
   */
  write(slot: number, text: string): void {
    this.put(slot, text, 'latin1', text.length);
    const at = slot * WHERE;
    const chunk = this.chunks[this.where[at] as number] as Buffer;
    const start = this.where[at + 1] as number;
    digestInto(chunk, start + DIGEST_BYTES, this.where[at + 2] as number, chunk, start);
  }

  /**
   * Holds well-formed `text` (no lone surrogate, as JSON.stringify writes) as UTF-8, at most three bytes a
   * character, without a digest: a text read back whole by `utf8Text`, never served as it is.
   */
  writeUtf8(slot: number, text: string): void {
    this.put(slot, text, 'utf8', text.length * 3);
  }

  /** A copy of the slot's text written by `writeUtf8`. */
  utf8Text(slot: number): string {
    return this.read(slot, 'utf8');
  }

  /** A copy of the slot's text. */
  text(slot: number): string {
    return this.read(slot, 'latin1');
  }

  private read(slot: number, encoding: 'latin1' | 'utf8'): string {
    const at = slot * WHERE;
    const chunk = this.chunks[this.where[at] as number] as Buffer;
    const start = (this.where[at + 1] as number) + DIGEST_BYTES;
    return chunk.toString(encoding, start, start + (this.where[at + 2] as number));
  }

  /** The digest of the slot's text, as base64url text. */
  digestText(slot: number): string {
    const at = slot * WHERE;
    const start = this.where[at + 1] as number;
    return (this.chunks[this.where[at] as number] as Buffer).toString(
      'base64url',
      start,
      start + DIGEST_BYTES,
    );
  }

  /** A copy of the digest of the slot's text. */
  digest(slot: number): Buffer {
    const at = slot * WHERE;
    const start = this.where[at + 1] as number;
    return Buffer.from(
      (this.chunks[this.where[at] as number] as Buffer).subarray(start, start + DIGEST_BYTES),
    );
  }

  /** Lets the slot's text go, if it has one. */
  free(slot: number): void {
    const at = slot * WHERE;
    const chunk = this.where[at] as number;
    if (chunk === NOWHERE) return;
    this.where[at] = NOWHERE;
    const live = (this.live[chunk] as number) - DIGEST_BYTES - (this.where[at + 2] as number);
    this.live[chunk] = live;
    if (chunk !== this.current && live <= CHUNK_BYTES / 2) this.empty(chunk);
  }

  /** Bytes the arena has taken: its chunks, not counting the few spare buffers kept for new ones. */
  get bytes(): number {
    return (this.chunks.length - this.spare.length) * CHUNK_BYTES;
  }

  /** Writes `text` as the slot's after room for a digest; `most`: the bytes it can take. */
  private put(slot: number, text: string, encoding: 'latin1' | 'utf8', most: number): void {
    if (DIGEST_BYTES + most > CHUNK_BYTES) throw new RangeError('a text held must fit in a chunk');
    this.free(slot);
    if (this.current === NOWHERE || this.at + DIGEST_BYTES + most > CHUNK_BYTES) this.open();
    const chunk = this.chunks[this.current] as Buffer;
    const start = this.at;
    const length = chunk.write(text, start + DIGEST_BYTES, encoding);
    this.place(slot, start, length);
  }

  /** The slot's digest and text, of `length`, are at `start` in the chunk written into. */
  private place(slot: number, start: number, length: number): void {
    const chunk = this.current;
    const at = slot * WHERE;
    this.where[at] = chunk;
    this.where[at + 1] = start;
    this.where[at + 2] = length;
    this.at = start + DIGEST_BYTES + length;
    this.live[chunk] = (this.live[chunk] as number) + DIGEST_BYTES + length;
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
    this.chunks[chunk] = this.spareBuffers.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
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
      if (this.where[slot * WHERE] !== chunk) continue;
      const start = this.where[slot * WHERE + 1] as number;
      const length = this.where[slot * WHERE + 2] as number;
      if (this.at + DIGEST_BYTES + length > CHUNK_BYTES) this.open();
      source.copy(this.chunks[this.current] as Buffer, this.at, start, start + DIGEST_BYTES + length);
      this.place(slot, this.at, length);
    }
    // Only now: a chunk opened while copying must not take this one's number, nor its buffer.
    this.spare.push(chunk);
    if (this.spareBuffers.length < SPARE_BUFFERS) this.spareBuffers.push(source);
  }
}
