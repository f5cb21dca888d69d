import { executionAsyncResource } from 'node:async_hooks';

let held: object | undefined;

/**
 * Keeps one of `process.nextTick`'s tick objects alive for the life of the process, so the hidden classes
 * (V8 maps) of tick objects are never collected.
 *
 * Node 20 builds each tick as an object literal with computed keys (`{[async_id_symbol]: …}`). V8 records the
 * map it first sees at such a key and, at the first different map, gives up on it for good: from then on
 * every tick (several per HTTP request, inside node:http and its streams) goes through a slow runtime call.
 * A different map appears when a full GC runs while no tick object is alive: the maps are collected and the
 * next tick makes new ones. That happened at start-up in about half of the service's processes (rarely in a
 * bare server's, which does less there), and cost ~250 ns per tick: measured with `callgrind`, a third of
 * the instructions a presence read took. Holding one tick object keeps its maps, and so the first ones, alive.
 * `bench/RESULTS.md` (rest-read) has the effect on reads.
 *
 * Call it first thing, before the process has done enough work for a full GC.
 */
export function keepTickShapeAlive(): void {
  if (held !== undefined) return;
  // The resource a nextTick callback runs in is its tick object.
  process.nextTick(() => {
    held = executionAsyncResource();
  });
}
