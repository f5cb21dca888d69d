import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { releaseBenchLock, takeBenchLock } from '../../bench/lib/lock.js';

describe('the bench lock: one npm run bench at a time', () => {
  let dir: string;
  let lock: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'presently-lock-'));
    lock = join(dir, '.running');
  });

  afterEach(() => {
    releaseBenchLock(lock);
    rmSync(dir, { recursive: true, force: true });
  });

  it('is taken when free, with this process named in it, and let go', () => {
    expect(takeBenchLock(lock)).toEqual({ held: true });
    expect(readFileSync(lock, 'utf8').trim()).toBe(String(process.pid));
    releaseBenchLock(lock);
    expect(existsSync(lock)).toBe(false);
  });

  it('is refused while a live process holds it, which keeps it', () => {
    writeFileSync(lock, `${process.ppid}\n`);
    expect(takeBenchLock(lock)).toEqual({ held: false, by: process.ppid });
    releaseBenchLock(lock);
    expect(readFileSync(lock, 'utf8').trim()).toBe(String(process.ppid));
  });

  it('is taken over from a process that is gone', () => {
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    writeFileSync(lock, `${gone}\n`);
    expect(takeBenchLock(lock)).toEqual({ held: true });
    expect(readFileSync(lock, 'utf8').trim()).toBe(String(process.pid));
  });

  it('is taken over when what it holds is not a process id', () => {
    writeFileSync(lock, 'half-written');
    expect(takeBenchLock(lock)).toEqual({ held: true });
  });
});
