import { report, serveBenchProcess } from '../lib/child.js';

/**
 * One side of the tick-shape scenario: the CPU a `process.nextTick` costs once full GCs have run while no
 * tick object was alive, holding one as src/ops/tick-shape.ts does (HOLD=1) or holding none. Needs
 * `--expose-gc`.
 */
if (process.env.HOLD === '1') (await import('../../src/ops/tick-shape.js')).holdTickObject();

const WARMUP_CHAINS = 50;
const CHAINS = Number(process.env.CHAINS);
const TICKS_PER_CHAIN = 20_000;
/** Full GCs in a row: V8 keeps a map without instances through a few before it lets it go. */
const FULL_GCS = 8;

const gc = globalThis.gc;
if (gc === undefined) throw new Error('tick-shape: run with --expose-gc');

/** TICKS_PER_CHAIN ticks, each scheduled by the one before, as node:http's streams schedule theirs. */
const chain = () =>
  new Promise<void>((resolve) => {
    let ticks = 0;
    const next = () => {
      if (++ticks < TICKS_PER_CHAIN) process.nextTick(next);
      else resolve();
    };
    process.nextTick(next);
  });

serveBenchProcess();
for (let i = 0; i < WARMUP_CHAINS; i++) await chain();
// Between ticks: the queue is empty and no tick object is alive.
await new Promise((resolve) => setImmediate(resolve));
for (let i = 0; i < FULL_GCS; i++) gc();
await new Promise((resolve) => setImmediate(resolve));
const nsPerTick: number[] = [];
for (let i = 0; i < CHAINS; i++) {
  const before = process.cpuUsage();
  await chain();
  const { user, system } = process.cpuUsage(before);
  nsPerTick.push(((user + system) * 1000) / TICKS_PER_CHAIN);
}
report({ type: 'ticks', nsPerTick });
