import type { Kv, KvChange } from '../model.js';
import { byCodePoint } from './kv-order.js';

/**
 * What an accepted write changed, as it travels to whoever holds the KV: the values set and the keys
 * deleted. Applying it again, or to a KV that already has it, changes nothing.
 */
export interface KvDelta {
  set: [string, string][];
  delete: string[];
}

/** The delta of a change the store accepted: a key both set and deleted is set. */
export function deltaOf(change: KvChange): KvDelta {
  return { set: [...change.set], delete: change.delete.filter((key) => !change.set.has(key)) };
}

/** The JSON of the KV `kvJson` holds once `delta` is applied, keys in the stores' order. */
export function applyDelta(kvJson: string, delta: KvDelta): string {
  const kv = new Map(Object.entries(JSON.parse(kvJson) as Kv));
  for (const key of delta.delete) kv.delete(key);
  for (const [key, value] of delta.set) kv.set(key, value);
  // fromEntries keeps a key named __proto__ as data.
  return JSON.stringify(Object.fromEntries([...kv].sort(([a], [b]) => byCodePoint(a, b))));
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = Buffer.from('{');
const CLOSE = Buffer.from('}');
const COMMA = Buffer.from(',');
/** An array index, which JavaScript orders before every other property name, by its value. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;
const MAX_ARRAY_INDEX = 2 ** 32 - 2;

/**
 * `applyDelta` on a KV's JSON kept as UTF-8 bytes (a large one), without decoding it: the entries are
 * found by their quotes, kept as views of the bytes, and only what the delta sets is encoded. For JSON
 * that JSON.stringify wrote, the result is byte for byte what `applyDelta` gives: a KV read from the store
 * and one changed here agree.
 */
export function applyDeltaToBytes(json: Buffer, delta: KvDelta): Buffer {
  const entries = new Map<string, Buffer>();
  // JSON.stringify's output: `{`, then `"key":"value"` separated by commas, then `}`, nothing else.
  for (let at = 1; json[at] === QUOTE; ) {
    const keyEnd = stringEnd(json, at);
    const valueEnd = stringEnd(json, keyEnd + 1);
    entries.set(JSON.parse(json.toString('utf8', at, keyEnd)) as string, json.subarray(at, valueEnd));
    at = valueEnd + 1;
  }
  for (const key of delta.delete) entries.delete(key);
  for (const [key, value] of delta.set)
    entries.set(key, Buffer.from(`${JSON.stringify(key)}:${JSON.stringify(value)}`));
  const parts: Buffer[] = [OPEN];
  for (const key of propertyOrder([...entries.keys()])) {
    if (parts.length > 1) parts.push(COMMA);
    parts.push(entries.get(key) as Buffer);
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/**
 * Where the JSON string starting at the quote at `at` ends: just past the first quote after it that no
 * backslash escapes (an odd run of backslashes before it). No byte of a multi-byte character is a quote.
 */
function stringEnd(json: Buffer, at: number): number {
  for (let from = at + 1; ; ) {
    const quote = json.indexOf(QUOTE, from);
    if (quote < 0) throw new Error('a KV JSON string does not end');
    let backslashes = 0;
    while (json[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The keys in the order JSON.stringify writes an object's: array indexes by value, then the rest in code point order. */
function propertyOrder(keys: string[]): string[] {
  const indexes: string[] = [];
  const names: string[] = [];
  for (const key of keys) {
    if (ARRAY_INDEX.test(key) && Number(key) <= MAX_ARRAY_INDEX) indexes.push(key);
    else names.push(key);
  }
  return [...indexes.sort((a, b) => Number(a) - Number(b)), ...names.sort(byCodePoint)];
}
