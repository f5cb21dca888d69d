import { createHash } from 'node:crypto';
import { KV_VALUE_MAX_CHARS } from '../../src/kv/rules.js';

/** Emoji from U+1F300 on: each is 4 bytes of UTF-8, the most one character costs. */
const EMOJI_FIRST = 0x1f300;
const EMOJI_COUNT = 768;
export const EMOJI_BYTES = 4;
const EMOJI = Array.from({ length: EMOJI_COUNT }, (_, i) => String.fromCodePoint(EMOJI_FIRST + i));

/** One key of a KV at the cap: its value is `emoji` emoji, then `ascii` ASCII letters. */
export interface CapSlot {
  key: string;
  emoji: number;
  ascii: number;
}

/**
 * Keys `k0`, `k1`, … whose names and values together are exactly `maxBytes` of UTF-8: values of as many
 * emoji as a value may hold, the last one topped up with ASCII to the byte. Throws for the rare cap no
 * such layout reaches (a last value that would need more than a value's characters).
 */
export function slotsAtCap(maxBytes: number): CapSlot[] {
  const slots: CapSlot[] = [];
  let left = maxBytes;
  for (let i = 0; left > 0; i++) {
    const key = `k${i}`;
    const room = left - Buffer.byteLength(key);
    const emoji = Math.min(KV_VALUE_MAX_CHARS, Math.floor(room / EMOJI_BYTES));
    const ascii = emoji < KV_VALUE_MAX_CHARS ? room - emoji * EMOJI_BYTES : 0;
    if (room < 0 || emoji + ascii > KV_VALUE_MAX_CHARS) {
      throw new Error(`no layout of emoji values fills ${maxBytes} bytes exactly`);
    }
    slots.push({ key, emoji, ascii });
    left = room - emoji * EMOJI_BYTES - ascii;
  }
  return slots;
}

/** A value for the slot, emoji drawn at random: every write changes it, and compression gains little. */
export function valueFor(slot: CapSlot): string {
  const parts = new Array<string>(slot.emoji);
  for (let i = 0; i < slot.emoji; i++) parts[i] = EMOJI[Math.floor(Math.random() * EMOJI_COUNT)] as string;
  return parts.join('') + 'a'.repeat(slot.ascii);
}

/** Keys and values together, in UTF-8 bytes: what the KV cap counts. */
export function kvBytes(kv: Readonly<Record<string, string>>): number {
  let bytes = 0;
  for (const [key, value] of Object.entries(kv)) bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  return bytes;
}

/** A fingerprint of a KV, the same whatever order its keys come in: two KVs compare without sending either. */
export function kvDigest(kv: Readonly<Record<string, string>>): string {
  const entries = Object.entries(kv).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(entries)).digest('hex');
}

/** Entries grouped into JSON objects of at most `maxBytes` each, in order: the bodies of a few PATCHes. */
export function patchBodies(entries: ReadonlyArray<readonly [string, string]>, maxBytes: number): string[] {
  const bodies: string[] = [];
  let batch: Record<string, string> = {};
  for (const [key, value] of entries) {
    const fits = (into: Record<string, string>) =>
      Buffer.byteLength(JSON.stringify({ ...into, [key]: value })) <= maxBytes;
    if (!fits(batch)) {
      if (!fits({})) throw new Error(`the value of ${key} alone exceeds ${maxBytes} bytes`);
      bodies.push(JSON.stringify(batch));
      batch = {};
    }
    batch[key] = value;
  }
  if (Object.keys(batch).length > 0) bodies.push(JSON.stringify(batch));
  return bodies;
}
