import { getHeapStatistics } from 'node:v8';

/**
 * Heap one socket or event stream is allowed: an idle one holds a few KB (its connection, its parser,
 * its budget), and the rest is room for the frames, init states and waiting updates of a busy one.
 */
export const HEAP_BYTES_PER_SOCKET = 64 * 1024;
/**
 * Subscriptions to ids are held outside the heap (socket/id-subscribers.ts): all of them together may
 * take as much memory again as the heap's limit, at their most costly.
 */
export const SUBSCRIPTIONS_SHARE_OF_HEAP = 1;

/**
 * The heap this process may grow to: `--max-old-space-size` when given, else what V8 chose for the
 * machine's memory. The caps on sockets and subscriptions follow it, so a process given more memory holds more.
 */
export function heapSizeLimit(): number {
  return getHeapStatistics().heap_size_limit;
}

/** `MAX_SOCKETS` unless set: as many sockets and streams as the heap has HEAP_BYTES_PER_SOCKET for. */
export function defaultMaxSockets(heapBytes: number): number {
  return Math.max(1, Math.floor(heapBytes / HEAP_BYTES_PER_SOCKET));
}

/**
 * `MAX_SUBSCRIPTIONS` unless set: as many as fit in SUBSCRIPTIONS_SHARE_OF_HEAP of the heap's limit, each
 * costing `subscriptionBytes` at most (socket/id-subscribers.ts, SUBSCRIPTION_BYTES).
 */
export function defaultMaxSubscriptions(heapBytes: number, subscriptionBytes: number): number {
  return Math.max(1, Math.floor((heapBytes * SUBSCRIPTIONS_SHARE_OF_HEAP) / subscriptionBytes));
}
