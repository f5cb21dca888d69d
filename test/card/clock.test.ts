import { describe, expect, it } from 'vitest';
import {
  type ClockSpec,
  clockSvg,
  formatAgo,
  formatClock,
  HOUR,
  MINUTE,
  SECOND,
} from '../../src/card/clock.js';
import { parseCard, walk } from './support.js';

const spec = (overrides: Partial<ClockSpec>): ClockSpec => ({
  x: 100,
  y: 50,
  anchor: 'start',
  fontSize: 11,
  className: 'time',
  elapsedMs: 0,
  stopMs: null,
  animated: true,
  ...overrides,
});

/** The strips of a clock: their values and timing attributes, in order. */
function strips(svg: string): { values: string[]; timing: Record<string, string> }[] {
  const root = parseCard(`<svg xmlns="http://www.w3.org/2000/svg">${svg}</svg>`);
  return [...walk(root)]
    .filter(
      (element) => element.tag === 'g' && element.children.some((child) => child.tag === 'animateTransform'),
    )
    .map((group) => {
      const animation = group.children.find((child) => child.tag === 'animateTransform');
      const { begin, dur, repeatDur, repeatCount, calcMode, fill } = animation?.attributes ?? {};
      const timing = Object.fromEntries(
        Object.entries({ begin, dur, repeatDur, repeatCount, calcMode, fill }).filter(
          ([, v]) => v !== undefined,
        ),
      ) as Record<string, string>;
      return { values: group.children.filter((child) => child.tag === 'text').map((t) => t.text), timing };
    });
}

/**
 * What a strip shows `t` seconds after the card is shown, as SMIL plays a discrete animation: the value of
 * its step within the current cycle, frozen at the end of its repeat duration (or of one cycle).
 */
function shownAt(strip: { values: string[]; timing: Record<string, string> }, t: number): string {
  const seconds = (value: string | undefined) => Number((value ?? '0').replace(/s$/, ''));
  const duration = seconds(strip.timing.dur);
  const active =
    strip.timing.repeatCount === 'indefinite'
      ? Number.POSITIVE_INFINITY
      : strip.timing.repeatDur !== undefined
        ? seconds(strip.timing.repeatDur)
        : duration;
  const local = Math.min(t - seconds(strip.timing.begin), active);
  // Frozen at the very end of a cycle, a discrete animation shows the cycle's last value.
  const within = local === active && local % duration === 0 ? duration : local % duration;
  const index = Math.min(strip.values.length - 1, Math.floor(within / (duration / strip.values.length)));
  return strip.values[index] as string;
}

describe('formatAgo', () => {
  it('says how long ago in whole minutes, hours or days, rounding down', () => {
    const cases: [number, string][] = [
      [-5 * SECOND, 'just now'],
      [59 * SECOND, 'just now'],
      [MINUTE, '1 min ago'],
      [59 * MINUTE + 59 * SECOND, '59 min ago'],
      [HOUR, '1 h ago'],
      [23 * HOUR + 59 * MINUTE, '23 h ago'],
      [24 * HOUR, '1 day ago'],
      [50 * HOUR, '2 days ago'],
    ];
    for (const [ms, text] of cases) expect(formatAgo(ms)).toBe(text);
  });
});

describe('formatClock', () => {
  it.each([
    [0, '0:00'],
    [999, '0:00'],
    [61 * SECOND, '1:01'],
    [10 * MINUTE + 5 * SECOND, '10:05'],
    [HOUR + 2 * MINUTE + 3 * SECOND, '1:02:03'],
    [-5000, '0:00'],
  ])('%i ms → %s', (ms, text) => {
    expect(formatClock(ms)).toBe(text);
  });

  it('shows hours when asked, for times below an hour in a clock that will pass one', () => {
    expect(formatClock(5 * MINUTE, true)).toBe('0:05:00');
  });
});

