import { TICKS_ARE_LITERALS } from '../../src/ops/tick-shape.js';
import { type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { formatNumber, median, spread } from '../lib/stats.js';

/** Processes per side, one after another: each measures its own chains. */
const PROCESSES = 3;
const CHAINS = 30;
/** Above this ratio ticks have taken V8's slow path, and holding a tick object is what avoids it. */
const SLOW_PATH = 1.5;

interface Ticks extends Message {
  nsPerTick: number[];
}

async function side(hold: boolean): Promise<number[]> {
  const medians: number[] = [];
  for (let i = 0; i < PROCESSES; i++) {
    const child = startChild('tick-shape', [], { HOLD: hold ? '1' : '0', CHAINS: String(CHAINS) }, [
      '--expose-gc',
    ]);
    try {
      medians.push(median((await child.next<Ticks>('ticks')).nsPerTick));
    } finally {
      await child.stop();
    }
  }
  return medians;
}

/**
 * Whether src/ops/tick-shape.ts is needed on the running Node: the CPU per `process.nextTick` after full GCs
 * with no tick object alive, holding none against holding one. Where the ratio is near 1× the hold changes
 * nothing, and the version guard in that module should leave this Node out.
 */
export async function tickShape(): Promise<Row[]> {
  const bare = await side(false);
  const held = await side(true);
  const ratio = median(bare) / median(held);
  const guard = TICKS_ARE_LITERALS ? 'holds one' : 'holds none';
  return [
    {
      scenario: 'tick-shape',
      figure: `CPU per process.nextTick after full GCs with no tick object alive, none held (Node ${process.versions.node})`,
      value: median(bare),
      unit: 'ns',
      baseline: { label: 'one tick object held', value: median(held) },
      target: {
        text: `the guard holds one on this Node exactly when > ${SLOW_PATH}×`,
        met: TICKS_ARE_LITERALS === ratio > SLOW_PATH,
      },
      notes:
        `src/ops/tick-shape.ts ${guard} on this Node; median of ${PROCESSES} processes per side, each the ` +
        `median of ${CHAINS} chains of nextTicks after the full GCs; by process ` +
        `${spread(bare, formatNumber)} vs ${spread(held, formatNumber)} ns`,
    },
  ];
}
