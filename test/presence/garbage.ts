/**
 * Hostile values for fuzzing the normalizers: wrong types, deep and wide nesting, huge strings, and
 * near-misses of the real payload shapes. Seeded, so a failure is reproducible.
 */

/** mulberry32: a small seeded PRNG. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = [
  '',
  ' ',
  'online',
  'idle',
  'dnd',
  'offline',
  'invisible',
  'Spotify',
  'spotify:1',
  'spotify:',
  'YouTube Music',
  'mp:',
  'mp:external/x/https/a.b/c',
  'https://music.youtube.com/watch?v=lYBUbBu4W08',
  'https://youtu.be/',
  'javascript:alert(1)',
  '⏸︎',
  '__proto__',
  'constructor',
  '1177081335727267940',
  '18446744073709551616',
  '\u0000',
  '\uD800',
  'x'.repeat(100_000),
];
const NUMBERS = [
  0,
  -1,
  1,
  2,
  4,
  1.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  -0,
  2 ** 53 + 1,
  Number.MAX_VALUE,
  1e21,
];
const KEYS = [
  'type',
  'name',
  'id',
  'status',
  'activities',
  'client_status',
  'desktop',
  'mobile',
  'web',
  'embedded',
  'vr',
  'state',
  'details',
  'details_url',
  'sync_id',
  'party',
  'assets',
  'large_image',
  'large_text',
  'timestamps',
  'start',
  'end',
  'emoji',
  'animated',
  'application_id',
  '__proto__',
];

export function garbage(next: () => number, depth = 0): unknown {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const roll = next();
  if (depth > 4 || roll < 0.15) return pick([null, undefined, true, false, 0n, 123456789012345678901n]);
  if (roll < 0.35) return pick(STRINGS);
  if (roll < 0.5) return pick(NUMBERS);
  if (roll < 0.65) return Array.from({ length: Math.floor(next() * 4) }, () => garbage(next, depth + 1));
  const record: Record<string, unknown> = {};
  const size = Math.floor(next() * 6);
  for (let i = 0; i < size; i += 1) {
    Object.defineProperty(record, pick(KEYS), {
      value: garbage(next, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return record;
}
