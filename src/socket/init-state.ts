import type { Snowflake } from '../presence/model.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import { deflatedTail, eventJson, FRAGMENT_AT_BYTES, type MessageStream, presenceTail } from './frames.js';
import { Op } from './protocol.js';
import { ADLER_START, adler32Combine, deflatePiece, streamEnd, ZLIB_HEADER } from './zlib-pieces.js';

/**
 * INIT_STATE, whatever it holds, is one message that is never one string: a map of a thousand presences,
 * or of everyone on a large instance, or a presence with a KV at its cap, is written in chunks as the socket
 * drains (outbound.ts), large presences as the bytes their snapshots hold. Only an INIT_STATE known to be
 * small is built at once.
 */

/** An INIT_STATE at most this long (the presences' JSON together) is built at once, as one frame. */
export const INIT_STATE_AT_ONCE_BYTES = 64 * 1024;
/** zlib sockets: deflating is the cost, so only smaller ones are deflated on the event loop. */
export const INIT_STATE_AT_ONCE_ZLIB_BYTES = 16 * 1024;
/** Chunks of an INIT_STATE written in pieces: small presences are gathered up to this size. */
export const INIT_STATE_CHUNK_BYTES = 64 * 1024;

/** What an INIT_STATE answers: one user (`subscribe_to_id` alone), or a map of the monitored among many. */
export type InitState =
  | { kind: 'single'; snapshot: PresenceSnapshot | undefined }
  | { kind: 'map'; entries: () => Iterable<[Snowflake, PresenceSnapshot]>; small: boolean };

/**
 * The INIT_STATE of the presences `entries` lists: built at once when small (found by reading no further
 * than the limit), else written as the socket drains. `entries` is read again then, so what is sent is
 * each presence as it is at that moment.
 */
export function mapOf(
  entries: () => Iterable<[Snowflake, PresenceSnapshot]>,
  compressed: boolean,
): InitState {
  const limit = compressed ? INIT_STATE_AT_ONCE_ZLIB_BYTES : INIT_STATE_AT_ONCE_BYTES;
  let bytes = 0;
  for (const [, snapshot] of entries()) {
    bytes += snapshot.body.length;
    if (bytes > limit) break;
  }
  return { kind: 'map', entries, small: bytes <= limit };
}

/** The monitored among `ids`, in order. */
export function* monitoredAmong(
  ids: readonly Snowflake[],
  get: (id: Snowflake) => PresenceSnapshot | undefined,
): Iterable<[Snowflake, PresenceSnapshot]> {
  for (const id of ids) {
    const snapshot = get(id);
    if (snapshot) yield [id, snapshot];
  }
}

/** The frame's JSON when the INIT_STATE is small enough to build at once, else null. */
export function initStateJson(seq: number, state: InitState, compressed: boolean): string | null {
  if (state.kind === 'single') {
    const { snapshot } = state;
    const limit = compressed ? INIT_STATE_AT_ONCE_ZLIB_BYTES : FRAGMENT_AT_BYTES;
    if (snapshot && snapshot.body.length > limit) return null;
    return eventJson(seq, 'INIT_STATE', snapshot?.json ?? '{}');
  }
  if (!state.small) return null;
  const parts: string[] = [];
  for (const [id, snapshot] of state.entries()) parts.push(`${JSON.stringify(id)}:${snapshot.json}`);
  return eventJson(seq, 'INIT_STATE', `{${parts.join(',')}}`);
}

/** The INIT_STATE as a stream of fragments, text or zlib. */
export function initStateStream(state: InitState, compressed: boolean): MessageStream {
  return (seq) =>
    compressed ? zlibFragments(chunks(parts(seq, state))) : textFragments(chunks(parts(seq, state)));
}

/** A large presence, sent as its snapshot's shared bytes (its JSON after the opening brace). */
class SharedTail {
  constructor(readonly snapshot: PresenceSnapshot) {}
}

type Part = Buffer | SharedTail;

/** The message in order: its own bytes, and the large presences' shared tails between them. */
function* parts(seq: number, state: InitState): Generator<Part> {
  const head = `{"op":${Op.Event},"seq":${seq},"t":"INIT_STATE","d":`;
  if (state.kind === 'single') {
    yield* presenceParts(head, state.snapshot);
    yield Buffer.from('}');
    return;
  }
  let before = `${head}{`;
  for (const [id, snapshot] of state.entries()) {
    yield* presenceParts(`${before}${JSON.stringify(id)}:`, snapshot);
    before = ',';
  }
  yield Buffer.from(`${before === ',' ? '' : before}}}`);
}

/** `before`, then the presence (`{}` for none): its own bytes when small, its shared tail when large. */
function* presenceParts(before: string, snapshot: PresenceSnapshot | undefined): Generator<Part> {
  if (snapshot === undefined) {
    yield Buffer.from(`${before}{}`);
  } else if (snapshot.body.length < FRAGMENT_AT_BYTES) {
    const json = snapshot.jsonData();
    yield Buffer.concat([Buffer.from(before), typeof json === 'string' ? Buffer.from(json, 'latin1') : json]);
  } else {
    yield Buffer.from(`${before}{`);
    yield new SharedTail(snapshot);
  }
}

/** Small parts gathered into chunks of about INIT_STATE_CHUNK_BYTES; shared tails passed on as they are. */
function* chunks(source: Iterable<Part>): Generator<Part> {
  let gathered: Buffer[] = [];
  let size = 0;
  for (const part of source) {
    if (part instanceof SharedTail) {
      if (size > 0) yield Buffer.concat(gathered, size);
      gathered = [];
      size = 0;
      yield part;
      continue;
    }
    gathered.push(part);
    size += part.length;
    if (size >= INIT_STATE_CHUNK_BYTES) {
      yield Buffer.concat(gathered, size);
      gathered = [];
      size = 0;
    }
  }
  if (size > 0) yield Buffer.concat(gathered, size);
}

async function* textFragments(source: Iterable<Part>): AsyncGenerator<Buffer> {
  for (const part of source) yield part instanceof SharedTail ? presenceTail(part.snapshot) : part;
}

/** One zlib stream: each chunk deflated off the event loop, each shared tail deflated once per snapshot. */
async function* zlibFragments(source: Iterable<Part>): AsyncGenerator<Buffer> {
  yield ZLIB_HEADER;
  let adler = ADLER_START;
  for (const part of source) {
    const piece = part instanceof SharedTail ? await deflatedTail(part.snapshot) : await deflatePiece(part);
    adler = adler32Combine(adler, piece.adler, piece.length);
    yield piece.deflated;
  }
  yield streamEnd(adler);
}
