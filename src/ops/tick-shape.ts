/**
 * Keeps one of `process.nextTick`'s tick objects alive for the life of the process, so the hidden classes
 * (V8 maps) of tick objects are never collected.
 *
 * Node 20 builds each tick as an object literal with computed keys (`{[async_id_symbol]: …}`). V8 records the
 * map it first sees at such a key and, at the first different map, gives up on it for good: from then on
 * every tick (several per HTTP request, inside node:http and its streams) goes through a slow runtime call.
 * A different map appears when a full GC runs while no tick object is alive: the maps are collected and the
 * next tick makes new ones. Measured at start-up, that happened in about half of the service's processes and
 * in none of four bare `node:http` servers, which do less there. It cost ~250 ns per tick: measured with
 * `callgrind`, a presence read took ~70% more instructions (113k against 66k). Holding one tick object keeps
 * its maps, and so the first ones, alive. Async ids outgrowing small integers (2^31) was tried too and does
 * not bring the slow state back. `bench/RESULTS.md` (rest-read) has the effect on reads.
 *
 * The tick object is the resource a tick's callback runs in, `executionAsyncResource()`. Calling that makes
 * Node route every callback from its native side through a JS trampoline for the rest of the process:
 * measured with `callgrind`, 0.6% more instructions per `node:http` request. The other way to reach a tick
 * object, an async hook's `init`, costs far more: enabling any async hook installs V8's promise hooks, which
 * switches off V8's fast paths for promises for good (an `await` took 2.5 to 4 times as long afterwards).
 *
 * Importing this module does it. Import it first (the entry point's first import), before the process has
 * done enough work for a full GC.
 */

import { executionAsyncResource } from 'node:async_hooks';

const held: object[] = [];
process.nextTick(() => {
  held.push(executionAsyncResource());
});
