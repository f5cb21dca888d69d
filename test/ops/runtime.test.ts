import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OLDEST_NODE_MAJOR, unsupportedRuntime } from '../../src/ops/runtime.js';

describe('the runtime check at start', () => {
  it('refuses a Node.js older than the supported ones, naming the one it found', () => {
    expect(unsupportedRuntime('20.20.2')).toBe(
      'Node.js 22 or newer is needed (this is 20.20.2); Node.js 24 LTS is the one CI runs',
    );
  });

  it('runs on Node.js 22, 24 and newer', () => {
    for (const version of ['22.0.0', '24.21.0', '26.12.1'])
      expect(unsupportedRuntime(version)).toBeUndefined();
  });

  it('agrees with the engines field npm reads', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      engines: { node: string };
    };
    expect(manifest.engines.node).toBe(`>=${OLDEST_NODE_MAJOR}`);
  });
});
