import { describe, expect, it } from 'vitest';
import { PerSecond } from '../../../src/http/card/per-second.js';

describe('PerSecond', () => {
  it('reads once for the requests of a second, again in the next, apart for each key', async () => {
    const memo = new PerSecond<number>();
    let reads = 0;
    const read = async () => ++reads;
    expect(await Promise.all([memo.get('a', 1_000, read), memo.get('a', 1_000, read)])).toEqual([1, 1]);
    expect(await memo.get('b', 1_000, read)).toBe(2);
    expect(await memo.get('a', 2_000, read)).toBe(3);
    expect(reads).toBe(3);
  });

  it('keeps no failure: the next request of the same second reads again', async () => {
    const memo = new PerSecond<string>();
    await expect(memo.get('a', 1_000, async () => Promise.reject(new Error('store down')))).rejects.toThrow();
    expect(await memo.get('a', 1_000, async () => 'read')).toBe('read');
  });
});
