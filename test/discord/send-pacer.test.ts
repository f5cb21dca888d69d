import { afterEach, describe, expect, it, vi } from 'vitest';
import { SendPacer } from '../../src/discord/send-pacer.js';

const WINDOW_MS = 60_000;
const YEAR_MS = 365 * 24 * 60 * 60 * 1000;

afterEach(() => {
  vi.useRealTimers();
});

describe('SendPacer', () => {
  it('after the clock goes back, waits at most a window for the sends stamped ahead of it', () => {
    vi.useFakeTimers();
    const pacer = new SendPacer({ limit: 2, windowMs: WINDOW_MS, now: Date.now });
    const sent: string[] = [];
    const send = (name: string) => () => {
      sent.push(name);
      return true;
    };
    pacer.submit(0, '1', send('first'));
    pacer.submit(0, '1', send('second'));
    vi.setSystemTime(Date.now() - YEAR_MS);
    pacer.submit(0, '1', send('third'));
    expect(sent).toEqual(['first', 'second']);
    vi.advanceTimersByTime(WINDOW_MS - 1);
    expect(sent).toEqual(['first', 'second']);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['first', 'second', 'third']);
    pacer.close();
  });
});
