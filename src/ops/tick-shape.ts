/**
 * Keeps one `process.nextTick` tick object alive for the life of the process, so the hidden classes (V8
 * maps) of tick objects are never collected.
 *
 * Up to Node 24, nextTick builds each tick as an object literal with computed keys
 * (https://github.com/nodejs/node/blob/v24.x/lib/internal/process/task_queues.js). V8 remembers the map it
 * first saw at such a key and, once it sees another, makes a runtime call for every tick from then on
 * (`Runtime_DefineKeyedOwnPropertyInLiteral`, https://github.com/v8/v8/blob/main/src/runtime/runtime-object.cc).
 * A full GC while no tick object is alive collects the maps, and the next tick makes new ones. Node 26 builds
 * ticks from a class. `npm run bench -- tick-shape` tells whether the running Node still needs this.
 *
 * `executionAsyncResource()` reaches a tick object without an async hook, whose `init` would install V8's
 * promise hooks and slow every `await` for the life of the process. Importing this module does it: import it
 * first, before the process has done enough work for a full GC.
 */

import { executionAsyncResource } from 'node:async_hooks';

/** Whether the running Node builds ticks as object literals with computed keys. */
export const TICKS_ARE_LITERALS = Number(process.versions.node.split('.')[0]) < 26;

const held: object[] = [];

/** Holds the tick object of the next tick; the bench calls it on any Node, the module only where needed. */
export function holdTickObject(): void {
  process.nextTick(() => {
    held.push(executionAsyncResource());
  });
}

if (TICKS_ARE_LITERALS) holdTickObject();
