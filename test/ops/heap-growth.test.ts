import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DEFAULT_HEAP_GROWING_PERCENT } from '../../src/ops/heap-growth.js';
import { runToExit } from '../support/node-process.js';

/** The growing factor V8 used after a full collection, as `--trace-gc-verbose` prints it. */
async function factorAfterFullCollection(percent: number, nodeFlags: string[] = []): Promise<string[]> {
  const script = [
    "const { setHeapGrowth } = await import('./src/ops/heap-growth.ts');",
    `setHeapGrowth(${percent});`,
    'globalThis.gc();',
  ].join(' ');
  const { code, output } = await runToExit([
    ...nodeFlags,
    '--expose-gc',
    '--trace-gc-verbose',
    '--input-type=module',
    '-e',
    script,
  ]);
  expect(code, output).toBe(0);
  return [...output.matchAll(/\[HeapController\] factor ([\d.]+)/g)].map((match) => match[1] as string);
}

describe('HEAP_GROWING_PERCENT', () => {
  it('is 200 unless set, and refused outside 0 and 10–1000', () => {
    expect(loadConfig({}).heapGrowingPercent).toBe(DEFAULT_HEAP_GROWING_PERCENT);
    expect(DEFAULT_HEAP_GROWING_PERCENT).toBe(200);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(() => loadConfig({ HEAP_GROWING_PERCENT: '1001' })).toThrow(/^HEAP_GROWING_PERCENT: /);
    expect(() => loadConfig({ HEAP_GROWING_PERCENT: '-1' })).toThrow(/^HEAP_GROWING_PERCENT: /);
    expect(() => loadConfig({ HEAP_GROWING_PERCENT: '9' })).toThrow(/^HEAP_GROWING_PERCENT: must be 0 or/);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '10' }).heapGrowingPercent).toBe(10);
  });

  it("sets the factor V8 sizes the old generation's next limit by", async () => {
    expect(await factorAfterFullCollection(DEFAULT_HEAP_GROWING_PERCENT)).toEqual(['3.0']);
    expect(await factorAfterFullCollection(150)).toEqual(['2.5']);
  });

  it('leaves the factor as it was at 0', async () => {
    expect(await factorAfterFullCollection(0, ['--heap-growing-percent=150'])).toEqual(['2.5']);
  });
});
