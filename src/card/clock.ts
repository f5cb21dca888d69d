/**
 * A time display that runs without JavaScript. SVG text cannot be animated, so a running clock is made of
 * strips: for each place (the seconds' ones, the seconds' tens, and the minutes, or hours and minutes), a
 * column of every value it will show, in a window one line tall, moved up one line per step by a discrete
 * SMIL animation. Each strip's animation starts in the past (a negative `begin`) by the time already
 * elapsed, so the clock opens on the right value and runs from the moment the card is shown.
 */

import { num } from './svg.js';
import { textWidth } from './truncate.js';

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/**
 * How many minutes an open-ended clock (an activity's elapsed time) has strips for. Nobody watches one
 * card for an hour; the card is fetched anew on every page view.
 */
export const OPEN_ENDED_MINUTES = 60;
/** Above this many minute steps a strip stops being small; the clock is drawn still instead. */
export const MAX_MINUTE_STEPS = 240;

/** `m:ss`, or `h:mm:ss` when `withHours`; negative times read as 0. */
export function formatClock(ms: number, withHours = ms >= HOUR): string {
  const total = Math.max(0, Math.floor(ms / SECOND));
  const seconds = total % 60;
  const minutes = Math.floor(total / 60);
  const ss = String(seconds).padStart(2, '0');
  if (!withHours) return `${minutes}:${ss}`;
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}:${ss}`;
}

/** How long ago, in words: `just now`, `5 min ago`, `3 h ago`, `2 days ago`. */
export function formatAgo(ms: number): string {
  const minutes = Math.floor(Math.max(0, ms) / MINUTE);
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.floor(hours / 24);
  return days === 1 ? '1 day ago' : `${days} days ago`;
}

/** The part before the seconds: `m`, or `h:mm`. */
function formatMinutes(minutes: number, withHours: boolean): string {
  if (!withHours) return String(minutes);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}`;
}

export interface ClockSpec {
  /** The left edge for `anchor: 'start'`, the right edge for `'end'`. */
  x: number;
  /** Baseline. */
  y: number;
  anchor: 'start' | 'end';
  fontSize: number;
  /** CSS class of the digits (colour, weight). */
  className: string;
  /** The time shown when the card is rendered. */
  elapsedMs: number;
  /** The time at which the clock stops (a track's length); null: it runs on. */
  stopMs: number | null;
  animated: boolean;
}

/** A tabular digit's advance, and the colon's, as fractions of the font size (Arial's, rounded up). */
const DIGIT_WIDTH = 0.58;
const COLON_WIDTH = 0.3;
/** A strip's line height; the window shows one line. */
const LINE = 1.4;
/** Where the baseline sits inside a line, from its top. */
const BASELINE = 1.05;

export interface Clock {
  svg: string;
  /** Estimated width in px, to place things beside it. */
  width: number;
}

/**
 * The clock's SVG. Still (one `<text>`) when not animated, when already stopped, or when it would need too
 * many minute steps; otherwise the strips.
 */
export function clockSvg(spec: ClockSpec): Clock {
  const { fontSize, className } = spec;
  const elapsed = spec.stopMs === null ? Math.max(0, spec.elapsedMs) : clamp(spec.elapsedMs, 0, spec.stopMs);
  const withHours = (spec.stopMs ?? elapsed) >= HOUR;
  const shown = formatClock(elapsed, withHours);
  const still = {
    svg: `<text x="${num(spec.x)}" y="${num(spec.y)}" class="${className}" text-anchor="${spec.anchor}">${shown}</text>`,
    width: textWidth(shown, { size: fontSize }),
  };
  if (!spec.animated || (spec.stopMs !== null && elapsed >= spec.stopMs)) return still;

  const firstMinute = Math.floor(elapsed / MINUTE);
  // Stop a hair before the end: a discrete animation frozen exactly on a cycle boundary shows the cycle's
  // last value (59 s), not the next one.
  const stopSeconds = spec.stopMs === null ? null : Math.max(0, spec.stopMs / SECOND - 0.001);
  const lastMinute = stopSeconds === null ? firstMinute + OPEN_ENDED_MINUTES : Math.floor(stopSeconds / 60);
  if (lastMinute - firstMinute + 1 > MAX_MINUTE_STEPS) return still;

  const minutes: string[] = [];
  for (let m = firstMinute; m <= lastMinute; m++) minutes.push(formatMinutes(m, withHours));

  const digit = fontSize * DIGIT_WIDTH;
  const colon = fontSize * COLON_WIDTH;
  const prefixWidth = Math.max(...minutes.map((text) => text.length)) * digit;
  const width = prefixWidth + colon + 2 * digit;
  const left = spec.anchor === 'start' ? spec.x : spec.x - width;
  const line = fontSize * LINE;
  const top = spec.y - fontSize * BASELINE;
  const elapsedSeconds = elapsed / SECOND;

  /**
   * A strip whose place steps every `step` seconds through `values` (from the one shown now), repeating
   * (the seconds) or not (the minutes, whose strip ends where the clock does):
   * it starts on the value of now, so a renderer that does not animate shows the true time, and its
   * timeline begins at the start of the current step.
   */
  const strip = (
    x: number,
    w: number,
    anchor: 'middle' | 'end',
    values: string[],
    step: number,
    repeats = true,
  ): string => {
    const into = elapsedSeconds % step;
    const timing = [
      `begin="${num(-into, 3)}s"`,
      `dur="${values.length * step}s"`,
      !repeats
        ? ''
        : stopSeconds === null
          ? 'repeatCount="indefinite"'
          : `repeatDur="${num(Math.max(0, stopSeconds - elapsedSeconds + into), 3)}s"`,
    ]
      .filter((attribute) => attribute !== '')
      .join(' ');
    const tx = anchor === 'middle' ? w / 2 : w;
    const texts = values
      .map(
        (value, i) =>
          `<text x="${num(tx)}" y="${num(fontSize * BASELINE + i * line)}" text-anchor="${anchor}">${value}</text>`,
      )
      .join('');
    const steps = values.map((_, i) => `0 ${num(-i * line)}`).join(';');
    return (
      `<svg x="${num(x)}" y="${num(top)}" width="${num(w)}" height="${num(line)}" overflow="hidden">` +
      `<g class="${className}">${texts}` +
      `<animateTransform attributeName="transform" type="translate" calcMode="discrete" values="${steps}" ${timing} fill="freeze"/>` +
      '</g></svg>'
    );
  };

  /** The digits `0`…`count - 1` in turn, from `first`. */
  const cycle = (count: number, first: number): string[] =>
    Array.from({ length: count }, (_, i) => String((first + i) % count));
  const seconds = Math.floor(elapsedSeconds);
  const svg =
    '<g class="clock">' +
    strip(left, prefixWidth, 'end', minutes, 60, false) +
    `<text x="${num(left + prefixWidth + colon / 2)}" y="${num(spec.y)}" class="${className}" text-anchor="middle">:</text>` +
    strip(left + prefixWidth + colon, digit, 'middle', cycle(6, Math.floor((seconds % 60) / 10)), 10) +
    strip(left + prefixWidth + colon + digit, digit, 'middle', cycle(10, seconds % 10), 1) +
    '</g>';
  return { svg, width };
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
