import type { Duplex } from 'node:stream';
import { deflateRawSync, deflateSync } from 'node:zlib';
import type { Snowflake } from '../presence/model.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import { frameStart, writeFrame } from './direct-frame.js';
import { Op } from './protocol.js';
import {
  ADLER_START,
  adler32,
  adler32Combine,
  type DeflatedPiece,
  deflatePiece,
  storedBlock,
  streamEnd,
  ZLIB_HEADER,
} from './zlib-pieces.js';

/**
 * One WebSocket message: a buffer or text sent whole, or fragments of one message sent one after the other
 * (the shared bytes of a large presence go out as they are held, never copied per socket), or a stream of
 * fragments produced as the socket drains (see outbound.ts).
 */
export type Message = Buffer | string | Fragments | MessageStream;
export type Fragments = readonly Buffer[];
export type MessageStream = (seq: number) => AsyncIterable<Buffer>;

/** A presence whose JSON is at least this long is sent in fragments around its shared bytes. */
export const FRAGMENT_AT_BYTES = 16 * 1024;

/**
 * Event frames are built once per change and shared by every subscriber. Only `seq` differs per socket,
 * and it comes first, so a frame is a few per-socket bytes followed by the shared tail
 * `"t":"…","d":…}`: no subscriber costs a serialization, and the tail is written to each connection as it
 * is held (direct-frame.ts), never copied. zlib subscribers get the tail deflated once, too: a zlib stream
 * is a header, deflate blocks and a checksum, so the per-socket head goes in a stored (uncompressed) block
 * in front of the shared compressed blocks, and the checksum is combined from the two parts' checksums.
 */
export class SharedEvent {
  readonly tail: Buffer;
  private compressedTail: Buffer | undefined;
  private tailAdler = 0;

  constructor(t: string, dJson: string) {
    this.tail = Buffer.from(`"t":"${t}","d":${dJson}}`);
  }

  /** The frame of `seq` as a text message on `connection`. */
  writeText(connection: Duplex, seq: number): void {
    const digits = decimalLength(seq);
    const headLength = EVENT_HEAD_START.length + digits + 1;
    const start = frameStart(headLength + this.tail.length, false, headLength);
    writeEventHead(start, start.length - headLength, seq, digits);
    writeFrame(connection, start, this.tail);
  }

  /** The frame of `seq` as a zlib_json binary message on `connection`. */
  writeZlib(connection: Duplex, seq: number): void {
    if (this.compressedTail === undefined) {
      this.compressedTail = deflateRawSync(this.tail);
      this.tailAdler = adler32(this.tail);
    }
    const head = eventHead(seq);
    const block = storedBlock(head);
    const payloadLength = ZLIB_HEADER.length + block.length + this.compressedTail.length + CHECKSUM_BYTES;
    const start = frameStart(payloadLength, true, ZLIB_HEADER.length + block.length);
    let at = start.length - ZLIB_HEADER.length - block.length;
    at += ZLIB_HEADER.copy(start, at);
    block.copy(start, at);
    const checksum = Buffer.allocUnsafe(CHECKSUM_BYTES);
    checksum.writeUInt32BE(adler32Combine(adler32(head), this.tailAdler, this.tail.length));
    writeFrame(connection, start, this.compressedTail, checksum);
  }
}

/**
 * A PRESENCE_UPDATE of a large presence: the frame is the per-socket head, the presence's JSON as the
 * snapshot holds it, and a closing brace, sent as fragments of one message. zlib subscribers get the JSON
 * deflated once per snapshot (off the event loop), spliced between stored blocks of their own bytes.
 */
export class LargePresenceEvent {
  private readonly prefix: Buffer;

  constructor(
    userId: Snowflake,
    private readonly snapshot: PresenceSnapshot,
  ) {
    this.prefix = Buffer.from(`"t":"PRESENCE_UPDATE","d":{"user_id":${JSON.stringify(userId)},`);
  }

  text(seq: number): Fragments {
    return [Buffer.concat([eventHead(seq), this.prefix]), presenceTail(this.snapshot), CLOSE_BRACE];
  }

