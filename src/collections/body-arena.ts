import { DIGEST_BYTES, digestInto } from './body-digest.js';
import { grown } from './snowflake-slots.js';

/**
 * Where the arena keeps its record of each slot's text: Int32s per slot that it alone writes, zero for a
 * slot never written (SnowflakeSlots with ARENA_ROOM_INTS of room: read beside the slot's key).
 */
export interface SlotRoom {
  /** The Int32s; may be a new array after a slot is added. */
  readonly room: Int32Array;
  /** Where the ARENA_ROOM_INTS of a slot in use start in `room`. */
  roomAt(slot: number): number;
}

/** Bytes of a chunk: every text held, with its digest, is shorter than this. */
export const CHUNK_BYTES = 1024 * 1024;
const NOWHERE = -1;
/**
 * A slot's record: its chunk's number plus one (0: no text), where its digest starts, its text's length,
 * and its encoding.
 */
export const ARENA_ROOM_INTS = 4;
const CHUNK = 0;
const START = 1;
const LENGTH = 2;
const ENCODING = 3;
const ASCII = 0;
const UTF8 = 1;
/**
 * Chunks emptied out that are kept to be written into again, at most: a chunk allocated anew is memory
 * mapped anew, its pages faulted in one by one as texts are first written into them.
 */
const SPARE_BUFFERS = 4;

/**
 * ASCII texts, one per slot, side by side in chunks of memory outside the JS heap: a few buffers, not a
 * string per text (why: docs/architecture.md#per-user-state-off-the-js-heap).
 * Each text is held after its digest (`bodyDigest`), and where a slot's are is one record kept in the
 * slot's room (`SlotRoom`), beside its key, so a read of one slot among many goes to memory in few places. A slot may hold UTF-8 instead (`writeUtf8`), with
 * the room for a digest left unused.
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

  /** `slots`: where each slot's record is kept. */
  constructor(private readonly slots: SlotRoom) {}

  /** Whether the slot holds a text. */
  holds(slot: number): boolean {
    return this.slots.room[this.slots.roomAt(slot) + CHUNK] !== 0;
  }

  /** Whether the slot holds a text written by `writeUtf8`. */
  holdsUtf8(slot: number): boolean {
    const at = this.slots.roomAt(slot);
    const room = this.slots.room;
    return room[at + CHUNK] !== 0 && room[at + ENCODING] === UTF8;
  }

  /**
   * Holds `text`, ASCII shorter than CHUNK_BYTES less a digest, as the slot's, in place of any it had, and
   * its digest, made from the bytes as written.
   */
  write(slot: number, text: string): void {
    this.put(slot, text, 'latin1', text.length);
    const at = this.slots.roomAt(slot);
    const room = this.slots.room;
    const chunk = this.chunkOf(room, at);
    const start = room[at + START] as number;
    digestInto(chunk, start + DIGEST_BYTES, room[at + LENGTH] as number, chunk, start);
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
    const at = this.slots.roomAt(slot);
    const room = this.slots.room;
    const start = (room[at + START] as number) + DIGEST_BYTES;
    return this.chunkOf(room, at).toString(encoding, start, start + (room[at + LENGTH] as number));
  }

  /** The digest of the slot's text, as base64url text. */
  digestText(slot: number): string {
    const at = this.slots.roomAt(slot);
    const room = this.slots.room;
    const start = room[at + START] as number;
    return this.chunkOf(room, at).toString('base64url', start, start + DIGEST_BYTES);
  }

  /** A copy of the digest of the slot's text. */
  digest(slot: number): Buffer {
    const at = this.slots.roomAt(slot);
    const room = this.slots.room;
    const start = room[at + START] as number;
    return Buffer.from(this.chunkOf(room, at).subarray(start, start + DIGEST_BYTES));
  }

  /** Lets the slot's text go, if it has one. */
  free(slot: number): void {
    const at = this.slots.roomAt(slot);
    const room = this.slots.room;
    const chunk = (room[at + CHUNK] as number) - 1;
    if (chunk === NOWHERE) return;
    room[at + CHUNK] = 0;
    const live = (this.live[chunk] as number) - DIGEST_BYTES - (room[at + LENGTH] as number);
    this.live[chunk] = live;
    if (chunk !== this.current && live <= CHUNK_BYTES / 2) this.empty(chunk);
  }

  /** Bytes the arena has taken: its chunks, not counting the few spare buffers kept for new ones. */
  get bytes(): number {
    return (this.chunks.length - this.spare.length) * CHUNK_BYTES;
  }

  /** The chunk holding the text of the record at `at`. */
  private chunkOf(room: Int32Array, at: number): Buffer {
    return this.chunks[(room[at + CHUNK] as number) - 1] as Buffer;
  }

  /** Writes `text` as the slot's after room for a digest; `most`: the bytes it can take. */
  private put(slot: number, text: string, encoding: 'latin1' | 'utf8', most: number): void {
    if (DIGEST_BYTES + most > CHUNK_BYTES) throw new RangeError('a text held must fit in a chunk');
    this.free(slot);
    if (this.current === NOWHERE || this.at + DIGEST_BYTES + most > CHUNK_BYTES) this.open();
    const chunk = this.chunks[this.current] as Buffer;
    const start = this.at;
    const length = chunk.write(text, start + DIGEST_BYTES, encoding);
    this.place(slot, start, length, encoding === 'utf8' ? UTF8 : ASCII);
  }

  /** The slot's digest and text, of `length`, are at `start` in the chunk written into. */
  private place(slot: number, start: number, length: number, encoding: number): void {
    const chunk = this.current;
    const at = this.slots.roomAt(slot);
    const room = this.slots.room;
    room[at + CHUNK] = chunk + 1;
    room[at + START] = start;
    room[at + LENGTH] = length;
    room[at + ENCODING] = encoding;
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
    const room = this.slots.room;
    for (let i = 0; i < count; i++) {
      const slot = log[i] as number;
      const at = this.slots.roomAt(slot);
      if (room[at + CHUNK] !== chunk + 1) continue;
      const start = room[at + START] as number;
      const length = room[at + LENGTH] as number;
      if (this.at + DIGEST_BYTES + length > CHUNK_BYTES) this.open();
      source.copy(this.chunks[this.current] as Buffer, this.at, start, start + DIGEST_BYTES + length);
      this.place(slot, this.at, length, room[at + ENCODING] as number);
    }
    // Only now: a chunk opened while copying must not take this one's number, nor its buffer.
    this.spare.push(chunk);
    if (this.spareBuffers.length < SPARE_BUFFERS) this.spareBuffers.push(source);
  }
}
