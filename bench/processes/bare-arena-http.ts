import '../../src/ops/tick-shape.js';
import { BARE_USERS, bareBody, serveBodies } from '../lib/bare-bodies.js';
import { benchUserId } from '../lib/workload.js';

/**
 * bare-map-http with nothing per user on the JS heap: the bodies side by side in one Buffer, found through
 * an open-addressing index in typed arrays keyed by the id's two halves. Next to bare-map-http holding as
 * many, it shows whether reads among a million users slow down for the bytes read (caches, pages) or for
 * the million objects a JS heap holds for them.
 */
const SLOT_FREE = -1;
/** The id's low nine digits: a snowflake is up to 20 digits, beyond a double's exact integers whole. */
const LOW_DIGITS = 9;

// Bodies are padded to one length; the slack is for the longer names of later users, should they pass it.
const arena = Buffer.allocUnsafeSlow(BARE_USERS * (Buffer.byteLength(bareBody(0)) + 64));
const capacity = 2 ** Math.ceil(Math.log2(Math.max(BARE_USERS, 1) * 2));
const slots = new Int32Array(capacity).fill(SLOT_FREE);
const starts = new Float64Array(BARE_USERS);
const ends = new Float64Array(BARE_USERS);
const highs = new Float64Array(BARE_USERS);
const lows = new Float64Array(BARE_USERS);

function halves(id: string): [number, number] {
  return [Number(id.slice(0, -LOW_DIGITS)), Number(id.slice(-LOW_DIGITS))];
}

function slotOf(high: number, low: number): number {
  return (Math.imul(high | 0, 0x9e3779b1) ^ Math.imul(low | 0, 0x85ebca77)) & (capacity - 1);
}

let at = 0;
for (let n = 0; n < BARE_USERS; n++) {
  const [high, low] = halves(benchUserId(n));
  starts[n] = at;
  at += arena.write(bareBody(n), at, 'latin1');
  ends[n] = at;
  highs[n] = high;
  lows[n] = low;
  let slot = slotOf(high, low);
  while (slots[slot] !== SLOT_FREE) slot = (slot + 1) & (capacity - 1);
  slots[slot] = n;
}

serveBodies((id) => {
  if (id.length <= LOW_DIGITS || id.length > 20) return undefined;
  const [high, low] = halves(id);
  for (let slot = slotOf(high, low); ; slot = (slot + 1) & (capacity - 1)) {
    const n = slots[slot] as number;
    if (n === SLOT_FREE) return undefined;
    if (highs[n] === high && lows[n] === low) return arena.subarray(starts[n], ends[n]);
  }
});
