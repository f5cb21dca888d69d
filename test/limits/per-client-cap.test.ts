import { describe, expect, it } from 'vitest';
import { PerClientCap } from '../../src/limits/per-client-cap.js';

describe('a cap on what each client holds at once', () => {
  it('is full at the cap, for that client alone, until one is given back', () => {
    const cap = new PerClientCap(2);
    cap.take('192.0.2.1');
    expect(cap.full('192.0.2.1')).toBe(false);
    cap.take('192.0.2.1');
    expect(cap.full('192.0.2.1')).toBe(true);
    expect(cap.full('192.0.2.2')).toBe(false);
    cap.release('192.0.2.1');
    expect(cap.full('192.0.2.1')).toBe(false);
  });

  it('0: never full', () => {
    const cap = new PerClientCap(0);
    for (let i = 0; i < 10; i++) cap.take('192.0.2.1');
    expect(cap.full('192.0.2.1')).toBe(false);
  });
});
