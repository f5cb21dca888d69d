import { setFlagsFromString } from 'node:v8';

/** What HEAP_GROWING_PERCENT is unless set: the old generation may grow to three times what a full collection kept. */
export const DEFAULT_HEAP_GROWING_PERCENT = 200;
export const HEAP_GROWING_PERCENT_MAX = 1000;
/** Below this, the factor would be under V8's own least (1.1): full collections back to back. */
export const HEAP_GROWING_PERCENT_MIN = 10;

/**
 * Fixes V8's heap growing factor at 1 + percent/100 in place of its own (`--heap-growing-percent`); 0
 * leaves V8's. V8's own keeps a server that allocates little so tight that nearly every scavenge is
 * followed by a full collection, a pause for every client.
 * https://github.com/v8/v8/blob/main/src/heap/heap-controller.cc
 */
export function setHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
