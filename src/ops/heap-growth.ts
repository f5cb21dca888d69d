import { setFlagsFromString } from 'node:v8';

/** What HEAP_GROWING_PERCENT is unless set: the old generation may grow to three times what a full collection kept. */
export const DEFAULT_HEAP_GROWING_PERCENT = 200;
export const HEAP_GROWING_PERCENT_MAX = 1000;

/**
 * Sets how far V8 lets the old generation grow past what the last full collection kept before it starts
 * the next (`--heap-growing-percent`); 0 leaves it to V8. V8 sizes that room from how fast the process
 * allocates, so a server allocating little gets a tight limit, and once less than a young generation's
 * worth of room is left every scavenge starts a full collection: a pause every client waits through, every
 * few seconds. V8 still never sets the next limit past halfway from what was kept to the heap's limit.
 * https://github.com/v8/v8/blob/main/src/heap/heap-controller.cc
 */
export function setHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
