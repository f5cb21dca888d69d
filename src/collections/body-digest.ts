/** Bytes of a body's digest: 128 bits. */
export const DIGEST_BYTES = 16;

const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

/** Where a text body's bytes are put to be hashed: grown for a longer one, and kept for the next. */
let scratch = Buffer.allocUnsafeSlow(4 * 1024);
/** UTF-8 bytes a UTF-16 code unit takes at most. */
const MAX_UTF8_PER_UNIT = 3;

/**
 * The digest of a body, its ETag: MurmurHash3 x86_128 of its bytes. Not a hash no one can steer: a member
 * can craft their own presence to keep its tag, and so keep their own readers on what they wrote before,
 * nothing more (a tag is only ever compared with tags of the same URL; a bulk read's tag, which holds
 * other users' presences, is a cryptographic hash of theirs). A cryptographic hash's fixed cost per call
 * would come with every presence change.
 * https://github.com/aappleby/smhasher/blob/master/src/MurmurHash3.cpp
 */
export function bodyDigest(body: string | Buffer): Buffer {
  const out = Buffer.allocUnsafe(DIGEST_BYTES);
  if (typeof body !== 'string') {
    digestInto(body, 0, body.length, out, 0);
    return out;
  }
  // A text is hashed as the UTF-8 bytes it is sent as: the same digest as the same body held as bytes.
  const room = body.length * MAX_UTF8_PER_UNIT;
  if (scratch.length < room) scratch = Buffer.allocUnsafeSlow(room * 2);
  const length = scratch.write(body, 0, 'utf8');
  digestInto(scratch, 0, length, out, 0);
  return out;
}

/** Writes the digest of `length` bytes of `bytes` from `from` into `out` at `at`. */
export function digestInto(
  bytes: Uint8Array,
  from: number,
  length: number,
  out: Uint8Array,
  at: number,
): void {
  let h1 = 0;
  let h2 = 0;
  let h3 = 0;
  let h4 = 0;
  const end = from + (length & ~15);
  let i = from;
  for (; i < end; i += 16) {
    h1 ^= scramble(word(bytes, i), C1, 15, C2);
    h1 = (Math.imul((rotl(h1, 19) + h2) | 0, 5) + 0x561ccd1b) | 0;
    h2 ^= scramble(word(bytes, i + 4), C2, 16, C3);
    h2 = (Math.imul((rotl(h2, 17) + h3) | 0, 5) + 0x0bcaa747) | 0;
    h3 ^= scramble(word(bytes, i + 8), C3, 17, C4);
    h3 = (Math.imul((rotl(h3, 15) + h4) | 0, 5) + 0x96cd1c35) | 0;
    h4 ^= scramble(word(bytes, i + 12), C4, 18, C1);
    h4 = (Math.imul((rotl(h4, 13) + h1) | 0, 5) + 0x32ac3b17) | 0;
  }
  // The last 0–15 bytes, as the reference does: little-endian into four lanes, each mixed if it has any.
  const tail = length & 15;
  let k1 = 0;
  let k2 = 0;
  let k3 = 0;
  let k4 = 0;
  for (let t = tail - 1; t >= 0; t--) {
    const byte = bytes[i + t] as number;
    const shift = (t & 3) * 8;
    if (t >= 12) k4 |= byte << shift;
    else if (t >= 8) k3 |= byte << shift;
    else if (t >= 4) k2 |= byte << shift;
    else k1 |= byte << shift;
  }
  if (tail > 12) h4 ^= scramble(k4, C4, 18, C1);
  if (tail > 8) h3 ^= scramble(k3, C3, 17, C4);
  if (tail > 4) h2 ^= scramble(k2, C2, 16, C3);
  if (tail > 0) h1 ^= scramble(k1, C1, 15, C2);
  h1 ^= length;
  h2 ^= length;
  h3 ^= length;
  h4 ^= length;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  writeWord(out, at, h1);
  writeWord(out, at + 4, h2);
  writeWord(out, at + 8, h3);
  writeWord(out, at + 12, h4);
}

function word(bytes: Uint8Array, i: number): number {
  return (
    (bytes[i] as number) |
    ((bytes[i + 1] as number) << 8) |
    ((bytes[i + 2] as number) << 16) |
    ((bytes[i + 3] as number) << 24)
  );
}

/** Big-endian, as the reference prints its four words. */
function writeWord(out: Uint8Array, at: number, value: number): void {
  out[at] = value >>> 24;
  out[at + 1] = (value >>> 16) & 0xff;
  out[at + 2] = (value >>> 8) & 0xff;
  out[at + 3] = value & 0xff;
}

/** A lane's block mixed before it goes into the lane's hash. */
function scramble(k: number, before: number, r: number, after: number): number {
  return Math.imul(rotl(Math.imul(k, before), r), after);
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return x ^ (x >>> 16);
}
