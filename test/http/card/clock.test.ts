import { describe, expect, it } from 'vitest';
import { type ClockSpec, clockSvg, formatClock, HOUR, MINUTE, SECOND } from '../../../src/http/card/clock.js';
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
    expect(tens?.values).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(tens?.timing).toEqual({
      begin: '-83.5s',
      dur: '60s',
      repeatDur: '199.999s',
      calcMode: 'discrete',
      fill: 'freeze',
    });
    expect(ones?.values).toHaveLength(10);
    expect(ones?.timing).toMatchObject({ begin: '-83.5s', dur: '10s', repeatDur: '199.999s' });
  });

  it('runs an open-ended clock for an hour of minutes, seconds repeating forever', () => {
    const [minutes, tens] = strips(clockSvg(spec({ elapsedMs: 5 * MINUTE + 7 * SECOND })).svg);
    expect(minutes?.values[0]).toBe('5');
    expect(minutes?.values).toHaveLength(61);
    expect(tens?.timing).toMatchObject({ begin: '-307s', repeatCount: 'indefinite' });
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