  textStream(): MessageStream {
    const text = (seq: number): Fragments => this.text(seq);
    return async function* (seq) {
      yield* text(seq);
    };
  }

  zlib(): MessageStream {
    const { prefix, snapshot } = this;
    return async function* (seq) {
      const piece = await deflatedTail(snapshot);
      yield* splicedZlib(Buffer.concat([eventHead(seq), prefix]), piece, CLOSE_BRACE);
    };
  }
}

/**
 * A presence as a change of it is pushed: `user_id` first inside it, as Lanyard's PRESENCE_UPDATE `d` has
 * it, so a subscriber of several users can tell whose it is (socket frames and SSE events alike).
 */
export function withUserId(userId: Snowflake, presenceJson: string): string {
  return `{"user_id":${JSON.stringify(userId)},${presenceJson.slice(1)}`;
}

/** The shared bytes of a large presence's frames: its JSON without the opening brace (a view, no copy). */
export function presenceTail(snapshot: PresenceSnapshot): Buffer {
  const json = snapshot.jsonData();
  return typeof json === 'string' ? Buffer.from(json.slice(1), 'latin1') : json.subarray(1);
}

/** Each large snapshot's tail deflated once, for every message and socket that sends it. */
const deflatedTails = new WeakMap<PresenceSnapshot, Promise<DeflatedPiece>>();

export function deflatedTail(snapshot: PresenceSnapshot): Promise<DeflatedPiece> {
  let piece = deflatedTails.get(snapshot);
  if (!piece) {
    piece = deflatePiece(presenceTail(snapshot));
    deflatedTails.set(snapshot, piece);
  }
  return piece;
}

/** A zlib message of `head`, a piece deflated once, and `tail`, as three fragments. */
function splicedZlib(head: Buffer, piece: DeflatedPiece, tail: Buffer): Buffer[] {
  let adler = adler32Combine(ADLER_START, adler32(head), head.length);
  adler = adler32Combine(adler, piece.adler, piece.length);
  adler = adler32Combine(adler, adler32(tail), tail.length);
  return [
    Buffer.concat([ZLIB_HEADER, storedBlock(head)]),
    piece.deflated,
    Buffer.concat([storedBlock(tail), streamEnd(adler)]),
  ];
}

const CLOSE_BRACE = Buffer.from('}');

/** A frame sent to one socket only (Hello, a small INIT_STATE): serialized for it alone. */
export function singleFrame(json: string, compressed: boolean): Buffer | string {
  return compressed ? deflateSync(json) : json;
}

export function helloJson(heartbeatIntervalMs: number): string {
  return `{"op":${Op.Hello},"d":{"heartbeat_interval":${heartbeatIntervalMs}}}`;
}

export function eventJson(seq: number, t: string, dJson: string): string {
  return `{"op":${Op.Event},"seq":${seq},"t":"${t}","d":${dJson}}`;
}

const EVENT_HEAD_START = Buffer.from(`{"op":${Op.Event},"seq":`);
const COMMA = 0x2c;
const DIGIT_ZERO = 0x30;
const CHECKSUM_BYTES = 4;

/** `{"op":0,"seq":<seq>,` written at `at`, byte by byte: per socket, no string is made for it. */
function writeEventHead(target: Buffer, at: number, seq: number, digits: number): void {
  for (let i = 0; i < EVENT_HEAD_START.length; i++) target[at + i] = EVENT_HEAD_START[i] as number;
  let rest = seq;
  for (let i = at + EVENT_HEAD_START.length + digits - 1; i >= at + EVENT_HEAD_START.length; i--) {
    target[i] = DIGIT_ZERO + (rest % 10);
    rest = Math.floor(rest / 10);
  }
  target[at + EVENT_HEAD_START.length + digits] = COMMA;
}

function decimalLength(value: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  return digits;
}

function eventHead(seq: number): Buffer {
  return Buffer.from(`{"op":${Op.Event},"seq":${seq},`);
}