describe('clockSvg', () => {
  it('is one still text when not animated', () => {
    const clock = clockSvg(spec({ elapsedMs: 83_000, animated: false }));
    expect(clock.svg).toBe('<text x="100" y="50" class="time" text-anchor="start">1:23</text>');
    expect(clock.width).toBeGreaterThan(0);
  });

  it('is still once the stop time is reached, showing the stop time', () => {
    expect(clockSvg(spec({ elapsedMs: 300_000, stopMs: 200_000 })).svg).toContain('>3:20</text>');
  });

  it('runs a track clock: strips started in the past by the elapsed time, stopping at the end', () => {
    const clock = clockSvg(spec({ elapsedMs: 83_500, stopMs: 200_000 }));
    const [minutes, tens, ones] = strips(clock.svg);
    // Minutes from the current one to the last: 1, 2, 3; timed from the start of the current minute.
    expect(minutes?.values).toEqual(['1', '2', '3']);
    expect(minutes?.timing).toEqual({ begin: '-23.5s', dur: '180s', calcMode: 'discrete', fill: 'freeze' });
    // Each seconds strip from the digit of now, timed from the start of its current step.
    expect(tens?.values).toEqual(['2', '3', '4', '5', '0', '1']);
    expect(tens?.timing).toEqual({
      begin: '-3.5s',
      dur: '60s',
      repeatDur: '119.999s',
      calcMode: 'discrete',
      fill: 'freeze',
    });
    expect(ones?.values).toEqual(['3', '4', '5', '6', '7', '8', '9', '0', '1', '2']);
    expect(ones?.timing).toMatchObject({ begin: '-0.5s', dur: '10s', repeatDur: '116.999s' });
  });

  it.each([
    ['a track', 83_500, 200_000],
    ['a track past an hour', HOUR - 2_250, HOUR + 30_000],
    ['an open-ended activity', 5 * MINUTE + 7 * SECOND, null],
  ])('shows the true time in its first frame and at every moment after, for %s', (_, elapsedMs, stopMs) => {
    const clock = strips(clockSvg(spec({ elapsedMs, stopMs })).svg);
    const until = stopMs === null ? 3 * MINUTE : stopMs - elapsedMs + 5_000;
    for (let t = 0; t <= until; t += 250) {
      // The strips stop a millisecond before the end (see clock.ts); the still clock after shows the end.
      const shown = Math.min(elapsedMs + t, (stopMs ?? Number.POSITIVE_INFINITY) - 1);
      const expected = formatClock(shown, stopMs !== null && stopMs >= HOUR);
      const [minutes, tens, ones] = clock.map((strip) => shownAt(strip, t / SECOND));
      expect(`${minutes}:${tens}${ones}`, `${t} ms after`).toBe(expected);
    }
    // A renderer that does not animate shows each strip's first value: the time at render.
    expect(
      clock
        .map((strip) => strip.values[0])
        .join(':')
        .replace(/:(\d):(\d)$/, ':$1$2'),
    ).toBe(formatClock(elapsedMs, stopMs !== null && stopMs >= HOUR));
  });

  it('runs an open-ended clock for an hour of minutes, seconds repeating forever', () => {
    const [minutes, tens] = strips(clockSvg(spec({ elapsedMs: 5 * MINUTE + 7 * SECOND })).svg);
    expect(minutes?.values[0]).toBe('5');
    expect(minutes?.values).toHaveLength(61);
    expect(tens?.timing).toMatchObject({ begin: '-7s', repeatCount: 'indefinite' });
  });

  it('uses h:mm for the minutes strip past an hour', () => {
    const [minutes] = strips(clockSvg(spec({ elapsedMs: HOUR + 59 * MINUTE + 30 * SECOND })).svg);
    expect(minutes?.values.slice(0, 3)).toEqual(['1:59', '2:00', '2:01']);
  });

  it('places an end-anchored clock to the left of x, and says how wide it is', () => {
    const clock = clockSvg(spec({ x: 400, anchor: 'end', elapsedMs: 1000 }));
    const root = parseCard(`<svg xmlns="http://www.w3.org/2000/svg">${clock.svg}</svg>`);
    const windows = [...walk(root)].filter((e) => e.tag === 'svg' && e !== root);
    const right = Math.max(...windows.map((w) => Number(w.attributes.x) + Number(w.attributes.width)));
    expect(right).toBeCloseTo(400, 5);
    expect(Number(windows[0]?.attributes.x)).toBeCloseTo(400 - clock.width, 5);
  });

  it('draws a still clock when the strips would be too long (a day-long track)', () => {
    expect(clockSvg(spec({ elapsedMs: 0, stopMs: 24 * HOUR })).svg).toMatch(/^<text /);
  });
});
