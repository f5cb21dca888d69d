import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { idleMemoryReclaim } from '../../bench/lib/machine.js';

const roots: string[] = [];

/** A DAMON admin folder with one kdamond of one context, as sysfs lays it out. */
function kdamonds(state: string, actions: string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'damon-'));
  roots.push(root);
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), `${text}\n`);
  };
  write('nr_kdamonds', '1');
  write('0/state', state);
  write('0/contexts/0/monitoring_attrs/intervals/sample_us', '500000');
  write('0/contexts/0/schemes/nr_schemes', String(actions.length));
  for (const [n, action] of actions.entries()) write(`0/contexts/0/schemes/${n}/action`, action);
  return root;
}

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('the machine line of the bench results', () => {
  it('names a kernel that pages out idle memory, which stalls a process holding much of it', () => {
    expect(idleMemoryReclaim(kdamonds('on', ['stat', 'pageout']))).toBe(
      'the kernel paging out idle memory (DAMON, sampled every 0.5 s)',
    );
  });

  it('says nothing of DAMON that is off, only watches, or is not there', () => {
    expect(idleMemoryReclaim(kdamonds('off', ['pageout']))).toBeNull();
    expect(idleMemoryReclaim(kdamonds('on', ['stat']))).toBeNull();
    expect(idleMemoryReclaim(join(tmpdir(), 'no-such-damon'))).toBeNull();
  });
});
